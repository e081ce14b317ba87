"""Scan and photo degradations, each with a strength drawn from the document's seed.

Order: stains on the paper -> geometry (rotation, scale, translation, cropped margins or
perspective, onto a scanner lid or a desk) -> uneven lighting -> blur -> noise or binarisation
(fax) -> 90/180-degree turn -> JPEG. Everything applied is recorded with its parameters, plus
``page_to_image``: the 3x3 homography from page millimetres (origin at the page's top-left
corner, y down) to pixel coordinates of the output image (pixel centres at integers, as in
OpenCV).

Levels:

* ``clean``: no degradation except JPEG at quality 85.
* ``light``: rotation within +-2 deg, scale 0.98-1.02, shift +-2 mm, up to 3 mm of margin
  cropped (never into the form), mild blur/noise/gradient, JPEG 70-86.
* ``medium``: rotation within +-5 deg, scale 0.93-1.07, shift +-4 mm, up to 6 mm cropped (never
  into the form), stains, stronger blur/noise/lighting, 1 in 4 binarised like a fax, JPEG 58-80.
* ``heavy``: meant to defeat template registration: a phone photo on a desk (rotation 10-30 deg,
  strong perspective, other scale, margins cut off) or a crooked scan (rotation 10-25 deg, scale
  0.6-1.25, corners cut), half of them also turned by 90/180/270 deg, heavy blur/noise, JPEG 45-75.
* ``geometry``: the heavy level's misregistration alone: every geometric draw of ``heavy`` for the
  same seed (photo or crooked scan, perspective, scale, cut margins, turns, fax), with the medium
  level's blur, noise and JPEG quality and no motion blur. It tells what registration and the
  fallback achieve apart from how legible the heavy level's text still is.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import cv2
import numpy as np

from extractor.synth.layout import PAGE_H, PAGE_W
from extractor.synth.raster import px_per_mm
from extractor.synth.render import RenderedPage

LEVELS = ("clean", "light", "medium", "heavy", "geometry")
# A level drawn as another one (same seeds, same geometry) with a milder image: (draws, quality).
MIXED_LEVELS = {"geometry": ("heavy", "medium")}

# The part of an invoice page that light/medium scans always keep (mm): the form and its top
# band. Other pages keep all but a 10 mm margin.
KEEP_BOX = (12.0, 3.0, 229.0, 128.5)


CLEAN_JPEG_QUALITY = 85
JPEG_QUALITY = {"light": (70, 86), "medium": (58, 80), "heavy": (45, 75)}
MIN_PHOTO_PX_PER_MM = 4.3  # a phone photo resolves the page at >= ~110 dpi
NOISE_SIGMA = {"light": (0.8, 2.0), "medium": (1.5, 4.0), "heavy": (3.0, 7.0)}
BLUR_SIGMA = {"light": (0.0, 0.6), "medium": (0.5, 1.2), "heavy": (0.8, 2.0)}  # Gaussian, px
MOTION_BLUR_PX = {"heavy": (2.0, 5.0), "medium": (0.0, 0.0)}  # 2 in 5 phone photos; 0 px: none


@dataclass
class Scan:
    image: np.ndarray  # BGR uint8, decoded from ``jpeg``
    jpeg: bytes  # the scan as a JPEG file (the last degradation)
    params: dict[str, object]
    page_to_image: np.ndarray  # 3x3, page mm -> output px


def _r(x: float, nd: int = 3) -> float:
    return round(float(x), nd)


def _centre_convention(ppm: float) -> np.ndarray:
    """mm -> pixel coordinates (pixel centres at integers) at ``ppm`` pixels per mm."""
    return np.array([[ppm, 0, -0.5], [0, ppm, -0.5], [0, 0, 1]], np.float64)


def _apply(h: np.ndarray, pts: np.ndarray) -> np.ndarray:
    p = np.column_stack([pts, np.ones(len(pts))]) @ h.T
    return p[:, :2] / p[:, 2:3]


# -- paper ---------------------------------------------------------------------------------------


def add_stains(
    page: np.ndarray, ppm: float, rng: random.Random, nrng: np.random.Generator, count: int
) -> list[dict[str, object]]:
    """Coffee rings and blotches, laid on the paper in place (float32 BGR in [0, 1])."""
    h, w = page.shape[:2]
    out = []
    for _ in range(count):
        kind = rng.choice(("ring", "ring", "blot"))
        cx, cy = rng.uniform(10, w / ppm - 10), rng.uniform(10, h / ppm - 10)
        r = rng.uniform(8, 22)
        alpha = rng.uniform(0.12, 0.3)
        colour = (
            np.array(
                [rng.uniform(70, 110), rng.uniform(120, 150), rng.uniform(170, 200)], np.float32
            )
            / 255
        )
        pad = r * 1.25
        x0, x1 = max(0, int((cx - pad) * ppm)), min(w, int((cx + pad) * ppm))
        y0, y1 = max(0, int((cy - pad) * ppm)), min(h, int((cy + pad) * ppm))
        if x1 <= x0 or y1 <= y0:
            continue
        yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float32)
        dx, dy = xx / ppm - cx, yy / ppm - cy
        theta = np.arctan2(dy, dx)
        phases = [rng.uniform(0, 2 * math.pi) for _ in range(3)]
        wobble = (
            1
            + 0.05 * np.sin(3 * theta + phases[0])
            + 0.03 * np.sin(5 * theta + phases[1])
            + 0.02 * np.sin(9 * theta + phases[2])
        )
        rho = np.hypot(dx, dy) / (r * wobble)
        if kind == "ring":
            width = rng.uniform(0.03, 0.07)
            a = (
                np.exp(-(((rho - 1) / width) ** 2))
                + 0.25 * (rho < 1) * np.clip(1 - rho, 0, 1) ** 0.3
            )
            gap_start = rng.uniform(-math.pi, math.pi)
            a *= np.where(
                np.abs(np.angle(np.exp(1j * (theta - gap_start)))) < rng.uniform(0, 1.2), 0.25, 1.0
            )
        else:
            a = np.clip(1.2 - rho, 0, 1) ** 0.7
        a = (a * alpha).astype(np.float32)
        region = page[y0:y1, x0:x1]
        region *= 1 - a[..., None] * (1 - colour)
        out.append(
            {
                "kind": kind,
                "centre_mm": [_r(cx, 1), _r(cy, 1)],
                "radius_mm": _r(r, 1),
                "alpha": _r(alpha),
            }
        )
    return out


def fold_corner(image: np.ndarray, corner: str, leg_px: float, lid: int = 235) -> np.ndarray:
    """``image`` (BGR) scanned with one ``corner`` of its paper (``tl``, ``tr``, ``bl`` or
    ``br``) folded over: the fold meets both edges ``leg_px`` from the corner, the folded
    flap's back (the paper's colour in the shade of the fold) lies on the page beside the
    fold, and the scanner's lid (grey ``lid``) shows where the corner was."""
    h, w = image.shape[:2]
    cx, cy = {"tl": (0, 0), "tr": (w - 1, 0), "bl": (0, h - 1), "br": (w - 1, h - 1)}[corner]
    sx, sy = (1 if cx == 0 else -1), (1 if cy == 0 else -1)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    across = (xx - cx) * sx + (yy - cy) * sy  # along the corner's diagonal: the fold at leg_px
    # the flap: points beside the fold whose mirror image across it lies on the page
    mirror_x = (xx - cx) * sx - (across - leg_px)
    mirror_y = (yy - cy) * sy - (across - leg_px)
    flap = (across >= leg_px) & (across <= 2 * leg_px) & (mirror_x >= 0) & (mirror_y >= 0)
    out = image.copy()
    out[flap] = (np.median(image.reshape(-1, 3), axis=0) * 0.93).astype(np.uint8)
    out[across < leg_px] = lid
    crease = np.abs(across - leg_px) < 1.5
    out[crease] = (out[crease] * 0.6).astype(np.uint8)
    return out


