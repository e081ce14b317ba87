"""Crops: cut each field's box out of a registered page and tighten it to the printed line.

Printers put the data several millimetres off the preprinted cells, so each box is cut with a
margin, the form's coloured ink (brown/red/green lines, labels and seals) and its ruled lines are
removed, and the crop is tightened to the text line that best fills the box before recognition.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial

import cv2
import numpy as np

from extractor.bend import Bend
from extractor.registration import reference_for
from extractor.templates import FieldKind, FieldSpec, Template

MIN_LINE_MM = 1.2  # a text line is at least this tall
GREY_SCAN_SATURATION = 40  # a crop whose most saturated pixels stay below this is grey
PAPER_MARGIN = 30  # grey levels this far above the ink threshold are paper
GRAIN_PERCENTILE = 10  # paper is whitened where this percentile of what is not ink is paper
MAX_LINE_MM = 8.0  # ink taller than this is not text
RULE_MAX_MM = 1.0  # ink runs thicker than this are print, not a ruled line
EXTRA_MARGIN_MM = 4.0  # more margin on the side a field's line runs out of its crop
STRICT_KINDS = frozenset({FieldKind.code, FieldKind.tax_id, FieldKind.date})
"""Fields whose format tells a whole reading from a cut one (a fixed length, a check digit, a
calendar date): those cut short are read again from a wider crop (:attr:`Crop.wider`)."""
MIN_OFFSET_MM = 0.4  # smaller estimated print offsets are ignored
MIN_FIELDS_FOR_OFFSET = 3
FORM_COVER = 0.8
"""A piece of ink lying this much on the form's own labels (:attr:`Reference.labels`) is the
label's, not print: a data layer printed a few millimetres off puts the label beside its box
into the crop (称 before a buyer's name), where the recognizer would read it."""
CROSSING_MM = 0.6
"""Print crosses a ruled line over at most this much along it (a stroke's width, or a curve's
steep side); print beside a line over longer stretches runs along it (:func:`_crossings`)."""
STROKE_AWAY_MM = 0.3
"""A stroke that crosses a ruled line goes on this far away from it on either side; a line's
ragged edge (a blurred grey photo's) does not."""
REMNANT_THICK = 0.12  # of the line's height: a piece this thin at a line's end may be a rule's
REMNANT_WIDTH = 0.5  # ... and is one when shorter than this (of the line's height) or off-centre
FREE_TEXT_KINDS = frozenset({FieldKind.name, FieldKind.text})
"""Fields whose reading no check can fault: the form's labels are dropped from their crops. (A
label in another field's crop makes its reading fail, and the field is read again; dropping
labels there would also drop a first digit cut in half where it lies on the label's colon.)"""
PAPER_WINDOW_MM = 5.0
"""Wider than a printed line is tall: a window this wide around any point of a crop holds
paper, and its brightest pixel is the paper's brightness there."""
UNEVEN_PAPER = 0.15
"""A crop whose paper is this much darker in places (its 5th percentile against its 95th) is
evened before ink is told from paper: a phone photo's shadow or vignetting, a scanner's uneven
lamp. One threshold for the whole crop would take the shaded paper for ink, and the blob it
makes for a stain to erase, with the print on it."""
GREY_PAPER = 170
"""A crop whose paper is no brighter than this (its 95th percentile) is evened too: an
underexposed photo, whose print is as faint against its paper as shading would make it."""
HIGHLIGHT_MM = 1.5
"""Green ink filling a square this wide is a highlighter's, not a green form's: its lines and
its labels' strokes are thinner. Print under a green highlighter is green-hued at its edges and
would be dropped with the form's ink; it is kept where the highlighter lies."""
WHITE = 255
REACHED = 128  # flood-fill mark


@dataclass(slots=True)
class Crop:
    """One field's tightened line image and where it lies on the page."""

    spec: FieldSpec
    image: np.ndarray
    """Grey line image, form ink dropped out; what the recognizer reads."""
    quad: np.ndarray
    """4x2 corners of the tightened crop in page pixels."""
    has_ink: bool
    inked: Callable[[], np.ndarray] | None = None
    """Reference px from the field's box's left edge to each of the line's inked columns (in
    its rows, along its extent: no speck or rule's remnant beside it), left to right, worked
    out when asked (:meth:`start`); None where the crop found no line."""
    wider: Callable[[], Crop | None] | None = None
    """For a field with a strict format whose line runs out of the crop (print shifted past
    the margin): cuts the field again with EXTRA_MARGIN_MM more on that side (None when no line
    is found there). Called only when the reading of this crop fails its checks."""

    @property
    def field(self) -> str:
        return self.spec.name

    def start(self, after: float = -np.inf) -> float | None:
        """Where the line's ink starts, reference px into the field's box, at ``after`` or
        further in; None: no ink there."""
        if self.inked is None:
            return None
        inked = self.inked()
        at = int(np.searchsorted(inked, after))
        return float(inked[at]) if at < len(inked) else None


def crop_fields(
    page: np.ndarray,
    homography: np.ndarray,
    template: Template,
    skip: Collection[str] = (),
    bend: Bend | None = None,
    down: float = 0.0,
    printed_again: bool = False,
) -> list[Crop]:
    """Tight crops of every field of ``template`` but those named in ``skip`` from ``page``,
    in template order; through ``homography`` and, on a page that does not lie flat, its
    ``bend``; around the boxes moved ``down`` (reference px) where the page's data layer lies
    (:func:`extractor.print_offset.print_offset`). With ``printed_again``, the second prints
    of the fields cut that the form prints twice follow them (:meth:`FieldSpec.again`: named
    ``<field>.again``).

    Printers shift the whole data layer, so the vertical offset of the lines found is estimated
    over the fields cut (the median, robust to a field that latched onto its neighbour) and each
    field is tightened again around its box moved by that offset.
    """
    specs = [spec for spec in template.fields if spec.name not in skip]
    if printed_again:
        specs += [again for spec in specs if (again := spec.again()) is not None]
    loose = [
        _LooseCrop.cut(page, homography, template, spec, bend=bend, down=down) for spec in specs
    ]
    ppm = template.px_per_mm
    first = [tighten(c.ink, c.core, ppm) for c in loose]
    offsets = [
        (rect[1] + rect[3] / 2) - (c.core[1] + c.core[3] / 2)
        for c, rect in zip(loose, first, strict=True)
        if rect is not None
    ]
    shift = float(np.median(offsets)) if len(offsets) >= MIN_FIELDS_FOR_OFFSET else 0.0
    if abs(shift) < MIN_OFFSET_MM * ppm:
        shift = 0.0
        rects = first
    else:
        rects = [tighten(c.ink, c.shifted(shift), ppm) for c in loose]
    return [
        _widened(page, homography, template, c, rect, shift)
        for c, rect in zip(loose, rects, strict=True)
    ]


def _widened(
    page: np.ndarray,
    homography: np.ndarray,
    template: Template,
    loose: _LooseCrop,
    rect: tuple[int, int, int, int] | None,
    shift: float,
) -> Crop:
    """The field's crop, for a line that runs out of its loose crop (the data printed further
    off its box than the margin allows, its first or last characters cut):

    - an amount is printed right-aligned: when its line runs out on the right, it is cut again
      with EXTRA_MARGIN_MM more on the right and tightened again;
    - a name (any free text) is printed left-aligned: when its line runs out on the left, it is
      cut again with EXTRA_MARGIN_MM more on the left (精 cut in half reads as 青, and no check
      would tell); the label beside it (名称) is the form's and dropped (:func:`separate_ink`).
      Not on the right: what lies there may be print of a neighbour or a seal's text;
    - a field with a strict format (:data:`STRICT_KINDS`) gets a wider crop on the side(s) it
      runs out, read only if the reading of its own crop fails its checks."""
    if rect is None:
        return loose.finish(rect)
    x, _, w, _ = rect
    left, right = x <= 0, x + w >= loose.ink.shape[1]
    kind = loose.spec.kind
    if kind in FREE_TEXT_KINDS:  # and print is there, not a rule's remnant or a speck
        left = left and _print_at_the_left(loose.ink, rect)
    if not (left or right) or kind not in STRICT_KINDS | FREE_TEXT_KINDS | {FieldKind.amount}:
        return loose.finish(rect)
    extra_left = EXTRA_MARGIN_MM if left and kind is not FieldKind.amount else 0.0
    extra_right = EXTRA_MARGIN_MM if right and kind not in FREE_TEXT_KINDS else 0.0
    if not (extra_left or extra_right):
        return loose.finish(rect)
    cut_again = partial(
        _cut_again, page, homography, template, loose, extra_left, extra_right, shift
    )
    if kind not in STRICT_KINDS:
        return cut_again() or loose.finish(rect)
    crop = loose.finish(rect)
    crop.wider = cut_again
    return crop


def _print_at_the_left(ink: np.ndarray, rect: tuple[int, int, int, int]) -> bool:
    """Whether the line's print reaches the crop's first columns (as wide as the margin the
    recognizer wants, a quarter of the crop's height): the pieces of ink there span half the
    line's height or more together, where a rule's remnant or a speck spans a few rows."""
    _, y, _, h = rect  # the line's height and its margins, a quarter of h each
    strip = max(2, round(h / 4))
    near = np.ascontiguousarray(ink[y : y + h, : 3 * strip])
    _, _, stats, _ = cv2.connectedComponentsWithStats(near, connectivity=8)
    there = stats[1:][stats[1:, cv2.CC_STAT_LEFT] < strip]
    rows = np.zeros(h, dtype=bool)
    for top, height in zip(there[:, cv2.CC_STAT_TOP], there[:, cv2.CC_STAT_HEIGHT], strict=True):
        rows[top : top + height] = True
    return np.count_nonzero(rows) >= 0.25 * h


def _cut_again(
    page: np.ndarray,
    homography: np.ndarray,
    template: Template,
    loose: _LooseCrop,
    extra_left_mm: float,
    extra_right_mm: float,
    shift: float,
) -> Crop | None:
    spec, extra = loose.spec, (extra_left_mm, extra_right_mm)
    wide = _LooseCrop.cut(page, homography, template, spec, *extra, loose.bend, loose.down)
    rect = tighten(wide.ink, wide.shifted(shift), template.px_per_mm)
    return wide.finish(rect) if rect is not None else None


@dataclass(slots=True)
class _LooseCrop:
    """A field's box cut with its margin, before tightening."""

    spec: FieldSpec
    to_page: np.ndarray  # crop px -> page px
    clean: np.ndarray
    ink: np.ndarray
    core: tuple[float, float, float, float]  # the box itself, in crop px
    bend: Bend | None = None
    down: float = 0.0  # the box moved down by this (reference px): the page's print offset

    @classmethod
    def cut(
        cls,
        page: np.ndarray,
        homography: np.ndarray,
        template: Template,
        spec: FieldSpec,
        extra_left_mm: float = 0.0,
        extra_right_mm: float = 0.0,
        bend: Bend | None = None,
        down: float = 0.0,
    ) -> _LooseCrop:
        """The box moved ``down`` (reference px) with the template's margin (and ``extra_*_mm``
        more on the left and right), through ``homography`` and the page's ``bend``."""
        ppm = template.px_per_mm
        ref_w, ref_h = template.reference_size_px
        margin = template.crop_margin_mm
        box = spec.box
        # whole pixels more: a wider crop samples the page where the first one did
        x0 = max(0.0, (box.x - margin) * ppm - round(extra_left_mm * ppm))
        y0 = max(0.0, (box.y - margin) * ppm + down)
        x1 = min(float(ref_w), (box.x + box.w + margin) * ppm + round(extra_right_mm * ppm))
        y1 = min(float(ref_h), (box.y + box.h + margin) * ppm + down)
        size = (round(x1 - x0), round(y1 - y0))
        loose, to_page = cut_out(page, homography, (x0, y0), size, bend)
        form = None
        if spec.kind in FREE_TEXT_KINDS:
            labels = reference_for(template).labels
            form = np.zeros((size[1], size[0]), dtype=bool)
            part = labels[round(y0) : round(y0) + size[1], round(x0) : round(x0) + size[0]]
            form[: part.shape[0], : part.shape[1]] = part
        clean, ink = separate_ink(loose, ppm, form, widened=extra_left_mm > 0)
        core = (box.x * ppm - x0, box.y * ppm + down - y0, box.w * ppm, box.h * ppm)
        return cls(spec, to_page, clean, ink, core, bend, down)

    def shifted(self, dy: float) -> tuple[float, float, float, float]:
        x, y, w, h = self.core
        return x, y + dy, w, h

    def finish(self, rect: tuple[int, int, int, int] | None) -> Crop:
        has_ink, inked = rect is not None, None
        if rect is None:
            cx, cy, cw, ch = (round(v) for v in self.core)
            rect = (max(0, cx), max(0, cy), cw, ch)
        rx, ry, rw, rh = rect
        if has_ink:
            inked = partial(_inked_columns, self.ink, rect, self.core[0], self.core[2])
        corners = np.array(
            [[[rx, ry], [rx + rw, ry], [rx + rw, ry + rh], [rx, ry + rh]]], np.float64
        )
        quad = cv2.perspectiveTransform(corners, self.to_page)[0].astype(np.float32)
        image = self.clean[ry : ry + rh, rx : rx + rw].copy()
        return Crop(self.spec, image, quad, has_ink, inked)


def _inked_columns(
    ink: np.ndarray, rect: tuple[int, int, int, int], box_x: float, box_w: float
) -> np.ndarray:
    """:attr:`Crop.inked` of the line tightened to ``rect`` in a loose crop's ``ink`` whose
    field box starts at ``box_x`` (``box_w`` wide): its rows are the crop's middle half
    (:func:`tighten`'s margins), its extent the pieces of ink that make the line."""
    rx, ry, rw, rh = rect
    band = (ry + rh // 4, ry + rh - rh // 4)
    a, b = _line_extent(ink, band, box_x, box_w) or (rx, rx + rw)
    a, b = max(a, rx), min(b, rx + rw)  # within the crop
    return np.flatnonzero(ink[band[0] : band[1], a:b].any(axis=0)) + (a - box_x)


def cut_out(
    page: np.ndarray,
    homography: np.ndarray,
    origin: tuple[float, float],
    size: tuple[int, int],
    bend: Bend | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The region of the reference page at ``origin`` (reference px) of ``size`` (w, h), cut out
    of ``page`` upright through ``homography`` (reference px -> page px) and the page's ``bend``,
    white outside the page; and the map from the cut-out's px to page px (around its middle,
    to first order, on a bent page)."""
    x0, y0 = origin
    shift = np.array([[1, 0, x0], [0, 1, y0], [0, 0, 1]], dtype=np.float64)
    white = (255, 255, 255)
    if bend is None:
        to_page = homography @ shift
        image = cv2.warpPerspective(
            page,
            to_page,
            size,
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=white,
        )
        return image, to_page
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    mx, my = bend.moved(xx + np.float32(x0), yy + np.float32(y0))
    points = cv2.perspectiveTransform(np.stack([mx, my], axis=-1).reshape(1, -1, 2), homography)
    at = points.reshape(h, w, 2).astype(np.float32)
    image = cv2.remap(page, at[..., 0], at[..., 1], cv2.INTER_LINEAR, borderValue=white)
    return image, homography @ bend.around(x0 + w / 2, y0 + h / 2) @ shift


def separate_ink(
    crop: np.ndarray, ppm: float, form: np.ndarray | None = None, *, widened: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(grey crop with the form's ink dropped out, binary mask of the remaining dark ink).

    The red channel is the drop-out colour of red and brown ink: form lines, labels and seals
    turn pale in it while black and blue print stays dark, even where a seal covers it. Green
    forms are dropped by hue. What is left of the form's labels where ``form`` (a boolean mask
    of them, the crop's size) says they are is dropped too: thick strokes of a brown label stay
    dark in the drop-out channel, and a black form's labels are as dark as the print. A piece
    the crop's left side cuts is kept (print running out of the crop, to be cut again wider),
    but on a grey or black-and-white scan's crop ``widened`` so already: there it is a label the
    widening did not reach past (称 of a name printed over its colon).
    """
    clean = even_paper(crop[..., 2].copy(), ppm)
    hsv = cv2.cvtColor(crop, cv2.COLOR_BGR2HSV)
    sat = hsv[..., 1]
    green = cv2.inRange(hsv, (36, 61, 61), (89, 255, 255))  # hue 36-89, saturated and light
    green &= ~_highlighted(green, ppm)
    # pure red/brown ink (hue < 25 or > 150, saturated); where black print covers it the red
    # channel stays dark and is kept
    reddish = cv2.inRange(hsv, (0, 71, 0), (24, 255, 255))
    reddish |= cv2.inRange(hsv, (151, 71, 0), (255, 255, 255))
    reddish &= cv2.inRange(clean, 171, 255)
    clean[(green | reddish) > 0] = 255
    threshold, _ = cv2.threshold(clean, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    threshold = max(threshold, 1)  # Otsu's is 0 on a crop of pure black and white
    ink = (clean < threshold).astype(np.uint8) * 255
    # faint seal remnants, stains, paper grain; not where the darker tenth of what is not ink
    # lies under the cut (grain of a tinted sheet or a dim photo straddling it, a blurred
    # print's halo): whitened pixel by pixel, the grain turns to salt and the halo is chopped
    cut = threshold + PAPER_MARGIN
    paper = _percentile_over(clean, threshold, GRAIN_PERCENTILE)
    if paper is not None and paper > cut:
        clean[clean > cut] = WHITE
    if np.count_nonzero(ink) > 0.6 * ink.size:  # nothing but paper texture or a dark blotch
        ink[:] = 0
    lines = _ruled_lines(ink, ppm) > 0
    grey_scan = np.count_nonzero(sat >= GREY_SCAN_SATURATION) < 0.01 * sat.size  # 99th pct.
    if grey_scan:
        # on a grey or fax scan the ruling is as dark as the print: erase it from the image too,
        # but where print crosses it; on a colour scan it is already pale in the drop-out
        # channel, and erasing would cut the digits that touch it
        lines &= ~_crossings(ink > 0, lines, ppm)
        ink[lines] = 0
        fringe = cv2.dilate(lines.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
        clean[fringe & (ink == 0)] = WHITE
    else:
        ink[lines] = 0
    # what is taller than any printed line (QR codes, stains), and the form's labels
    count, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    tall = stats[1:, cv2.CC_STAT_HEIGHT] > MAX_LINE_MM * ppm
    on_form = np.zeros_like(tall)
    if form is not None:
        covered = np.bincount(labels[form], minlength=count)[1:]
        on_form = covered >= FORM_COVER * stats[1:, cv2.CC_STAT_AREA]
        # a piece cut by the crop's left side may be print running out of it: kept, so that
        # the line is seen to run out and is cut again wider (where a label lies whole inside);
        # in a crop cut wider already, on a grey scan, it is the label (on a colour scan the
        # label went with its colour, and a piece there is print over it: 福's 礻)
        if not (widened and grey_scan):
            on_form &= stats[1:, cv2.CC_STAT_LEFT] > 0
    for drop, fringe in ((tall, False), (on_form & ~tall, True)):
        if drop.any():
            blobs = np.isin(labels, np.flatnonzero(drop) + 1).astype(np.uint8)
            ink[blobs > 0] = 0
            if fringe:  # a label's anti-aliased edge, paler than the ink threshold
                blobs = cv2.dilate(blobs, np.ones((3, 3), np.uint8))
            clean[blobs > 0] = WHITE
    return clean, ink


def _percentile_over(grey: np.ndarray, floor: float, q: float) -> float | None:
    """``np.percentile(grey[grey > floor], q)`` of a uint8 image (None where no pixel is over
    ``floor``), from its histogram: the same value without sorting the pixels (~0.4 ms of a
    crop's 2 to cut)."""
    counts = np.bincount(grey.ravel(), minlength=WHITE + 1)[int(floor) + 1 :].cumsum()
    if not len(counts) or not counts[-1]:
        return None
    rank = q / 100 * (counts[-1] - 1)  # numpy's linear method: between two ranked pixels
    below = math.floor(rank)
    low, high = int(floor) + 1 + np.searchsorted(counts, [below, below + 1], side="right")
    high = min(high, WHITE)  # the last pixel ranked: no pixel above it
    t = rank - below
    return float(low + (high - low) * t if t < 0.5 else high - (high - low) * (1 - t))


def _highlighted(green: np.ndarray, ppm: float) -> np.ndarray:
    """Where a green highlighter lies (and the print under it, up to :data:`HIGHLIGHT_MM`
    from its paper): the green pieces holding a square of :data:`HIGHLIGHT_MM`, widened by as
    much again."""
    side = max(3, round(HIGHLIGHT_MM * ppm))
    if np.count_nonzero(green) < side * side:
        return np.zeros_like(green)
    paper = cv2.morphologyEx(green, cv2.MORPH_OPEN, np.ones((side, side), np.uint8))
    return cv2.dilate(paper, np.ones((2 * side + 1, 2 * side + 1), np.uint8))


def even_paper(grey: np.ndarray, ppm: float) -> np.ndarray:
    """``grey`` divided by its paper's brightness, so that its paper is white throughout, when
    that brightness varies by more than :data:`UNEVEN_PAPER` across it or stays under
    :data:`GREY_PAPER`; else ``grey`` itself.

    The paper's brightness is the grey closed over :data:`PAPER_WINDOW_MM`: the print filled in
    with the paper around it, while a dark area wider than the window (a desk beyond the page's
    edge, a large stain) keeps its own brightness to its edge and is evened away too. Whether
    to even is decided on every fourth pixel of every fourth row: shading varies over
    centimetres, not pixels."""
    side = max(3, round(PAPER_WINDOW_MM * ppm / 4))
    sample = cv2.dilate(np.ascontiguousarray(grey[::4, ::4]), np.ones((side, side), np.uint8))
    counts = np.bincount(sample.ravel(), minlength=WHITE + 1).cumsum()
    low, high = np.searchsorted(counts, (0.05 * counts[-1], 0.95 * counts[-1]))
    if high == 0 or (low >= (1 - UNEVEN_PAPER) * high and high >= GREY_PAPER):
        return grey
    side = max(3, round(PAPER_WINDOW_MM * ppm))
    paper = cv2.morphologyEx(grey, cv2.MORPH_CLOSE, np.ones((side, side), np.uint8))
    return cv2.divide(grey, np.maximum(paper, 1), scale=WHITE)


def _ruled_lines(ink: np.ndarray, ppm: float) -> np.ndarray:
    """Ruled lines left in the ink (on binarised and fax scans): thin horizontal and vertical
    runs, long, joined into a network that runs on out of the crop (a cell's rules cross the
    field box and its margin; a separator inside it meets them). Print blurred into one blob (a
    phone photo out of focus) has runs as long, thick or thin, that stay inside the text: taken
    for rules, they were erased from the crop."""
    h, w = ink.shape
    thick = max(3, round(RULE_MAX_MM * ppm))
    thin = np.zeros_like(ink)
    for length, across in (
        ((max(9, round(12 * ppm)), 1), (1, thick)),
        ((1, max(9, round(min(h * 0.8, 6 * ppm)))), (thick, 1)),
    ):
        runs = cv2.morphologyEx(
            ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, length)
        )
        wide = cv2.morphologyEx(
            runs, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, across)
        )
        thin |= cv2.bitwise_and(runs, cv2.bitwise_not(wide))
    # the pieces that reach the crop's edge, flooded from there (cheaper than labelling)
    seeds = [(int(x), y) for y in (0, h - 1) for x in np.flatnonzero(thin[y])]
    seeds += [(x, int(y)) for x in (0, w - 1) for y in np.flatnonzero(thin[:, x])]
    for seed in seeds:
        if thin[seed[1], seed[0]] == WHITE:
            cv2.floodFill(thin, None, seed, REACHED, flags=8)
    return np.where(thin == REACHED, WHITE, 0).astype(np.uint8)


def _crossings(ink: np.ndarray, lines: np.ndarray, ppm: float) -> np.ndarray:
    """Where print crosses a vertical ruled line (``lines``, within ``ink``): the line's pixels
    with print right beside it on both sides, going on away from it, over at most
    :data:`CROSSING_MM` along it (a stroke's width: the last digit of an amount printed over its
    cell's side). Erased with the line, the digit's strokes would end at its sides: 0 read as
    3, 4 as 1. A line run along a stroke's side, or ragged at its edges, stays a line. (Not
    horizontal lines: print above and below one is as often two lines' print as one stroke;
    joined across it, 40 pages printed 5 mm off by a dot-matrix head read 424 and 416 of 480
    fields grey and black-and-white, wrong but valid 4 and 4, against 423 and 417, 2 and 3.)"""
    thick = max(3, round(RULE_MAX_MM * ppm))
    along = max(2, round(CROSSING_MM * ppm))
    away = max(2, round(STROKE_AWAY_MM * ppm))
    crossed = np.zeros_like(lines)
    # only in bands around the vertical lines (a horizontal one is thinner than this is long):
    # a crop's cell sides, a few columns each
    vertical = cv2.morphologyEx(
        lines.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3 * along, 1), np.uint8)
    )
    pad = thick + away + 2
    columns = np.flatnonzero(vertical.any(axis=0))
    for band in np.split(columns, np.flatnonzero(np.diff(columns) > 2 * pad) + 1):
        if len(band):
            x0, x1 = max(0, band[0] - pad), band[-1] + pad + 1
            crossed[:, x0:x1] = _crossed(ink[:, x0:x1], lines[:, x0:x1], thick, along, away)
    return crossed


