"""Fields a photo or scan may have cut off: their box lies off the image, or the form's frame
runs along the image's edge on a page matched poorly (the cut taken for the frame's side).

Such a field's value may be cut short or away; where its format cannot tell (names, amounts, a
box read empty) it is put in doubt, and a check that holds with its value confirms it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import cv2
import numpy as np

from extractor.crops import STRICT_KINDS, Crop
from extractor.doubts import AT_EDGE, COVERED, OFF_IMAGE, flag
from extractor.fullpage import mapped
from extractor.registration import FLAT_SCORE, frame_outline
from extractor.result import FieldResult
from extractor.templates import FieldKind, Template

OFF_IMAGE_SHARE = 0.02
"""A field whose box (where its print lies: moved by the page's print offset) lies more than this
share off the image is in doubt: a photo or scan that cut the page there may have cut its value
short (a name read from its end, 技术有限责任公司 for 长沙云智信息技术有限责任公司, passed as
valid) or away (an optional field, its box read empty, passed as absent). A check that holds with
its value (a rule, the QR code, a second print, the party registry) confirms it."""
EDGE_SHARE = 0.01
"""A frame side this close to the image's edge (a share of the frame's longer side on the page)
runs along it, on a page matched under :data:`~extractor.registration.FLAT_SCORE`: the image
may have cut the form there, and the cut taken for the frame's side squeezes the form onto what
is left (a national form with the left 10% of its photo cut off matched at 0.87, its names read
without their first character, 腾毅通信技术有限公司 for 福腾毅通信技术有限公司, and passed). Whole
pages whose frame the photo cut matched at 0.978-0.997, correctly."""


def fields_cut_off(
    size: tuple[int, int],
    template: Template,
    homography: np.ndarray,
    down: float = 0.0,
    frame_score: float | None = None,
) -> dict[str, str]:
    """The fields an image of ``size`` (h, w) may have cut off, and why: each whose box lies
    off it (:func:`_off_image`), and, on a page its frame matched (``frame_score``; None: the
    labels aligned it) under :data:`~extractor.registration.FLAT_SCORE` along the image's edge
    (:data:`EDGE_SHARE`), every other."""
    why = {
        name: f"{OFF_IMAGE} {share:.0%} off the image: the page is cut off there"
        for name, share in _off_image(size, template, homography, down).items()
    }
    side = None
    if frame_score is not None and frame_score < FLAT_SCORE:
        side = _edge_along(size, template, homography)
    if side is not None:
        for spec in template.fields:
            why.setdefault(
                spec.name,
                f"{AT_EDGE} the image's {side} edge: the image may cut the form off there, "
                "and the form be misplaced",
            )
    return why


def _edge_along(size: tuple[int, int], template: Template, homography: np.ndarray) -> str | None:
    """The side of the image (left, top, right, bottom) along which the form's frame runs
    (:data:`EDGE_SHARE`), through ``homography``; None where it runs along none."""
    height, width = size
    frame = frame_outline(template, homography)
    near = EDGE_SHARE * float(np.ptp(frame, axis=0).max())
    gaps = {
        "left": frame[:, 0].min(),
        "top": frame[:, 1].min(),
        "right": width - 1 - frame[:, 0].max(),
        "bottom": height - 1 - frame[:, 1].max(),
    }
    side = min(gaps, key=lambda name: gaps[name])
    return side if gaps[side] <= near else None


def _off_image(
    size: tuple[int, int], template: Template, homography: np.ndarray, down: float
) -> dict[str, float]:
    """The fields whose box, moved ``down`` (reference px) where the page's data is printed,
    lies off an image of ``size`` (h, w) by more than :data:`OFF_IMAGE_SHARE` of its area
    (through ``homography``, reference px -> page px), and by how much."""
    height, width = size
    ppm = template.px_per_mm
    off: dict[str, float] = {}
    for spec in template.fields:
        x, w, h = spec.box.x * ppm, spec.box.w * ppm, spec.box.h * ppm
        y = spec.box.y * ppm + down
        corners = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]])
        quad = mapped(corners, homography).astype(np.float32)
        area = cv2.contourArea(quad)
        inside, _ = cv2.intersectConvexConvex(
            quad, np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float32)
        )
        share = 1.0 - inside / area if area > 0 else 0.0
        if share > OFF_IMAGE_SHARE:
            off[spec.name] = round(share, 3)
    return off


CUT_ACROSS = "and its print runs off it: characters may be cut across"
UNCHECKED_KINDS = frozenset({FieldKind.code, FieldKind.date})
"""Strict formats with no check character: a value read from print cut across may pass them."""


def doubt_cut_off(
    template: Template,
    cut_off: Mapping[str, str],
    fields: dict[str, FieldResult],
    checked: Collection[str] = (),
) -> None:
    """Fields the image may have cut off (:func:`fields_cut_off`: name -> why) put in doubt, in
    place: those read empty, and those whose format cannot tell a value cut short (names,
    amounts: a code, tax id or date that passes its checks stands, unless its print runs off
    the image (:func:`prints_cut_across`) and its reading is not among those ``checked`` (put
    in doubt so before, and confirmed since: a second print that reads alike), as does what
    the QR code states)."""
    for name, why in cut_off.items():
        field = fields.get(name)
        if field is None or field.source == "qr":
            continue
        strict = template.field(name).kind in STRICT_KINDS
        cut_across = why.endswith(CUT_ACROSS) and name not in checked
        if field.value and field.valid and strict and not cut_across:
            continue
        flag(field, why)


def prints_cut_across(
    cut_off: Mapping[str, str], crops: Sequence[Crop], size: tuple[int, int]
) -> dict[str, str]:
    """``cut_off`` (name -> why), where a code's or a date's print runs off the image of
    ``size`` (h, w) (:func:`print_runs_off`, its crop among ``crops``) saying so
    (:data:`CUT_ACROSS`): the edge cuts its characters across, and nothing checks a code's
    digits (a 数电票 number's 7s, their tops cut off by a scan's edge, read as 1s: twenty digits
    that passed). Whoever reads that print reads it cut. A tax id's check character tells."""
    out = dict(cut_off)
    for crop in crops:
        name, kind = crop.spec.name, crop.spec.kind
        if name in cut_off and kind in UNCHECKED_KINDS and print_runs_off(crop, size):
            out[name] = f"{cut_off[name]}, {CUT_ACROSS}"
    return out


