"""Bend: what a homography leaves of a page that does not lie flat.

A curled page, or one folded in three for its envelope, photographed on a desk: no homography
maps the reference onto it, and the form's rows arc or kink by millimetres (a page sagging by 4%
of its height leaves up to 3.5 mm after the best homography: past a field's crop margin, and
past the match score's tolerance). The form's own ruled lines say by how much, everywhere they
run: each of the reference's rules is looked for on the page (already warped onto the reference
by the homography) up to :data:`REACH_MM` above and below (left and right, for the vertical
ones), strip by strip along it, and a line found is the rule's only where the rules beside it in
the strip lie shifted as much (rules keep their spacing: a rule's window may hold its
neighbour's line, and two lines may be in it). The shifts found are smoothed into a
displacement field on a grid (locally weighted linear regression, so a field above the frame
takes the frame's slope), and each field's crop is cut through it, pixel by pixel
(:func:`extractor.crops.cut_out`).

A page that lies flat leaves at most ~0.5 mm here (the homography's own error, 0.1-0.55 mm on the
fixtures' 44 clean to geometry pages): below :data:`MIN_BEND_MM` no bend is kept, and the page
is cut through its homography alone, as before. Registration looks for a bend only on a page
that scores under :data:`extractor.registration.FLAT_SCORE`, and keeps it only where the page,
the bend taken out, matches the reference at :data:`extractor.registration.BENT_SCORE` or better.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

STRIP_MM = 8.0
"""Rules are matched in strips this wide along them: short enough to follow a rule's arc."""
REACH_MM = 4.0
"""How far off a rule is looked for."""
NEIGHBOUR_MM = 12.0
"""Rules this close in a strip are each other's check: a line found for one is its line where
the others lie shifted as much. Of two lines in a rule's window, the one its neighbours agree
with is taken, and the rule is left out there when they agree with both or neither."""
APART_MM = 2.0
"""Two rules closer than this are one to the search (and left out of it)."""
MIN_RULE_COVER = 0.6
"""A strip holds a reference rule where the rule covers this share of it, and the page's rule
is found where it covers half of that."""
GRID_MM = 8.0
SMOOTH_MM = 15.0
"""The smoothing's reach (a Gaussian's sigma): a field's shift comes from the rules within a
few centimetres."""
MIN_BEND_MM = 0.75
"""A page whose field stays within this of its homography lies flat enough (no bend kept)."""
MIN_BENT_RULES = 4
"""A bend moves many rule strips; one or two off are a mismatch (print over a rule)."""
ROUNDS = 3
"""Searches for the rules, each on the ruling with the bend found before it taken out."""


@dataclass(frozen=True, slots=True)
class Rules:
    """A reference's ruled lines of one direction, strip by strip: ``strip`` px wide strips
    along the lines; the ``k``-th line crosses strip ``at[k]`` at ``centre[k]`` (px across)."""

    vertical: bool
    strip: int
    at: np.ndarray
    centre: np.ndarray


def rules_of(lines: np.ndarray, px_per_mm: float, vertical: bool) -> Rules:
    """The horizontal (or ``vertical``) rules of a ruling map."""
    strip = max(4, round(STRIP_MM * px_per_mm))
    cover = _cover(lines, strip, vertical) > MIN_RULE_COVER
    at, centre = [], []
    for s in range(cover.shape[1]):
        across = np.flatnonzero(cover[:, s])
        runs = np.split(across, np.flatnonzero(np.diff(across) > 1) + 1) if len(across) else []
        middles = np.array([run.mean() for run in runs])
        for middle in middles:  # a double rule (a title's) blurs into one on a page: left out
            if np.count_nonzero(np.abs(middles - middle) <= APART_MM * px_per_mm) == 1:
                at.append(s)
                centre.append(float(middle))
    return Rules(vertical, strip, np.array(at, np.int64), np.array(centre, np.float64))