def flash_hotspot(
    image: np.ndarray, centre: tuple[float, float], radii: tuple[float, float], strength: float
) -> np.ndarray:
    """``image`` (BGR or grey) photographed with a flash: under its soft elliptical hotspot
    (``centre`` and ``radii`` in px) the paper goes white and the print fades towards it, by
    ``strength`` (0-1) at the centre, less with a Gaussian fall-off around it."""
    h, w = image.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    spot = np.exp(-(((xx - centre[0]) / radii[0]) ** 2 + ((yy - centre[1]) / radii[1]) ** 2))
    lit = image.astype(np.float32)
    lit += (255 - lit) * (strength * spot).reshape(h, w, *([1] if image.ndim == 3 else []))
    return lit.clip(0, 255).astype(np.uint8)


def flash_over_start(
    image: np.ndarray,
    page_to_image: np.ndarray,
    box_mm: list[float],
    reach_mm: float,
    strength: float = 0.9,
) -> np.ndarray:
    """``image`` photographed with a flash whose small hotspot lies over the first ``reach_mm``
    of the print in ``box_mm`` (page mm ``[x, y, w, h]``, mapped by ``page_to_image``): the
    line's first characters whitened by ``strength`` at the centre (:func:`flash_hotspot`)."""
    x, y, _, h = box_mm
    middle = [[x + reach_mm / 2, y + h / 2], [x + reach_mm / 2 + 10, y + h / 2]]
    centre, ten_mm_on = cv2.perspectiveTransform(np.array([middle], np.float64), page_to_image)[0]
    px_per_mm = float(np.linalg.norm(ten_mm_on - centre)) / 10
    radii = (reach_mm * px_per_mm, 4 * px_per_mm)
    return flash_hotspot(image, (float(centre[0]), float(centre[1])), radii, strength)


