"""Registration: align a page to its template's reference image.

Method ``frame``: the ruled table of a form is the largest connected piece of ink on the page.
Its outline (a quadrilateral, whatever the scale, rotation or perspective) gives a first
homography, tried in all four 90-degree turns; the turn whose ruled lines best overlay the
reference's wins (the search stops at the first sure one), and ECC on the line maps refines it
to sub-pixel. When no outline is sure, the best one's sides are refitted to the frame's outer
edge, so that ink touching the frame from outside (a faded seal) does not bend it. The match
score is the F1 of the reference's ruling found on the page and the page's ruling found on the
reference, with half a millimetre of tolerance, so it lies in [0, 1] and means the same on every
template. A page that scores low may not lie flat (curled, folded): what the homography leaves is
measured on the form's rules and taken out (:mod:`extractor.bend`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import combinations
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np

from extractor.bend import Bend, find_bend, rules_of
from extractor.boxes import Box, smaller_share
from extractor.errors import TemplateError
from extractor.templates import Template

PAGE_WORK_SIDE = 1200  # long side, in px, of the downscaled page the frame is searched on
MIN_FRAME_FRACTION = 0.08  # a frame covers at least this share of the page's bounding area
CANDIDATES = 3
BESIDE_FRACTION = 0.5
"""A piece of ink outside the frame matched whose bounding box is at least this share of the
frame's may be another form (two invoices photographed or scanned together)."""
MAX_FORMS = 4
"""The most forms read on one page (four invoices photographed together)."""
BESIDE_MARGIN_MM = 5.0
"""How far round a form found its outline is painted over before another is looked for: the
form's margin, the print outside its frame."""
OVERLAP_SHARE = 0.25
"""A form found after one was painted over whose page overlaps that one's by more than this
share of the smaller is no form beside it but what surrounds it: the A4 sheet a 数电票 was
printed on, photographed on a dark desk, matched 0.58 by the sheet's outline."""
SURE_OUTLINE = 0.9  # an outline whose ruling overlays the reference this well ends the search
ZOOM_SHARE = 0.7
"""A candidate piece whose long side is under this share of the working page's is searched
again cut out of the full page (:func:`_small_pieces`) where no outline is sure."""
ZOOM_MARGIN = 0.1
"""Of a piece's size, the page kept round it when it is cut out: the form's print outside its
frame, and a frame the piece holds only part of."""
SEAL_MIN_VALUE = 60
"""HSV value (0-255) a seal's ink stays above: of the seal pixels found on the 168 fixture and
fresh pages' working copies, 1.5% lie below 80; black print taken for red lies below 50."""
FLAT_SCORE = 0.95
"""A page whose ruling overlays the reference this well lies flat (the fixtures' scans and
photos score 0.976-0.995): no bend is looked for (:mod:`extractor.bend`). A page bent by a
millimetre over much of the form scores less (0.96 where the homography leaves 1.1 mm)."""
BENT_SCORE = 0.85
"""A page with its bend taken out must match at least this well for the bend to be kept: a bend
lets the page's rules move by millimetres, and another ruled form gains by it too (the e-invoice
template's frame against the 22 light and medium paper fixtures: 0.58-0.61, bent 0.69-0.74),
where a curled or folded page that does match gains to 0.88-0.99."""
SLANT_MM = 0.25
"""How far a bent page's ink is thickened across a rule's direction for the bend search
(:func:`ink_ruling`, ``slanted``): a pixel each side at the working scale, which keeps a 1 px
rule tilted by 6% in 6 mm runs. On the 22 light and medium pages folded down the middle with
halves tilted by 5%, the rules left of the fold were missing from the plain ruling."""
ECC_SCALE = 0.25
"""Of the working scale, where ECC runs (on the blurred ruling maps). ECC's result is taken on
only ~1 page in 4 (when it scores higher than the outline), and against the fixtures' true
maps (52 pages, clean to geometry) a quarter gives the same error as a half (median 2.56 px,
p90 3.39, max 4.88) for 59 instead of 87 ms of one core per page of registration (AVX2 CPU;
each ECC iteration costs ~9 ms at half scale)."""
ECC_STOP = (20, 1e-4)
"""ECC's iteration limit and convergence epsilon. Against the fixtures' true page-to-image maps
(44 pages, clean to heavy) (60, 1e-5) and (20, 1e-4) give the same error to 0.01 px, median 2.50
px, max 4.47 (so does (5, 1e-3): the outline is already close); ECC costs 11.9 instead of 16.8
ms of one core per page."""