def _crossed(ink: np.ndarray, lines: np.ndarray, thick: int, along: int, away: int) -> np.ndarray:
    """:func:`_crossings` in a band of columns around vertical lines (sizes in px)."""
    print_ = ink & ~lines
    sides = []
    for step in (1, -1):  # from the left, from the right
        stroke = print_.copy()  # print going on away from the line, not a line's ragged edge
        for k in range(1, away):
            stroke &= _shifted(print_, k * step)
        beside = stroke | _shifted(stroke, step)  # next to the line, or one px off
        reach = np.zeros_like(lines)
        for _ in range(thick):  # through the line's width, from that side
            further = lines & _shifted(beside | reach, step)
            if np.array_equal(further, reach):  # across every line already
                break
            reach = further
        sides.append(reach)
    both = (sides[0] & sides[1]).astype(np.uint8)
    joined = cv2.morphologyEx(both, cv2.MORPH_CLOSE, np.ones((3, 1), np.uint8))  # a px or two apart
    long = cv2.morphologyEx(joined, cv2.MORPH_OPEN, np.ones((along + 1, 1), np.uint8))
    return (both > 0) & (long == 0)


def _shifted(mask: np.ndarray, step: int) -> np.ndarray:
    """``mask`` moved ``step`` px right (left when negative), nothing coming in at the edge."""
    out = np.zeros_like(mask)
    width = mask.shape[1]
    out[:, max(step, 0) : width + min(step, 0)] = mask[:, max(-step, 0) : width - max(step, 0)]
    return out