def scanner_grey(image: np.ndarray) -> np.ndarray:
    """``image`` (BGR) as a scanner's grey mode gives it: grey, softened by half a pixel."""
    return cv2.GaussianBlur(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), (0, 0), 0.5)


def black_and_white(image: np.ndarray) -> np.ndarray:
    """``image`` (BGR) as a scanner's black-and-white (text) mode gives it: its
    :func:`scanner_grey` thresholded against the mean of 41 px around (~5 mm at 200 dpi), 12
    grey levels below it. The form's rules and labels and a red seal come out as black as the
    print."""
    return cv2.adaptiveThreshold(
        scanner_grey(image), 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY, 41, 12
    )


# -- backgrounds -------------------------------------------------------------------------------


def scanner_lid(h: int, w: int, rng: random.Random) -> tuple[np.ndarray, dict[str, object]]:
    grey = rng.uniform(0.86, 0.98)
    bg = np.full((h, w, 3), grey, np.float32)
    return bg, {"kind": "scanner_lid", "grey": _r(grey)}


def desk(
    h: int, w: int, rng: random.Random, nrng: np.random.Generator
) -> tuple[np.ndarray, dict[str, object]]:
    kind, base = rng.choice(
        (
            ("wood", (0.20, 0.32, 0.48)),
            ("grey", (0.33, 0.33, 0.35)),
            ("dark", (0.12, 0.12, 0.13)),
            ("blue_cloth", (0.42, 0.26, 0.16)),
        )
    )
    small = nrng.normal(0, 1, (max(2, h // 40), max(2, w // 8))).astype(np.float32)
    grain = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    grain = cv2.GaussianBlur(grain, (0, 0), 3) * (0.05 if kind == "wood" else 0.02)
    bg = np.empty((h, w, 3), np.float32)
    for c in range(3):
        bg[..., c] = base[c] * (1 + grain)
    return np.clip(bg, 0, 1), {"kind": "desk_" + kind}


# -- geometry ---------------------------------------------------------------------------------


def _similarity_mm(
    page_w: float, page_h: float, angle: float, scale: float, tx: float, ty: float
) -> np.ndarray:
    """Rotate (counter-clockwise on screen) and scale about the page centre, then shift (mm)."""
    cx, cy = page_w / 2, page_h / 2
    a = math.radians(angle)
    c, s = math.cos(a) * scale, math.sin(a) * scale
    # y points down: a counter-clockwise turn on screen is x' = c x + s y, y' = -s x + c y.
    rot = np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]], np.float64)
    t1 = np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1]], np.float64)
    t2 = np.array([[1, 0, cx + tx], [0, 1, cy + ty], [0, 0, 1]], np.float64)
    return t2 @ rot @ t1


