"""``roi template preview``: a picture of what a template reads.

Without a scan: the reference image with every field's box and name. With a scan: the scan
warped into reference coordinates (the inverse of the registration homography) with each box
coloured by its reading: green valid, orange low confidence, red invalid; the value read is
written beside the name. ``side_by_side``: the scan as it came, boxes projected onto it, next
to the aligned page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from extractor.loading import DEFAULT_DPI, iter_pages, read_source
from extractor.result import FieldResult, PageResult, Timings
from extractor.templates import Template

# BGR
NEUTRAL = (208, 96, 0)  # no reading: blue
VALID = (0, 160, 0)
LOW = (0, 140, 255)  # orange: low confidence
INVALID = (0, 0, 230)
LINE_PX = 3
_LOW_MARKERS = ("low recognition confidence", "uncertain character")


def field_colour(result: FieldResult | None) -> tuple[int, int, int]:
    """The colour a field's box is drawn in."""
    if result is None:
        return NEUTRAL
    if result.valid:
        return VALID
    if any(e.startswith(_LOW_MARKERS) for e in result.errors):
        return LOW
    return INVALID


def box_px(template: Template, name: str) -> tuple[int, int, int, int]:
    """A field's box in reference pixels: (x0, y0, x1, y1), as drawn."""
    ppm = template.px_per_mm
    b = template.field(name).box
    return (
        round(b.x * ppm),
        round(b.y * ppm),
        round((b.x + b.w) * ppm),
        round((b.y + b.h) * ppm),
    )


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        from extractor.synth.fonts import font

        return font("microhei", size)
    except Exception:  # no CJK font: names still draw, Chinese values as boxes
        return ImageFont.load_default(size)


def reference_canvas(template: Template) -> np.ndarray:
    """The reference image at the template's pixel size (white when it has none)."""
    w, h = template.reference_size_px
    path = template.reference_image_path
    image = cv2.imread(str(path)) if path is not None and path.is_file() else None
    if image is None:
        return np.full((h, w, 3), 255, np.uint8)
    if image.shape[1] != w or image.shape[0] != h:
        image = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
    return image


def _tag_text(name: str, result: FieldResult | None) -> str:
    if result is None:
        return name
    shown = result.value if result.value is not None else result.raw
    text = f"{name}: {shown or '(empty)'}"
    if not result.valid and result.errors:
        text += f"  [{result.errors[0]}]"
    return text


def draw_boxes(
    image: np.ndarray,
    template: Template,
    fields: dict[str, FieldResult] | None = None,
    homography: np.ndarray | None = None,
) -> np.ndarray:
    """Every field's box on ``image`` (reference px; or page px through ``homography``, which
    maps reference px to page px), with its name and reading on a tag above it."""
    out = image.copy() if image.ndim == 3 else cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    scale = 1.0
    if homography is not None:
        unit = cv2.perspectiveTransform(np.array([[[0, 0], [100, 0]]], np.float64), homography)[0]
        scale = float(np.linalg.norm(unit[1] - unit[0])) / 100
    size = max(11, round(template.px_per_mm * 2.2 * scale))
    font = _font(size)
    shapes = []
    for spec in template.fields:
        result = (fields or {}).get(spec.name)
        colour = field_colour(result)
        x0, y0, x1, y1 = box_px(template, spec.name)
        corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64)
        if homography is not None:
            corners = cv2.perspectiveTransform(corners.reshape(1, 4, 2), homography)[0]
        shapes.append((spec.name, result, colour, corners))
    # tags first, so that no tag hides a box outline
    pil = Image.fromarray(cv2.cvtColor(out, cv2.COLOR_BGR2RGB))
    draw = ImageDraw.Draw(pil)
    for name, result, colour, corners in shapes:
        text = _tag_text(name, result)
        left, top = float(corners[:, 0].min()), float(corners[:, 1].min())
        tx0, ty0, tx1, ty1 = draw.textbbox((0, 0), text, font=font)
        tw, th = tx1 - tx0 + 6, ty1 - ty0 + 4
        y = top - th - LINE_PX if top - th - LINE_PX >= 0 else float(corners[:, 1].max()) + LINE_PX
        rgb = (colour[2], colour[1], colour[0])
        draw.rectangle((left, y, left + tw, y + th), fill=rgb)
        draw.text((left + 3 - tx0, y + 2 - ty0), text, font=font, fill=(255, 255, 255))
    out = cv2.cvtColor(np.asarray(pil), cv2.COLOR_RGB2BGR)
    for _, _, colour, corners in shapes:
        if homography is None:
            (x0, y0), (x1, y1) = corners[0], corners[2]
            cv2.rectangle(out, (int(x0), int(y0)), (int(x1), int(y1)), colour, LINE_PX)
        else:
            cv2.polylines(out, [np.round(corners).astype(np.int32)], True, colour, LINE_PX)
    return out