def _runs(profile: np.ndarray, threshold: float, bridge: int) -> list[tuple[int, int]]:
    """[start, end) runs where ``profile > threshold``, joining gaps up to ``bridge``."""
    on = np.concatenate(([False], profile > threshold, [False]))
    edges = np.flatnonzero(on[1:] != on[:-1])  # starts and ends, alternating
    starts, ends = edges[0::2], edges[1::2]
    if not len(starts):
        return []
    joined = np.flatnonzero(starts[1:] - ends[:-1] > bridge)  # gaps not bridged
    return list(
        zip(
            np.concatenate(([starts[0]], starts[joined + 1])).tolist(),
            np.concatenate((ends[joined], [ends[-1]])).tolist(),
            strict=True,
        )
    )


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def tighten(
    ink: np.ndarray, core: tuple[float, float, float, float], ppm: float
) -> tuple[int, int, int, int] | None:
    """(x, y, w, h) of the text line that best fills the core box, or None if there is no ink.

    The line is found on the rows of the box's columns, its extent along that line, and then the
    line once more on the columns of that extent alone, so that ink beside the text (a seal, a
    neighbour's print) does not join two lines into one.
    """
    cx, cy, cw, ch = core
    band = _best_band(ink, cx, cx + cw, cy, ch, ppm)
    if band is None:
        return None
    extent = _line_extent(ink, band, cx, cw)
    if extent is None:
        return None
    refined = _best_band(ink, extent[0], extent[1], cy, ch, ppm)
    if refined is not None and band[0] <= refined[0] and refined[1] <= band[1] and refined != band:
        band = refined
        extent = _line_extent(ink, band, cx, cw) or extent
    (top, bottom), (left, right) = band, extent
    pad = max(3, round(0.5 * (bottom - top)))  # PP-OCR reads best with its detector's margins
    h, w = ink.shape
    x0, y0 = max(0, left - pad), max(0, top - pad)
    x1, y1 = min(w, right + pad), min(h, bottom + pad)
    return x0, y0, x1 - x0, y1 - y0