def scan_geometry(
    page: RenderedPage, rng: random.Random, level: str
) -> tuple[np.ndarray, tuple[int, int], dict[str, object]]:
    """mm->mm transform, output size (px) and parameters for a flatbed scan."""
    ppm = px_per_mm(page.dpi)
    W, H = page.width_mm, page.height_mm
    if level == "light":
        angle, scale, shift, crop_max = rng.uniform(-2, 2), rng.uniform(0.98, 1.02), 2.0, 3.0
    elif level == "medium":
        angle, scale, shift, crop_max = rng.uniform(-5, 5), rng.uniform(0.93, 1.07), 4.0, 6.0
    else:  # heavy crooked scan
        angle = rng.choice((-1, 1)) * rng.uniform(10, 25)
        scale, shift, crop_max = rng.uniform(0.6, 1.25), 6.0, 10.0
    tx, ty = rng.uniform(-shift, shift), rng.uniform(-shift, shift)
    m = _similarity_mm(W, H, angle, scale, tx, ty)
    bed = level != "heavy" and rng.random() < 0.35
    if bed:  # the whole page on the scanner bed, with lid around it
        corners = _apply(m, np.array([[0, 0], [W, 0], [W, H], [0, H]], np.float64))
        margins = [rng.uniform(2, 12) for _ in range(4)]
        x0, y0 = corners[:, 0].min() - margins[0], corners[:, 1].min() - margins[1]
        x1, y1 = corners[:, 0].max() + margins[2], corners[:, 1].max() + margins[3]
        crop = {
            "left": -margins[0],
            "top": -margins[1],
            "right": -margins[2],
            "bottom": -margins[3],
        }
    else:
        crop = {
            side: (rng.uniform(0, crop_max) if rng.random() < 0.6 else 0.0)
            for side in ("left", "top", "right", "bottom")
        }
        if level == "heavy":
            corners = _apply(m, np.array([[0, 0], [W, 0], [W, H], [0, H]], np.float64))
            x0, y0 = corners[:, 0].min() + crop["left"], corners[:, 1].min() + crop["top"]
            x1, y1 = corners[:, 0].max() - crop["right"], corners[:, 1].max() - crop["bottom"]
        else:
            crop["top"] = min(crop["top"], 2.5)
            x0, y0, x1, y1 = crop["left"], crop["top"], W - crop["right"], H - crop["bottom"]
            keep = KEEP_BOX if (W, H) == (PAGE_W, PAGE_H) else (10.0, 10.0, W - 10.0, H - 10.0)
            kc = _apply(
                m,
                np.array(
                    [
                        [keep[0], keep[1]],
                        [keep[2], keep[1]],
                        [keep[2], keep[3]],
                        [keep[0], keep[3]],
                    ],
                    np.float64,
                ),
            )
            # never crop into the form: widen the canvas where the kept part would fall outside
            x0, y0 = min(x0, kc[:, 0].min() - 1), min(y0, kc[:, 1].min() - 1)
            x1, y1 = max(x1, kc[:, 0].max() + 1), max(y1, kc[:, 1].max() + 1)
            crop = {"left": x0, "top": y0, "right": W - x1, "bottom": H - y1}
    shift_to_canvas = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], np.float64)
    size = (round((x1 - x0) * ppm), round((y1 - y0) * ppm))
    params = {
        "kind": "flatbed_scan" if level != "heavy" else "crooked_scan",
        "rotate_deg_ccw": _r(angle, 3),
        "scale": _r(scale, 4),
        "translate_mm": [_r(tx, 2), _r(ty, 2)],
        "crop_mm": {k: _r(v, 2) for k, v in crop.items()},
        "whole_page_on_bed": bed,
    }
    return shift_to_canvas @ m, size, params