EDGE_BAND_PX = 2
"""How near the image's edge (crop px) ink counts as running off it."""
CHARACTER_SHARE = 1 / 3
"""About a digit's width as a share of its crop's height (the line fills half of it): ink at
the edge along that much of it is print cut across; less, a nick off one character's corner
(a photo's corner through a code's first 0, read right)."""
MIN_CONTRAST = 48
"""A crop whose darkest and lightest grey differ less holds no print to find."""


def print_runs_off(crop: Crop, size: tuple[int, int]) -> bool:
    """Whether the print in ``crop`` runs off an image of ``size`` (h, w): its ink (darker than
    the crop's Otsu threshold) reaches within :data:`EDGE_BAND_PX` of where the crop leaves the
    image (cut out white there: :func:`~extractor.crops.cut_out`), along a character's width
    or more (:data:`CHARACTER_SHARE`)."""
    image = crop.image if crop.image.ndim == 2 else cv2.cvtColor(crop.image, cv2.COLOR_BGR2GRAY)
    h, w = image.shape
    height, width = size
    corners = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    to_page = cv2.getPerspectiveTransform(corners, crop.quad.astype(np.float32))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    points = cv2.perspectiveTransform(np.stack([xx + 0.5, yy + 0.5], -1).reshape(1, -1, 2), to_page)
    x, y = points.reshape(h, w, 2).transpose(2, 0, 1)
    outside = (x < 0) | (y < 0) | (x > width) | (y > height)
    if not outside.any() or outside.all():
        return False
    low, high = np.percentile(image[~outside], (2, 98))
    if high - low < MIN_CONTRAST:
        return False
    _, ink = cv2.threshold(image, 0, 1, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)
    side = 2 * EDGE_BAND_PX + 1
    near = cv2.dilate(outside.astype(np.uint8), np.ones((side, side), np.uint8)).astype(bool)
    at_edge = ink.astype(bool) & near & ~outside
    along = max(np.count_nonzero(at_edge.any(axis=0)), np.count_nonzero(at_edge.any(axis=1)))
    return bool(along >= CHARACTER_SHARE * h)


def maybe_cut_off(field: FieldResult) -> bool:
    return any(error.startswith((OFF_IMAGE, AT_EDGE, COVERED)) for error in field.errors)