def _caption(image: np.ndarray, text: str) -> np.ndarray:
    bar = np.full((44, image.shape[1], 3), 255, np.uint8)
    pil = Image.fromarray(bar)
    ImageDraw.Draw(pil).text((8, 8), text, font=_font(24), fill=(0, 0, 0))
    return np.vstack([np.asarray(pil), image])


@dataclass(slots=True)
class Preview:
    image: np.ndarray
    page: PageResult | None = None
    """The reading of the scan (None without one)."""
    aligned: bool = False
    """Whether the scan registered (the picture shows it warped into reference coordinates)."""


def preview(
    template: Template,
    scan: str | Path | bytes | None = None,
    *,
    side_by_side: bool = False,
    extractor: object | None = None,
    fallback: str = "never",
    dpi: int = DEFAULT_DPI,
) -> Preview:
    """The preview picture of ``template``, on ``scan`` (first page) when one is given."""
    if scan is None:
        return Preview(draw_boxes(reference_canvas(template), template))
    from extractor.pipeline import Extractor

    # every box read, those of the fields the QR code states too: the preview is of the boxes
    ex = (
        extractor
        if isinstance(extractor, Extractor)
        else Extractor(fallback="never", check_print=True)
    )
    data, _ = read_source(scan)
    page = next(iter_pages(data, dpi=dpi, pages={0}))
    prepared = ex.prepare(page, template, Timings(), fallback=fallback)  # type: ignore[arg-type]
    if isinstance(prepared, PageResult):
        result, homography = prepared, None
    else:
        (reads,) = ex.recognize([prepared])
        result = ex.finish(prepared, reads)
        homography = prepared.alignment.homography if prepared.alignment.matched else None
    w, h = template.reference_size_px
    if homography is None:
        aligned = draw_boxes(reference_canvas(template), template, result.fields)
        aligned = _caption(aligned, f"NOT REGISTERED: {result.message or 'no alignment'}")
    else:
        warped = cv2.warpPerspective(
            page.image,
            np.linalg.inv(homography),
            (w, h),
            flags=cv2.INTER_LINEAR,
            borderValue=(255, 255, 255),
        )
        aligned = draw_boxes(warped, template, result.fields)
    if not side_by_side:
        return Preview(aligned, result, homography is not None)
    before = draw_boxes(page.image, template, result.fields, homography)
    if homography is None:
        before = page.image.copy()
    before = _caption(
        before, "scan as it came" + (" (boxes projected)" if homography is not None else "")
    )
    if homography is not None:
        aligned = _caption(aligned, f"aligned to {template.name} (match {result.match_score:.2f})")
    height = max(before.shape[0], aligned.shape[0])

    def fit(img: np.ndarray) -> np.ndarray:
        s = height / img.shape[0]
        return cv2.resize(img, (round(img.shape[1] * s), height), interpolation=cv2.INTER_AREA)

    gap = np.full((height, 24, 3), 255, np.uint8)
    return Preview(np.hstack([fit(before), gap, fit(aligned)]), result, homography is not None)