def photo_geometry(
    page: RenderedPage, rng: random.Random
) -> tuple[np.ndarray, tuple[int, int], dict[str, object]]:
    """mm -> canvas-mm homography and output size for a phone photo of the page on a desk."""
    ppm = px_per_mm(page.dpi)
    W, H = page.width_mm, page.height_mm
    out_scale = rng.uniform(0.55, 1.15)  # output px per page px at the page centre, roughly
    aspect = rng.choice((4 / 3, 16 / 9, 3 / 2))
    canvas_w = W * rng.uniform(1.05, 1.3)
    canvas_h = canvas_w / aspect
    angle = rng.choice((-1, 1)) * rng.uniform(10, 30)
    fill = rng.uniform(0.8, 1.0)
    scale = fill * min(canvas_w / W, canvas_h / (H * 1.25))
    out_scale = max(out_scale, MIN_PHOTO_PX_PER_MM / (ppm * scale))
    m = _similarity_mm(W, H, angle, scale, 0, 0)
    pts = _apply(m, np.array([[0, 0], [W, 0], [W, H], [0, H]], np.float64))
    pts += np.array([canvas_w / 2 - W / 2, canvas_h / 2 - H / 2])
    cut = rng.random() < 0.5
    if cut:  # push the page partly out of the frame
        direction = rng.uniform(0, 2 * math.pi)
        amount = rng.uniform(4, 14)
        pts += amount * np.array([math.cos(direction), math.sin(direction)])
    jitter = rng.uniform(0.04, 0.12) * W
    pts = pts + np.array(
        [[rng.uniform(-jitter, jitter), rng.uniform(-jitter, jitter) * 0.6] for _ in range(4)]
    )
    src = np.array([[0, 0], [W, 0], [W, H], [0, H]], np.float32)
    h = cv2.getPerspectiveTransform(src, pts.astype(np.float32)).astype(np.float64)
    ppm_out = ppm * out_scale
    size = (round(canvas_w * ppm_out), round(canvas_h * ppm_out))
    params = {
        "kind": "phone_photo",
        "rotate_deg_ccw": _r(angle, 3),
        "scale": _r(out_scale * scale, 4),
        "page_corners_mm_on_canvas": [[_r(x, 2), _r(y, 2)] for x, y in pts],
        "canvas_mm": [_r(canvas_w, 2), _r(canvas_h, 2)],
        "perspective_jitter_mm": _r(jitter, 2),
        "margin_cut_off": cut,
    }
    # output px = canvas mm * ppm * out_scale: express the target in "mm at the page's ppm"
    return np.diag([out_scale, out_scale, 1.0]) @ h, size, params