def _cover(lines: np.ndarray, strip: int, vertical: bool) -> np.ndarray:
    """The share of line in each row (column, ``vertical``) of each strip along them:
    (rows, strips), or (columns, strips). A rule of the other direction crossing a strip covers
    a few of its px: a rule along it, all of them."""
    rows, cols = lines.shape
    if vertical:
        n = rows // strip
        mean = cv2.resize(lines[: n * strip], (cols, n), interpolation=cv2.INTER_AREA).T
    else:
        n = cols // strip
        mean = cv2.resize(lines[:, : n * strip], (n, rows), interpolation=cv2.INTER_AREA)
    return mean.astype(np.float32) / 255


def shifts(rules: Rules, lines: np.ndarray, px_per_mm: float) -> np.ndarray:
    """Where the page's rules lie against the reference's: (K, 3) rows of (x, y, shift), px,
    for the reference rules found within reach on ``lines`` (the page's ruling map, warped onto
    the reference) with their neighbours (:data:`NEIGHBOUR_MM`) shifted as much; the shift is
    down (right, for vertical rules)."""
    if len(rules.at) == 0:
        return np.empty((0, 3))
    reach = round(REACH_MM * px_per_mm)
    span = np.arange(2 * reach + 1)
    cover = cv2.GaussianBlur(_cover(lines, rules.strip, rules.vertical), (1, 5), 0, sigmaY=1.0)
    pad = reach + 1
    padded = np.pad(cover, ((pad, pad), (0, 0)))
    start = np.rint(rules.centre).astype(np.int64)  # window k: start-reach..start+reach
    window = padded[start[:, None] + (pad - reach) + span[None, :], rules.at[:, None]]
    k = np.arange(len(start))
    best = window.argmax(axis=1)
    peak = window[k, best]
    apart = np.abs(span[None, :] - best[:, None]) > APART_MM * px_per_mm
    second = np.where(apart, window, 0).argmax(axis=1)
    rival = window[k, second]
    # rules keep their spacing: a shift is a rule's only where its neighbours in the strip lie
    # shifted by as much (a line in its window may be another rule's)
    near = (rules.at[:, None] == rules.at[None, :]) & (
        np.abs(rules.centre[:, None] - rules.centre[None, :]) <= NEIGHBOUR_MM * px_per_mm
    )
    np.fill_diagonal(near, False)
    of, neighbour = np.nonzero(near)

    def spaced(offset: np.ndarray) -> np.ndarray:
        at = start[neighbour] + offset[of] + pad
        there = np.max([padded[at + d, rules.at[neighbour]] for d in (-1, 0, 1)], axis=0)
        held = np.ones(len(start), bool)
        np.logical_and.at(held, of, there >= MIN_RULE_COVER / 2)
        return held

    best_held, second_held = spaced(best - reach), spaced(second - reach)
    alone = rival <= 0.7 * peak
    best = np.where(~alone & ~best_held & second_held, second, best)
    peak = window[k, best]
    found = (peak >= MIN_RULE_COVER / 2) & np.where(alone, best_held, best_held != second_held)
    # sub-pixel: the vertex of the parabola through the peak and its neighbours
    left = window[k, np.clip(best - 1, 0, 2 * reach)]
    right = window[k, np.clip(best + 1, 0, 2 * reach)]
    curve = np.minimum(left - 2 * peak + right, 0)
    inner = (best > 0) & (best < 2 * reach) & (curve < 0)
    sub = np.where(inner, 0.5 * (left - right) / np.where(inner, curve, -1), 0)
    shift = start - reach + best + sub - rules.centre
    along = (rules.at + 0.5) * rules.strip
    x, y = (rules.centre, along) if rules.vertical else (along, rules.centre)
    return np.stack([x, y, shift], axis=1)[found]


