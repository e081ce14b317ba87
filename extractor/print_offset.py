"""Print offset: how far above or below the form's cells the printer put the whole data layer.

Printers feed a preprinted form millimetres off, sometimes a whole line (a buyer's name printed
3 mm low lies between its box and the tax id's box, 5 mm apart): each field cut around its own
box, with its margin of 2.5 mm, may then hold its neighbour's line instead of its own, and a
wrong line can pass its checks. The offset is the page's, not a field's: it is found on the page's
ink warped onto the form (registration's working copy, :attr:`Alignment.on_form`), the form's own
ink (its rules and labels) left out, as the shift of every field's box at which the print fills
the boxes and leaves the gaps just above and below them empty. Fields are then cut around their
boxes moved by it (:func:`extractor.crops.crop_fields`), and tightened to their lines as before.
"""

from __future__ import annotations

import cv2
import numpy as np

from extractor.registration import reference_for
from extractor.templates import Template

REACH_MM = 6.0
"""How far up or down the print is looked for: beyond a line of the buyer's block (5 mm)."""
GAP_MM = 1.0
"""The band just above and below a box that the print of a line leaves empty."""
LINE_MM = 4.0
"""A shift this far or more is a line off (the buyer's block's rows are 5 mm apart)."""
TIE = 0.3
"""A line off whose fit no shift's comes this close to (a share of it) is taken; else none.
Printed a line off, a page's unshifted boxes fit 0.73-1.0 less than its shifted ones
(`bench.offset --max-mm 2 --max-down-mm 6`, 40 pages each printed as drawn, dot by dot and
scanned black and white, scanned grey); an e-invoice, whose data the PDF lays out with its
form (no offset possible), fit a line down better by up to 0.10 (its top band holds other
print than the paper form's boxes): 0.05 took 6 of 120 e-invoice photos a line down, every
field of their buyer's and seller's blocks reading its neighbour's line."""
MIN_OFFSET_MM = 1.5
"""Smaller offsets are left to the crops (their margin and each line's own tightening): the
page's fields are cut as if there were none."""


def print_offset(on_form: np.ndarray, template: Template) -> float:
    """The data layer's offset down from the form's cells (reference px of ``template``; up is
    negative), or 0 under :data:`MIN_OFFSET_MM`. ``on_form``: the page's ink on the reference,
    at its working px (:attr:`Alignment.on_form`)."""
    ref = reference_for(template)
    ppm = ref.px_per_mm
    ink = cv2.bitwise_and(on_form, ref.paper)  # the print, the form's own ink left out
    boxes = np.array([spec.box.as_list() for spec in template.fields]) * ppm  # x, y, w, h
    x0 = np.clip(np.rint(boxes[:, 0]).astype(np.int64), 0, ink.shape[1] - 1)
    x1 = np.clip(np.rint(boxes[:, 0] + boxes[:, 2]).astype(np.int64), x0 + 1, ink.shape[1])
    # rows[y, f]: the share of ink in rows [0, y) of field f's columns, summed
    integral = cv2.integral(ink)
    rows = (integral[:, x1] - integral[:, x0]) / (255.0 * (x1 - x0))
    reach, gap = round(REACH_MM * ppm), max(1, round(GAP_MM * ppm))
    shifts = np.arange(-reach, reach + 1)
    top = np.rint(boxes[:, 1])[None, :].astype(np.int64) + shifts[:, None]
    bottom = np.rint(boxes[:, 1] + boxes[:, 3])[None, :].astype(np.int64) + shifts[:, None]
    around = (_filled(rows, top - gap, top) + _filled(rows, bottom, bottom + gap)) / 2
    fit = (_filled(rows, top, bottom) - around).sum(axis=1)
    fit = np.convolve(fit, np.ones(3) / 3, mode="same")  # the middle of a plateau
    best = float(shifts[int(fit.argmax())])
    # a line off fits as well as none where the rows are as far apart as the shift (the
    # buyer's block): a form whose boxes the print fills unshifted keeps them
    unshifted = fit[np.abs(shifts) < MIN_OFFSET_MM * ppm].max()  # what the crops take up
    if abs(best) >= LINE_MM * ppm and unshifted >= fit.max() - TIE * abs(fit.max()):
        best = 0.0
    return best / ref.scale if abs(best) >= MIN_OFFSET_MM * ppm else 0.0


def _filled(rows: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """The share of ink in rows [top, bottom) of each field (a column of ``rows``, running sums
    of each row's share; ``top`` and ``bottom``: (shifts, fields))."""
    last = len(rows) - 1
    top, bottom = np.clip(top, 0, last), np.clip(bottom, 0, last)
    fields = np.arange(rows.shape[1])[None, :]
    return (rows[bottom, fields] - rows[top, fields]) / np.maximum(1, bottom - top)