def warp_onto(
    page: RenderedPage,
    page_img: np.ndarray,
    h_mm: np.ndarray,
    size: tuple[int, int],
    background: np.ndarray,
    shadow: float,
) -> np.ndarray:
    """Warp the page (float BGR) by the mm->out-mm transform ``h_mm`` onto ``background``."""
    ppm = px_per_mm(page.dpi)
    to_px = _centre_convention(ppm)
    h_px = to_px @ h_mm @ np.linalg.inv(to_px)
    cover = (1.0 - page.holes).astype(np.float32)
    scale = math.sqrt(abs(np.linalg.det(h_mm[:2, :2])))
    src = page_img * cover[..., None]
    if scale < 0.85:  # anti-alias before shrinking
        sigma = 0.45 * (1 / scale - 1) * 2
        src = cv2.GaussianBlur(src, (0, 0), sigma)
        cover = cv2.GaussianBlur(cover, (0, 0), sigma)
    flags = cv2.INTER_LINEAR
    warped = cv2.warpPerspective(
        src, h_px, size, flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0)
    )
    wcov = cv2.warpPerspective(
        cover, h_px, size, flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=0
    )
    if shadow > 0:
        k = max(3.0, 2.5 * ppm)
        soft = cv2.GaussianBlur(wcov, (0, 0), k)
        soft = np.roll(soft, (round(k * 0.6), round(k * 0.4)), axis=(0, 1))
        background = background * (1 - shadow * soft[..., None])
    return warped + background * (1 - wcov[..., None])


# -- capture ----------------------------------------------------------------------------------