@dataclass(frozen=True, slots=True)
class Alignment:
    """How a page maps onto its template."""

    matched: bool
    score: float
    homography: np.ndarray | None
    """3x3, maps reference pixels (at the template's dpi) to page pixels."""
    rotation_deg: float = 0.0
    """Angle of the form's top edge on the page, counter-clockwise, in degrees."""
    reason: str | None = None
    bend: Bend | None = None
    """What the homography leaves of a page that does not lie flat (reference px), or None."""
    on_form: np.ndarray | None = None
    """The page's ink (:func:`binarize`) warped onto the reference (its working px), the bend
    taken out."""
    beside: bool = False
    """Whether the page holds another piece of ruled ink the size of the frame matched, outside
    it (a second form on the page?  :func:`forms_beside` looks)."""
    refitted: Alignment | None = None
    """On a page that did not match: the match found by refitting every candidate piece's
    outline to its outer edge (:func:`_refitted`), where that matches. Less sure than a match
    (names read through its crops on blurred photos flipped where the page's printed labels
    read them right), it is for a page its labels do not align."""


class Reference:
    """A template's reference image prepared for registration (built once per template)."""

    def __init__(self, template: Template) -> None:
        path = template.reference_image_path
        if path is None or not path.is_file():
            raise TemplateError(
                f"template {template.name!r} has no reference image"
                + (f" ({path} is missing)" if path else "")
                + "; run `roi synth --reference` or set reference_image"
            )
        image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise TemplateError(f"template {template.name!r}: cannot read reference image {path}")
        full_w, full_h = template.reference_size_px
        self.template = template
        self.work_w = template.registration.work_width
        self.scale = self.work_w / full_w  # reference px -> work px
        self.work_h = round(full_h * self.scale)
        gray = cv2.resize(image, (self.work_w, self.work_h), interpolation=cv2.INTER_AREA)
        self.lines = ruling(gray, self.px_per_mm)
        self.ink = binarize(gray)
        found = frame_candidates(self.ink, 1)
        if not found:
            raise TemplateError(f"template {template.name!r}: no ruled frame found in {path}")
        self.frame = found[0].quad
        self.frame_mask = np.zeros_like(self.lines)
        cv2.fillConvexPoly(self.frame_mask, self.frame.astype(np.int32), 255)
        lines_blur = cv2.GaussianBlur(self.lines.astype(np.float32) / 255, (0, 0), 1.5)
        self.ecc_size = (round(self.work_w * ECC_SCALE), round(self.work_h * ECC_SCALE))
        self.lines_blur_ecc = cv2.resize(lines_blur, self.ecc_size, interpolation=cv2.INTER_AREA)
        tol = _tolerance_kernel(self.px_per_mm)
        self.lines_tol = cv2.dilate(self.lines, tol)
        self.rules = (
            rules_of(self.lines, self.px_per_mm, False),
            rules_of(self.lines, self.px_per_mm, True),
        )

    @property
    def px_per_mm(self) -> float:
        return self.work_w / self.template.page.width_mm

    @cached_property
    def labels(self) -> np.ndarray:
        """Where the form prints its own text (labels, titles) outside every field's boxes, at
        reference px, widened by the registration tolerance: a piece of ink lying there on a
        page is the form's, not data (:func:`extractor.crops.separate_ink`). Ruled lines and
        seals are left out: the crops handle rules themselves, and a print's decimal point may
        sit on one."""
        template = self.template
        image = cv2.imread(str(template.reference_image_path), cv2.IMREAD_COLOR)
        size = template.reference_size_px
        if (image.shape[1], image.shape[0]) != size:
            image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        gray = to_gray(image)
        ppm = template.px_per_mm
        ink = binarize(gray)
        ink[(ruling(gray, ppm) > 0) | seal_mask(image)] = 0
        boxes = [spec.box for spec in template.fields]
        boxes += [spec.printed_again for spec in template.fields if spec.printed_again]
        for box in boxes:  # a sample's data, where the reference is one
            x0, y0 = max(0, round(box.x * ppm)), max(0, round(box.y * ppm))
            ink[y0 : round((box.y + box.h) * ppm), x0 : round((box.x + box.w) * ppm)] = 0
        return cv2.dilate(ink, _tolerance_kernel(ppm)) > 0

    @cached_property
    def paper(self) -> np.ndarray:
        """Where the form prints none of its own ink, at work px (255; 0 on its rules and its
        labels, :attr:`labels`, with the registration tolerance around them)."""
        size = (self.work_w, self.work_h)
        labels = cv2.resize(self.labels.astype(np.uint8), size, interpolation=cv2.INTER_AREA)
        return np.where((labels > 0) | (self.lines_tol > 0), 0, 255).astype(np.uint8)

    @cached_property
    def form_print(self) -> tuple[np.ndarray, np.ndarray]:
        """Where the form prints its labels and rules (:attr:`paper`'s 0), and its own ink
        there, at work px."""
        form = self.paper == 0
        return form, form & (self.ink > 0)


_REFERENCES: dict[tuple[str, Path | None, int], Reference] = {}