def _best_band(
    ink: np.ndarray, x0: float, x1: float, cy: float, ch: float, ppm: float
) -> tuple[int, int] | None:
    """[top, bottom) of the text line on columns [x0, x1) that best fills rows [cy, cy + ch)."""
    rows = ink[:, max(0, int(x0)) : max(1, int(x1))].sum(axis=1) / 255.0
    if not rows.any():
        return None
    # the bar is set by the ink a line's rows hold, not a rule's row or two: a rule's remnant
    # across a crop holds more in a row than a short name (张伟) in any of its rows, and left
    # them under the bar; what every row of a few in a row holds tells the two apart
    few = max(3, round(0.5 * MIN_LINE_MM * ppm))
    steady = cv2.erode(rows.astype(np.float32)[:, None], np.ones((few, 1), np.uint8)).max()
    peak = min(rows.max(), 3 * float(steady))
    bands = [
        (a, b)
        for a, b in _runs(rows, max(1.0, 0.06 * peak), bridge=max(1, round(0.3 * ppm)))
        if b - a >= MIN_LINE_MM * ppm
    ]

    def score(band: tuple[int, int]) -> float:
        a, b = band
        inside = _overlap(a, b, cy, cy + ch) / (b - a)
        return float(rows[a:b].sum()) * inside * inside

    best = max(bands, key=score, default=None)
    return best if best is not None and score(best) > 0 else None