def smooth(points: np.ndarray, size: tuple[int, int], px_per_mm: float) -> np.ndarray:
    """Shifts measured at ``points`` ((K, 3): x, y, shift) as a field on a grid every
    :data:`GRID_MM` over a map of ``size`` (w, h): a locally weighted linear fit at each grid
    point, drawn towards 0 (the homography's own answer) where no rule is near; measurements
    the first fit disagrees with by more than half a millimetre are left out of the second."""
    step = GRID_MM * px_per_mm
    gx = np.arange(0, size[0] + step, step)
    gy = np.arange(0, size[1] + step, step)
    grid = np.stack([a.ravel() for a in np.meshgrid(gx, gy)], axis=1)
    if len(points) == 0:
        return np.zeros((len(gy), len(gx)))
    residual = np.abs(_loess(points[:, :2], points, px_per_mm) - points[:, 2])
    kept = points[residual <= max(0.5 * px_per_mm, 4.5 * float(np.median(residual)))]
    return _loess(grid, kept, px_per_mm).reshape(len(gy), len(gx))


def _loess(at: np.ndarray, points: np.ndarray, px_per_mm: float) -> np.ndarray:
    """Locally weighted linear regression of ``points`` ((K, 3): x, y, value) at ``at`` (N, 2)
    with a ridge on the slope and a prior of 0."""
    sigma = SMOOTH_MM * px_per_mm
    x = points[:, 0] / sigma
    y = points[:, 1] / sigma
    v = points[:, 2]
    ax, ay = at[:, 0:1] / sigma, at[:, 1:2] / sigma
    w = np.exp(-0.5 * ((x[None, :] - ax) ** 2 + (y[None, :] - ay) ** 2))
    # the weighted moments of (1, x - ax, y - ay) and of the values, from sums over points
    s = w @ np.stack([np.ones_like(x), x, y, x * x, x * y, y * y, v, x * v, y * v], axis=1)
    ax, ay = ax[:, 0], ay[:, 0]
    s1, sx, sy = s[:, 0], s[:, 1] - ax * s[:, 0], s[:, 2] - ay * s[:, 0]
    sxx = s[:, 3] - 2 * ax * s[:, 1] + ax * ax * s[:, 0]
    sxy = s[:, 4] - ax * s[:, 2] - ay * s[:, 1] + ax * ay * s[:, 0]
    syy = s[:, 5] - 2 * ay * s[:, 2] + ay * ay * s[:, 0]
    sv, sxv, syv = s[:, 6], s[:, 7] - ax * s[:, 6], s[:, 8] - ay * s[:, 6]
    prior, ridge = 0.05, 0.1
    a = np.stack(
        [
            np.stack([s1 + prior, sx, sy], axis=1),
            np.stack([sx, sxx + ridge, sxy], axis=1),
            np.stack([sy, sxy, syy + ridge], axis=1),
        ],
        axis=1,
    )
    b = np.stack([sv, sxv, syv], axis=1)[..., None]
    return np.linalg.solve(a, b)[:, 0, 0]