def reference_for(template: Template) -> Reference:
    """The process's :class:`Reference` of ``template`` (rebuilt when its image changes)."""
    path = template.reference_image_path
    mtime = path.stat().st_mtime_ns if path is not None and path.is_file() else 0
    key = (template.name, path, mtime)
    if key not in _REFERENCES:
        _REFERENCES[key] = Reference(template)
    return _REFERENCES[key]


# -- image primitives -------------------------------------------------------------------------


def to_gray(image: np.ndarray) -> np.ndarray:
    return image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)


def binarize(gray: np.ndarray) -> np.ndarray:
    """Ink (255) on paper (0), robust to uneven lighting."""
    block = max(15, (min(gray.shape[:2]) // 30) | 1)
    return cv2.adaptiveThreshold(
        gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, block, 12
    )


def seal_mask(image: np.ndarray) -> np.ndarray:
    """Pixels of red seal ink (crimson, hue around 0/180) as opposed to brown form ink, and to
    black print, whose hue is noise (a JPEG's colour bleeding into it, a warm light's cast over
    a black-and-white scan): no seal is darker than :data:`SEAL_MIN_VALUE`."""
    hsv = cv2.cvtColor(image, cv2.COLOR_BGR2HSV)
    # saturation over 80, hue over 160 or under 4 (of 0-179), value over SEAL_MIN_VALUE
    low, high = (0, 81, SEAL_MIN_VALUE + 1), (255, 255, 255)
    seal = cv2.inRange(hsv, (161, *low[1:]), high) | cv2.inRange(hsv, low, (3, *high[1:]))
    return seal > 0


def ruling(gray: np.ndarray, px_per_mm: float) -> np.ndarray:
    """Horizontal and vertical ruled lines (at least 6 mm long) of an upright page."""
    return ink_ruling(binarize(gray), px_per_mm)


def ink_ruling(ink: np.ndarray, px_per_mm: float, slanted: bool = False) -> np.ndarray:
    """:func:`ruling` of a page's ink (:func:`binarize`). ``slanted``: rules slanting by up to
    ~6% kept too (a page folded or bent: a thin rule steps by a pixel every few millimetres and
    no 6 mm run of one row is left of it), the ink thickened by :data:`SLANT_MM` across each
    direction before its runs along it are kept."""
    length = max(9, round(6 * px_per_mm))
    across = 2 * max(1, round(SLANT_MM * px_per_mm)) + 1
    horizontal, vertical = (
        cv2.morphologyEx(
            cv2.dilate(ink, np.ones(thicken, np.uint8)) if slanted else ink,
            cv2.MORPH_OPEN,
            cv2.getStructuringElement(cv2.MORPH_RECT, along),
        )
        for along, thicken in (((length, 1), (across, 1)), ((1, length), (1, across)))
    )
    return cv2.bitwise_or(horizontal, vertical)


def _tolerance_kernel(px_per_mm: float) -> np.ndarray:
    radius = max(1, round(0.5 * px_per_mm))
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


@dataclass(frozen=True, slots=True)
class Candidate:
    """A possible outline of the form's frame (4x2 float32, clockwise from any corner) and the
    mask of the ink piece it outlines."""

    quad: np.ndarray
    piece: np.ndarray


def frame_candidates(ink: np.ndarray, limit: int = CANDIDATES) -> list[Candidate]:
    """Outlines of the largest connected ink pieces: each piece's hull as a quadrilateral, then
    its minimum-area rectangle."""
    closed = cv2.morphologyEx(ink, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(closed, connectivity=8)
    if count <= 1:
        return []
    min_area = MIN_FRAME_FRACTION * ink.shape[0] * ink.shape[1]
    areas = stats[1:, cv2.CC_STAT_WIDTH] * stats[1:, cv2.CC_STAT_HEIGHT]
    order = np.argsort(-areas)[:limit]
    found = []
    for idx in order:
        if areas[idx] < min_area:
            break
        found += _outlines(labels == idx + 1)
    return found


def _outlines(piece: np.ndarray) -> list[Candidate]:
    """A piece's hull as a quadrilateral, then its minimum-area rectangle."""
    hull = _hull(piece)
    return [
        Candidate(_quad(hull), piece),
        Candidate(_order(cv2.boxPoints(cv2.minAreaRect(hull))), piece),
    ]


def joined_candidates(candidates: list[Candidate]) -> list[Candidate]:
    """The outlines of each two of the candidates' pieces together, but where nine tenths of
    one's box lies inside the other's (a photo's paper around its frame, which the outer
    piece's outline already is): a frame the page shows in pieces (a seal's mask or a faded stretch
    cutting its lines where the page is worked on small: a 数电票 printed on the top of an A4
    sheet, its frame in two pieces, matched 0.87 by its right piece alone, 280 px off)."""
    pieces = _pieces(candidates)
    boxes = [_bounds(piece) for piece in pieces]
    return [
        outline
        for (a, box_a), (b, box_b) in combinations(zip(pieces, boxes, strict=True), 2)
        if smaller_share(box_a, box_b) < 0.9
        for outline in _outlines(a | b)
    ]


def _pieces(candidates: list[Candidate]) -> list[np.ndarray]:
    """The candidates' ink pieces, each once (a piece gives two outlines)."""
    return list({id(c.piece): c.piece for c in candidates}.values())


def _bounds(piece: np.ndarray) -> Box:
    x, y, w, h = cv2.boundingRect(piece.astype(np.uint8))
    return x, y, x + w, y + h


def _hull(piece: np.ndarray) -> np.ndarray:
    """The convex hull of a piece's pixels, from its outer contour (the same hull as from every
    pixel, ~8x cheaper), starting where OpenCV's hull of every pixel starts, at the rightmost
    (then lowest) vertex: the quad :func:`_quad` fits to it depends on the start."""
    contours, _ = cv2.findContours(piece.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    hull = cv2.convexHull(np.concatenate(contours))
    start = max(range(len(hull)), key=lambda i: (hull[i, 0, 0], hull[i, 0, 1]))
    return np.roll(hull, -start, axis=0)


def fit_sides(quad: np.ndarray, piece: np.ndarray, samples: int = 48) -> np.ndarray | None:
    """The quad with each side refitted to the piece's outer edge, ignoring what bulges out.

    A hull's corners are pulled off by anything that touches the frame from outside (a seal the
    colour mask missed, a stamp, a pen stroke). Along each side, the outermost ink is found at
    ``samples`` points by scanning inward across the side; a line through the straightest
    majority of those points (RANSAC, then least squares) is the side, and the corners are
    where neighbouring sides meet.
    """
    h, w = piece.shape
    centre = quad.mean(axis=0)
    lines = []
    for i in range(4):
        a, b = quad[i].astype(np.float64), quad[(i + 1) % 4].astype(np.float64)
        side = b - a
        length = float(np.hypot(*side))
        if length < 20:
            return None
        normal = np.array([side[1], -side[0]]) / length
        if np.dot(normal, (a + b) / 2 - centre) < 0:
            normal = -normal  # outward
        reach = max(15.0, 0.06 * length)
        offsets = np.arange(reach, -reach, -1.0)  # from outside inward
        starts = a + np.outer(np.linspace(0.06, 0.94, samples), side)
        points = starts[:, None, :] + offsets[None, :, None] * normal
        xs, ys = np.rint(points[..., 0]).astype(int), np.rint(points[..., 1]).astype(int)
        inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
        hit = np.zeros(xs.shape, dtype=bool)
        hit[inside] = piece[ys[inside], xs[inside]]
        rows = np.flatnonzero(hit.any(axis=1))
        if len(rows) < samples // 3:
            return None
        edge = points[rows, hit[rows].argmax(axis=1)]
        line = _robust_line(edge)
        if line is None:
            return None
        lines.append(line)
    corners = [_intersect(lines[i - 1], lines[i]) for i in range(4)]
    if any(c is None for c in corners):
        return None
    fitted = np.array(corners, dtype=np.float32)
    if not cv2.isContourConvex(fitted.reshape(-1, 1, 2)):
        return None
    return _order(fitted)


def _robust_line(
    points: np.ndarray, tolerance: float = 1.5
) -> tuple[np.ndarray, np.ndarray] | None:
    """(point, unit direction) of the line through most of ``points`` (RANSAC over pairs)."""
    best: np.ndarray | None = None
    n = len(points)
    for i in range(0, n, 2):
        for j in range(i + n // 3, n, 3):
            d = points[j] - points[i]
            norm = float(np.hypot(*d))
            if norm == 0:
                continue
            dist = np.abs((points - points[i]) @ np.array([d[1], -d[0]]) / norm)
            inliers = dist <= tolerance
            if best is None or inliers.sum() > best.sum():
                best = inliers
    if best is None or best.sum() < max(6, n // 2):
        return None
    vx, vy, x0, y0 = cv2.fitLine(points[best].astype(np.float32), cv2.DIST_L2, 0, 0.01, 0.01)
    return np.array([x0[0], y0[0]]), np.array([vx[0], vy[0]])


def _intersect(
    first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray]
) -> np.ndarray | None:
    (p, r), (q, s) = first, second
    cross = r[0] * s[1] - r[1] * s[0]
    if abs(cross) < 0.2:  # sides meeting at under ~12 degrees are not a frame's corner
        return None
    t = ((q - p)[0] * s[1] - (q - p)[1] * s[0]) / cross
    return p + t * r


def _quad(hull: np.ndarray) -> np.ndarray:
    """Four corners approximating a convex hull, clockwise (image coordinates)."""
    perimeter = cv2.arcLength(hull, True)
    quad = None
    for eps in np.linspace(0.005, 0.08, 16):
        approx = cv2.approxPolyDP(hull, eps * perimeter, True)
        if len(approx) == 4:
            quad = approx.reshape(4, 2).astype(np.float32)
            break
        if len(approx) < 4:
            break
    if quad is None:
        quad = cv2.boxPoints(cv2.minAreaRect(hull)).astype(np.float32)
    return _order(quad)


def _order(quad: np.ndarray) -> np.ndarray:
    """Corners clockwise on screen (y down), the top-left-most first."""
    centre = quad.mean(axis=0)
    angles = np.arctan2(quad[:, 1] - centre[1], quad[:, 0] - centre[0])
    quad = quad[np.argsort(angles)]
    start = int(np.argmin(quad.sum(axis=1)))
    return np.roll(quad, -start, axis=0)


# -- registration -----------------------------------------------------------------------------


def register(page: np.ndarray, template: Template) -> Alignment:
    """Align ``page`` (BGR or gray) to ``template``'s reference: on its working copy, and where
    no outline there is sure, again on each small candidate piece cut out of the full page
    (:func:`_small_pieces`), the best kept. A page that does not match is registered once more
    with every candidate's outline refitted (:attr:`Alignment.refitted`)."""
    ref = reference_for(template)
    alignment, search = _register_best(page, template, ref)
    if alignment.matched or alignment.homography is None:
        return alignment
    refitted = _refit_every(ref, template, search)
    return replace(alignment, refitted=refitted) if refitted and refitted.matched else alignment


def _register_best(
    page: np.ndarray, template: Template, ref: Reference
) -> tuple[Alignment, _Search]:
    """The page's best match (:func:`register` without its second try where it does not match)
    and the search on the whole page."""
    first, search = _register(page, template, ref)
    if first.score >= SURE_OUTLINE or not search.candidates:
        return first, search
    best = first
    for x0, y0, x1, y1 in _small_pieces(search.candidates, page.shape[:2]):
        zoomed, _ = _register(page[y0:y1, x0:x1], template, ref)
        if zoomed.score > best.score and zoomed.homography is not None:
            homography = np.array([[1, 0, x0], [0, 1, y0], [0, 0, 1]], np.float64)
            homography = homography @ zoomed.homography
            best = replace(zoomed, homography=homography)
        if best.score >= SURE_OUTLINE:
            break
    if best is first:
        return first, search
    assert best.homography is not None
    to_page = np.diag([search.page_scale, search.page_scale, 1.0]) @ best.homography
    to_page = to_page @ np.diag([1 / ref.scale, 1 / ref.scale, 1.0])
    chosen = _piece_under(search.candidates, to_page, ref)
    beside = (
        best.matched and chosen is not None and _beside(search.candidates, chosen, to_page, ref)
    )
    return replace(best, beside=beside), search


def _refit_every(ref: Reference, template: Template, search: _Search) -> Alignment | None:
    """The page's alignment with every candidate's outline refitted, not only the chosen one's
    (:func:`_refitted`, going on where the first search stopped); None where no other outline
    refitted overlays the reference better: the first search's alignment stands."""
    if search.outline is None or search.chosen is None or search.outline.score >= SURE_OUTLINE:
        return None
    others = [c for c in search.candidates if c is not search.chosen]
    best, chosen = _refitted(
        ref, search.small, search.outline, search.chosen, others, refit_chosen=False
    )
    if best is search.outline:
        return None
    return _finished(template, ref, search, best, chosen)


def _small_pieces(
    candidates: list[Candidate], size: tuple[int, int]
) -> list[tuple[int, int, int, int]]:
    """The page's regions (full px: x0, y0, x1, y1) round each candidate piece small enough on
    the working page that it would be read larger cut out of the full page: a form
    photographed small in its frame (a 数电票 printed on an A4 sheet, the sheet on a dark desk),
    whose thin rules the working page blurs away. Largest first."""
    h, w = size
    page_scale = _work_scale(size)
    if page_scale >= 1:
        return []
    regions = []
    for piece in _pieces(candidates):
        x0, y0, x1, y1 = _bounds(piece)
        if max(x1 - x0, y1 - y0) > ZOOM_SHARE * PAGE_WORK_SIDE:
            continue
        mx, my = ZOOM_MARGIN * (x1 - x0), ZOOM_MARGIN * (y1 - y0)
        regions.append(
            (
                max(0, int((x0 - mx) / page_scale)),
                max(0, int((y0 - my) / page_scale)),
                min(w, int((x1 + mx) / page_scale) + 1),
                min(h, int((y1 + my) / page_scale) + 1),
            )
        )
    return regions


def _piece_under(
    candidates: list[Candidate], to_page: np.ndarray, ref: Reference
) -> Candidate | None:
    """The candidate whose piece's box is the smallest to hold the centre of the frame
    ``to_page`` (reference work px -> page work px) puts on the page: the frame's, not the
    desk's round it."""
    cx, cy = _frame_on(ref, to_page).mean(axis=0)
    holding = [
        (box, candidate)
        for candidate in candidates
        for box in [_bounds(candidate.piece)]
        if box[0] <= cx <= box[2] and box[1] <= cy <= box[3]
    ]
    if not holding:
        return None
    return min(holding, key=lambda held: (held[0][2] - held[0][0]) * (held[0][3] - held[0][1]))[1]


def _work_scale(shape: tuple[int, ...]) -> float:
    """Of a page's full px, its working copy's: :data:`PAGE_WORK_SIDE` on its long side at
    most."""
    return min(1.0, PAGE_WORK_SIDE / max(shape[:2]))


def _frame_on(ref: Reference, to_page: np.ndarray) -> np.ndarray:
    """The reference's frame corners on the page (4 x 2), through ``to_page`` (reference work
    px -> page work px)."""
    return cv2.perspectiveTransform(ref.frame.reshape(1, 4, 2).astype(np.float64), to_page)[0]


class _Search(NamedTuple):
    """A registration's search on one page: the page's working copy (grey, :data:`PAGE_WORK_SIDE`
    on its long side at most), the frame candidates found on it, and the outline chosen from
    them (before it is joined with other pieces, refined and unbent) with its candidate."""

    small: np.ndarray
    page_scale: float
    candidates: list[Candidate]
    outline: _Overlay | None = None
    chosen: Candidate | None = None


def _register(page: np.ndarray, template: Template, ref: Reference) -> tuple[Alignment, _Search]:
    """:func:`register` on the page as it is: the alignment and the search it came from."""
    h, w = page.shape[:2]
    page_scale = _work_scale(page.shape)
    small = to_gray(page)
    if page_scale < 1:
        size = (round(w * page_scale), round(h * page_scale))
        # grey first: averaging one channel costs a third of three (the result is the same);
        # the seals are found on a cheaper bilinear colour copy, they are large blobs
        small = cv2.resize(small, size, interpolation=cv2.INTER_AREA)
        page = cv2.resize(page, size, interpolation=cv2.INTER_LINEAR)
    ink = binarize(small)
    if page.ndim == 3:
        ink[seal_mask(page)] = 0  # a seal over the frame's corner would bend its outline
    search = _Search(small, page_scale, frame_candidates(ink))
    if not search.candidates:
        return Alignment(False, 0.0, None, reason="no ruled form frame found on the page"), search

    best, candidate = _best_outline(ref, small, search.candidates)
    if best.score < SURE_OUTLINE:
        best, candidate = _refitted(ref, small, best, candidate, [])
    search = search._replace(outline=best, chosen=candidate)
    return _finished(template, ref, search, best, candidate), search


def _finished(
    template: Template, ref: Reference, search: _Search, best: _Overlay, candidate: Candidate
) -> Alignment:
    """The alignment through ``best``, the outline ``search`` chose (of ``candidate``), once it
    is joined with other pieces where that overlays better, refined and unbent."""
    small, candidates = search.small, search.candidates
    pieces = joined_candidates(candidates) if best.score < SURE_OUTLINE else []
    if pieces:  # two pieces or more, each joined outline turned as the best one lies
        turned = [Candidate(_turned_as(c.quad, best.to_ref, ref), c.piece) for c in pieces]
        joined, whole = _best_outline(ref, small, turned, turns=(0,))
        if joined.score > best.score:
            best, candidate = joined, whole
    refined = _refine(ref, small, best)
    if refined is not None and refined.score >= best.score:
        best = refined
    score, to_ref, on_form = best.score, best.to_ref, best.ink
    bend = (
        find_bend(*ref.rules, ink_ruling(best.ink, ref.px_per_mm, slanted=True), ref.px_per_mm)
        if score < FLAT_SCORE
        else None
    )
    if bend is not None:
        lines, ink = bend.undo(best.lines, on_form)
        unbent = match_score(ref, lines)
        if unbent >= max(score, BENT_SCORE):
            score, on_form = unbent, ink
            bend = bend.scaled(1 / ref.scale)
        else:
            bend = None

    # reference full px -> reference work px -> page work px -> page full px
    ref_to_page_work = np.linalg.inv(to_ref)
    homography = (
        np.diag([1 / search.page_scale, 1 / search.page_scale, 1.0])
        @ ref_to_page_work
        @ np.diag([ref.scale, ref.scale, 1.0])
    )
    homography /= homography[2, 2]
    matched = score >= template.registration.match_threshold
    beside = matched and _beside(candidates, candidate, np.linalg.inv(to_ref), ref)
    alignment = Alignment(
        matched=matched,
        score=round(float(score), 4),
        homography=homography,
        rotation_deg=round(_top_edge_angle(homography, template), 2),
        reason=None
        if matched
        else f"match score {score:.2f} below the template's threshold "
        f"{template.registration.match_threshold:.2f}",
        bend=bend,
        on_form=on_form,
        beside=beside,
    )
    return alignment


def _refitted(
    ref: Reference,
    small: np.ndarray,
    best: _Overlay,
    chosen: Candidate,
    others: list[Candidate],
    refit_chosen: bool = True,
) -> tuple[_Overlay, Candidate]:
    """The best outline with its sides refitted to its piece's outer edge (:func:`fit_sides`):
    ``chosen``'s first (unless ``refit_chosen`` is False: done already), then each of
    ``others`` until one is sure. The outline a piece's hull gives depends on where the hull
    starts, and a corner cut off (a seal masked over it) or a sheet's edge that scores higher
    unfitted took the search (a photo matched 0.49 as taken, 0.975 turned a quarter: its
    frame's refitted outline scores that either way)."""
    for each in [chosen, *others] if refit_chosen else others:
        fitted = fit_sides(each.quad, each.piece)
        if fitted is not None:
            again, _ = _best_outline(ref, small, [Candidate(fitted, each.piece)])
            if again.score > best.score:
                best, chosen = again, each
        if best.score >= SURE_OUTLINE:
            break
    return best, chosen


def forms_beside(
    page: np.ndarray, template: Template, alignment: Alignment, limit: int = MAX_FORMS - 1
) -> list[Alignment]:
    """The other copies of ``template``'s form on ``page``, beside the one ``alignment`` found
    (:attr:`Alignment.beside`: two invoices photographed or scanned together), up to ``limit``:
    the page registered again with each form found painted over in white (its outline and a
    margin), until no other matches. Only pages holding such a piece pay for the look."""
    found: list[Alignment] = []
    rest, last = page, alignment
    painted: list[Box] = []
    while last.beside and last.homography is not None and len(found) < limit:
        corners = form_outline(template, last.homography, BESIDE_MARGIN_MM)
        painted.append(_box_of(corners))
        rest = rest.copy()
        white = (255,) * rest.shape[2] if rest.ndim == 3 else 255
        cv2.fillConvexPoly(rest, np.round(corners).astype(np.int32), white)
        last = register(rest, template)
        if not last.matched or last.homography is None:
            break
        outline = _box_of(form_outline(template, last.homography))
        if any(smaller_share(outline, box) > OVERLAP_SHARE for box in painted):
            break  # forms side by side do not overlap: the sheet the form is printed on
        found.append(last)
    return found


def _box_of(corners: np.ndarray) -> Box:
    x0, y0 = corners.min(axis=0)
    x1, y1 = corners.max(axis=0)
    return float(x0), float(y0), float(x1), float(y1)


def form_outline(template: Template, homography: np.ndarray, margin_mm: float = 0.0) -> np.ndarray:
    """The corners of ``template``'s page, ``margin_mm`` outside it, on the page (4 x 2 page px,
    through ``homography``)."""
    w, h = template.reference_size_px
    m = margin_mm * template.px_per_mm
    corners = np.array([[[-m, -m], [w + m, -m], [w + m, h + m], [-m, h + m]]], np.float64)
    return cv2.perspectiveTransform(corners, homography)[0]


def frame_outline(template: Template, homography: np.ndarray) -> np.ndarray:
    """The corners of ``template``'s ruled frame on the page (4 x 2 page px, through
    ``homography``)."""
    ref = reference_for(template)
    corners = (ref.frame.reshape(1, 4, 2) / ref.scale).astype(np.float64)
    return cv2.perspectiveTransform(corners, homography)[0]


def _beside(
    candidates: list[Candidate], chosen: Candidate, to_page: np.ndarray, ref: Reference
) -> bool:
    """Whether a candidate piece other than ``chosen`` lies outside the reference's frame on
    the page (``to_page``: reference work px -> page work px) with a bounding box at least
    :data:`BESIDE_FRACTION` of the frame's."""
    quad = _frame_on(ref, to_page)
    frame = cv2.boundingRect(quad.astype(np.float32))
    area = frame[2] * frame[3]
    for piece in _pieces(candidates):
        if piece is chosen.piece:
            continue
        x0, y0, x1, y1 = _bounds(piece)
        centre = (float(x0 + x1) / 2, float(y0 + y1) / 2)
        outside = cv2.pointPolygonTest(quad.astype(np.float32), centre, False) < 0
        if outside and (x1 - x0) * (y1 - y0) >= BESIDE_FRACTION * area:
            return True
    return False


class _Overlay(NamedTuple):
    """A page warped onto the reference (work px) through ``to_ref`` (page work px ->
    reference work px): its ruling, how well that overlays the reference's, and its ink."""

    score: float
    to_ref: np.ndarray
    lines: np.ndarray
    ink: np.ndarray


def _best_outline(
    ref: Reference,
    small: np.ndarray,
    candidates: list[Candidate],
    sure: float = SURE_OUTLINE,
    turns: tuple[int, ...] = (0, 1, 2, 3),
) -> tuple[_Overlay, Candidate]:
    """The candidate and 90-degree turn (of ``turns``) whose ruling best overlays the
    reference's. Stops at the first one scoring ``sure``."""
    best: tuple[_Overlay, Candidate] | None = None
    for candidate in candidates:
        for turn in turns:
            to_ref = cv2.getPerspectiveTransform(np.roll(candidate.quad, -turn, axis=0), ref.frame)
            overlay = _overlay(ref, small, to_ref)
            if best is None or overlay.score > best[0].score:
                best = (overlay, candidate)
            if overlay.score >= sure:
                return best
    assert best is not None
    return best


def _turned_as(quad: np.ndarray, to_ref: np.ndarray, ref: Reference) -> np.ndarray:
    """``quad``'s corners rolled to start with the one nearest where ``to_ref`` (page work px ->
    reference work px) puts the reference frame's first corner on the page."""
    first = ref.frame[:1].reshape(1, 1, 2).astype(np.float64)
    there = cv2.perspectiveTransform(first, np.linalg.inv(to_ref))[0, 0]
    return np.roll(quad, -int(np.argmin(np.linalg.norm(quad - there, axis=1))), axis=0)


def _overlay(ref: Reference, small: np.ndarray, to_ref: np.ndarray) -> _Overlay:
    ink = _ink_on_reference(small, to_ref, ref)
    lines = ink_ruling(ink, ref.px_per_mm)
    return _Overlay(match_score(ref, lines), to_ref, lines, ink)


def match_score(ref: Reference, page_lines: np.ndarray) -> float:
    """F1 of reference ruling found on the page and page ruling (inside the frame) found on the
    reference, with half a millimetre of tolerance."""
    ref_total = np.count_nonzero(ref.lines)
    page_in_frame = cv2.bitwise_and(page_lines, ref.frame_mask)
    page_total = np.count_nonzero(page_in_frame)
    if ref_total == 0 or page_total == 0:
        return 0.0
    page_tol = cv2.dilate(page_lines, _tolerance_kernel(ref.px_per_mm))
    recall = np.count_nonzero(cv2.bitwise_and(ref.lines, page_tol)) / ref_total
    precision = np.count_nonzero(cv2.bitwise_and(page_in_frame, ref.lines_tol)) / page_total
    return 0.0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)


def _refine(ref: Reference, small: np.ndarray, outline: _Overlay) -> _Overlay | None:
    """ECC on the ruling maps: sub-pixel homography refinement of the ``outline``'s."""
    # ECC runs on the blurred ruling maps at ECC_SCALE of the working scale: as precise here,
    # and cheaper (docs/benchmarks.md)
    moving = cv2.resize(
        cv2.GaussianBlur(outline.lines.astype(np.float32) / 255, (0, 0), 1.5),
        ref.ecc_size,
        interpolation=cv2.INTER_AREA,
    )
    warp = np.eye(3, dtype=np.float32)
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, *ECC_STOP)
    try:
        _, warp = cv2.findTransformECC(
            ref.lines_blur_ecc, moving, warp, cv2.MOTION_HOMOGRAPHY, criteria, None, 5
        )
    except cv2.error:
        return None
    scale = np.diag([ECC_SCALE, ECC_SCALE, 1.0])
    warp = np.linalg.inv(scale) @ warp.astype(np.float64) @ scale  # back to working-scale px
    # warp maps reference work px -> (page warped into reference) px
    return _overlay(ref, small, np.linalg.inv(np.linalg.inv(outline.to_ref) @ warp))


def ink_on_form(page: np.ndarray, template: Template, homography: np.ndarray) -> np.ndarray:
    """The page's ink (:func:`binarize`) on the reference at its working px, through
    ``homography`` (reference px -> page px): :attr:`Alignment.on_form` of a page aligned
    otherwise than by its frame (by its printed labels)."""
    ref = reference_for(template)
    to_work = np.diag([ref.scale, ref.scale, 1.0]) @ np.linalg.inv(homography)
    return _ink_on_reference(to_gray(page), to_work, ref)


def _ink_on_reference(gray: np.ndarray, to_ref: np.ndarray, ref: Reference) -> np.ndarray:
    """The ink (:func:`binarize`) of ``gray`` warped through ``to_ref`` onto the reference's
    working px, paper where the page does not reach."""
    size = (ref.work_w, ref.work_h)
    warped = cv2.warpPerspective(gray, to_ref, size, flags=cv2.INTER_AREA, borderValue=255)
    return binarize(warped)


def _top_edge_angle(homography: np.ndarray, template: Template) -> float:
    w, _ = template.reference_size_px
    ends = cv2.perspectiveTransform(np.array([[[0, 0], [w, 0]]], np.float64), homography)[0]
    dx, dy = ends[1] - ends[0]
    return -math.degrees(math.atan2(dy, dx))