def lighting(img: np.ndarray, rng: random.Random, level: str, photo: bool) -> dict[str, object]:
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    params: dict[str, object] = {}
    strength = {"light": (0.02, 0.08), "medium": (0.05, 0.16), "heavy": (0.1, 0.3)}[level]
    direction = rng.uniform(0, 2 * math.pi)
    g = rng.uniform(*strength)
    ramp = (xx / w - 0.5) * math.cos(direction) + (yy / h - 0.5) * math.sin(direction)
    factor = 1 - g * (ramp - ramp.min()) / max(1e-6, float(ramp.max() - ramp.min()))
    params["gradient"] = {"direction_deg": _r(math.degrees(direction), 1), "strength": _r(g)}
    if photo or (level != "light" and rng.random() < 0.5):
        v = rng.uniform(0.15, 0.4) if photo else rng.uniform(0.05, 0.15)
        r2 = ((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (h / 2)) ** 2
        factor *= 1 - v * np.clip(r2 / 2, 0, 1)
        params["vignette"] = {"strength": _r(v)}
    img *= factor[..., None]
    if photo:
        cast = [rng.uniform(0.9, 1.0), rng.uniform(0.95, 1.02), rng.uniform(0.98, 1.06)]
        img *= np.asarray(cast, np.float32)
        params["colour_cast_bgr"] = [_r(c) for c in cast]
    return params


def motion_kernel(length: float, angle: float) -> np.ndarray:
    n = max(3, math.ceil(length) | 1)
    k = np.zeros((n, n), np.float32)
    c = n // 2
    dx, dy = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    for t in np.linspace(-length / 2, length / 2, 4 * n):
        k[round(c + t * dy), round(c + t * dx)] = 1
    return k / k.sum()


def turn_matrix(k: int, w: int, h: int) -> tuple[np.ndarray, int, int]:
    """Pixel map of ``np.rot90(image, k)`` (counter-clockwise quarter turns), new (w, h)."""
    m = np.eye(3)
    for _ in range(k % 4):
        m = np.array([[0, 1, 0], [-1, 0, w - 1], [0, 0, 1]], np.float64) @ m
        w, h = h, w
    return m, w, h


def jpeg_round_trip(img: np.ndarray, quality: int) -> tuple[bytes, np.ndarray]:
    """Encode (progressive, 4:2:0 chroma) and decode again."""
    ok, buf = cv2.imencode(
        ".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_PROGRESSIVE, 1]
    )
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return buf.tobytes(), cv2.imdecode(buf, cv2.IMREAD_COLOR)


def degrade(page: RenderedPage, level: str, rng: random.Random) -> Scan:
    """Scan (or photograph) ``page`` at degradation ``level``; see the module docstring."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r} (one of {', '.join(LEVELS)})")
    level, quality_level = MIXED_LEVELS.get(level, (level, level))
    nrng = np.random.default_rng(rng.getrandbits(64))
    ppm = px_per_mm(page.dpi)
    params: dict[str, object] = {}
    if level == "clean":
        quality = CLEAN_JPEG_QUALITY
        data, image = jpeg_round_trip(page.image, quality)
        params["jpeg"] = {"quality": quality}
        return Scan(image, data, params, _centre_convention(ppm))

    img = page.image.astype(np.float32) / 255
    stain_count = {
        "light": int(rng.random() < 0.1),
        "medium": rng.choice((0, 1, 1, 2)),
        "heavy": rng.choice((0, 1, 2)),
    }[level]
    if stain_count:
        params["stains"] = add_stains(img, ppm, rng, nrng, stain_count)

    photo = level == "heavy" and rng.random() < 0.6
    if photo:
        h_mm, size, geo = photo_geometry(page, rng)
        background, bg = desk(size[1], size[0], rng, nrng)
        shadow = rng.uniform(0.2, 0.5)
    else:
        h_mm, size, geo = scan_geometry(page, rng, level)
        background, bg = scanner_lid(size[1], size[0], rng)
        shadow = 0.0
    geo["background"] = bg
    img = warp_onto(page, img, h_mm, size, background, shadow)
    to_px = _centre_convention(ppm)
    page_to_image = to_px @ h_mm
    params["geometry"] = geo

    params["lighting"] = lighting(img, rng, level, photo)

    fax = (level == "medium" and rng.random() < 0.25) or (
        level == "heavy" and not photo and rng.random() < 0.3
    )
    blur_range = BLUR_SIGMA[quality_level]
    if fax:  # a fax machine scans sharp, then thresholds
        blur_range = (0.2, 0.6)
    if level != "light" or rng.random() < 0.6:
        sigma = rng.uniform(*blur_range)
        if sigma > 0.05:
            img = cv2.GaussianBlur(img, (0, 0), sigma)
        blur: dict[str, object] = {"sigma_px": _r(sigma)}
        if photo and rng.random() < 0.4:
            length, angle = rng.uniform(*MOTION_BLUR_PX[quality_level]), rng.uniform(0, 180)
            img = cv2.filter2D(img, -1, motion_kernel(length, angle))
            blur["motion"] = {"length_px": _r(length, 2), "angle_deg": _r(angle, 1)}
        params["blur"] = blur

    if fax:
        gray = cv2.cvtColor(np.clip(img * 255, 0, 255).astype(np.uint8), cv2.COLOR_BGR2GRAY)
        block = 2 * round(2.5 * ppm) + 1  # about 5 mm
        c = rng.uniform(8, 20)  # lower: thinner strokes, cleaner paper
        bw = cv2.adaptiveThreshold(
            gray, 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY, block, c
        )
        speckle = rng.uniform(0.0001, 0.0004)
        flips = nrng.random(bw.shape) < speckle
        bw[flips] = 255 - bw[flips]
        image = cv2.cvtColor(bw, cv2.COLOR_GRAY2BGR)
        params["binarize"] = {
            "method": "adaptive_gaussian",
            "block_px": block,
            "c": _r(c, 2),
            "speckle": _r(speckle, 5),
        }
    else:
        sigma_n = rng.uniform(*NOISE_SIGMA[quality_level])
        noise = nrng.normal(0, sigma_n / 255, img.shape[:2]).astype(np.float32)
        img += noise[..., None]
        image = np.clip(np.rint(img * 255), 0, 255).astype(np.uint8)
        params["noise"] = {"sigma": _r(sigma_n, 2)}

    if level == "heavy" and rng.random() < 0.5:
        k = rng.choice((1, 2, 3))
        m, _, _ = turn_matrix(k, image.shape[1], image.shape[0])
        image = np.ascontiguousarray(np.rot90(image, k))
        page_to_image = m @ page_to_image
        params["turn"] = {"deg_ccw": 90 * k}

    quality = rng.randint(*JPEG_QUALITY[quality_level])
    data, image = jpeg_round_trip(image, quality)
    params["jpeg"] = {"quality": quality}
    return Scan(image, data, params, page_to_image / page_to_image[2, 2])