def _line_extent(
    ink: np.ndarray, band: tuple[int, int], cx: float, cw: float
) -> tuple[int, int] | None:
    """[left, right) of the text along a line: the pieces that lie mostly inside the box,
    without specks and without small pieces far from the rest."""
    top, bottom = band
    cols = ink[top:bottom].sum(axis=0) / 255.0
    line_h = bottom - top
    min_mass = 0.1 * line_h * line_h  # specks and remnants of ruling are not text
    keep = [
        (a, b)
        for a, b in _runs(cols, 0.0, bridge=round(0.9 * line_h))
        if _overlap(a, b, cx, cx + cw) > 0.5 * (b - a) and cols[a:b].sum() >= min_mass
    ]
    if not keep:
        return None
    main = max(keep, key=lambda blob: cols[blob[0] : blob[1]].sum())
    main_mass = cols[main[0] : main[1]].sum()
    keep = [
        (a, b)
        for a, b in keep
        if (a, b) == main
        or cols[a:b].sum() >= 0.15 * main_mass
        or min(abs(a - main[1]), abs(main[0] - b)) <= 2 * line_h
    ]
    left, right = keep[0][0], keep[-1][1]
    pieces = [(left + a, left + b) for a, b in _runs(cols[left:right], 0.0, bridge=0)]
    while len(pieces) > 1 and _remnant(ink[top:bottom, pieces[0][0] : pieces[0][1]]):
        pieces.pop(0)
    while len(pieces) > 1 and _remnant(ink[top:bottom, pieces[-1][0] : pieces[-1][1]]):
        pieces.pop()
    return pieces[0][0], pieces[-1][1]


def _remnant(piece: np.ndarray) -> bool:
    """Whether a piece of ink at a line's end (the line's rows, the piece's columns) is a ruled
    line's remnant, not a character: a thin stroke (a rule runs through the print where the data
    layer is printed off its cells) that is short (no character is a short thin stroke) or off
    the line's middle (一 is a long thin stroke in the middle)."""
    line_h, width = piece.shape
    rows = np.flatnonzero(piece.any(axis=1))
    if len(rows) == 0:
        return True
    thick = rows[-1] - rows[0] + 1
    middle = (rows[0] + rows[-1]) / 2 / line_h
    return thick <= max(2, REMNANT_THICK * line_h) and (
        width < REMNANT_WIDTH * line_h or not 0.3 <= middle <= 0.7
    )