@dataclass(frozen=True, slots=True)
class Bend:
    """Where the reference's points lie on the page beyond its homography: the point at
    reference px ``p`` is at ``homography @ (p + d(p))``, ``d`` on a grid every ``step`` px
    (reference px), bilinear between its points and the nearest edge's beyond them."""

    dx: np.ndarray
    dy: np.ndarray
    step: float

    @property
    def largest(self) -> float:
        """The largest displacement on the grid, px."""
        return float(np.hypot(self.dx, self.dy).max())

    def scaled(self, factor: float) -> Bend:
        """The same bend in px ``factor`` times as large."""
        return Bend(self.dx * factor, self.dy * factor, self.step * factor)

    def moved(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``p + d(p)`` of the points (x, y) (float32 arrays of one shape, reference px)."""
        gx, gy = x / np.float32(self.step), y / np.float32(self.step)
        edge = cv2.BORDER_REPLICATE
        dx, dy = (
            cv2.remap(g.astype(np.float32), gx, gy, cv2.INTER_LINEAR, borderMode=edge)
            for g in (self.dx, self.dy)
        )
        return x + dx, y + dy

    def unmoved(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The points ``p`` whose ``p + d(p)`` are (x, y) (float32 arrays of one shape): the
        inverse of :meth:`moved`, by fixed-point iteration (the field is smooth: its slope is
        a few percent, and three steps leave hundredths of a px)."""
        px, py = x, y
        for _ in range(3):
            mx, my = self.moved(px, py)
            px, py = px + (x - mx), py + (y - my)
        return px, py

    def around(self, x: float, y: float) -> np.ndarray:
        """The affine map (3x3) that is ``p -> p + d(p)`` to first order around (x, y)."""
        h = self.step
        xs = np.float32([[x, x + h, x - h, x, x]])
        ys = np.float32([[y, y, y, y + h, y - h]])
        mx, my = (m[0].astype(np.float64) for m in self.moved(xs, ys))
        jac = np.array(
            [
                [(mx[1] - mx[2]) / (2 * h), (mx[3] - mx[4]) / (2 * h)],
                [(my[1] - my[2]) / (2 * h), (my[3] - my[4]) / (2 * h)],
            ]
        )
        affine = np.eye(3)
        affine[:2, :2] = jac
        affine[:2, 2] = np.array([mx[0], my[0]]) - jac @ np.array([x, y])
        return affine

    def undo(self, *images: np.ndarray) -> tuple[np.ndarray, ...]:
        """``images`` (maps of one size warped onto the reference through the homography, at
        this bend's px) with the bend taken out: their point ``p + d(p)`` moved to ``p`` (0
        beyond them)."""
        h, w = images[0].shape[:2]
        xx = np.tile(np.arange(w, dtype=np.float32), (h, 1))
        yy = np.repeat(np.arange(h, dtype=np.float32)[:, None], w, axis=1)
        mx, my = self.moved(xx, yy)
        return tuple(cv2.remap(i, mx, my, cv2.INTER_NEAREST, borderValue=0) for i in images)


def find_bend(
    horizontal: Rules, vertical: Rules, lines: np.ndarray, px_per_mm: float
) -> Bend | None:
    """The bend of a page whose ruling, warped onto the reference (work px) through its
    homography, is ``lines``; None when it lies flat: fewer than :data:`MIN_BENT_RULES` of its
    rules lie :data:`MIN_BEND_MM` off, or the smoothed field stays within that.

    Rules bent further than :data:`REACH_MM` (near a fold, where the homography fitted the
    halves) are not found at first; the field smoothed from those found brings them closer, so
    the search is made again (up to :data:`ROUNDS` times) on the ruling with the bend found so
    far taken out, and what it finds added, while that moves something by
    :data:`MIN_BEND_MM` (each round's smoothing falls short of a large bend's peak: a 6 mm bow
    is followed to ~4.5 mm, where one search, blind past 4 mm, stayed at 0.3 mm in its middle;
    rounds of smaller steps chased noise into the field: two names cut short, valid, on pages
    folded by 5%)."""
    size = (lines.shape[1], lines.shape[0])
    grid = GRID_MM * px_per_mm
    bend: Bend | None = None
    for _ in range(ROUNDS):
        ruling = lines if bend is None else bend.undo(lines)[0]
        found_y = shifts(horizontal, ruling, px_per_mm)
        found_x = shifts(vertical, ruling, px_per_mm)
        off = np.count_nonzero(np.abs(found_y[:, 2]) >= MIN_BEND_MM * px_per_mm)
        off += np.count_nonzero(np.abs(found_x[:, 2]) >= MIN_BEND_MM * px_per_mm)
        if off < MIN_BENT_RULES:
            break
        step = Bend(smooth(found_x, size, px_per_mm), smooth(found_y, size, px_per_mm), grid)
        if step.largest < MIN_BEND_MM * px_per_mm:
            break
        bend = step if bend is None else Bend(bend.dx + step.dx, bend.dy + step.dy, grid)
    return bend if bend is not None and bend.largest >= MIN_BEND_MM * px_per_mm else None
