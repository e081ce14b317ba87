"""An e-invoice printed on an office sheet: a 数电票 or a 增值税电子普通发票 is a PDF, and the
office prints it on the A4 paper its printer holds, at the top of the sheet, scaled down to the
printable width where the invoice is wider ("fit to page"). The sheet is then scanned or
photographed whole, the invoice a half of it or less."""

from __future__ import annotations

import random
from dataclasses import replace

import cv2
import numpy as np

from extractor.synth.degrade import Scan, degrade
from extractor.synth.pages import A4_H, A4_W
from extractor.synth.render import RenderedPage, paper

MARGIN_MM = 5.0
"""An office printer's unprintable edge, each side: a 210 mm wide 数电票 is printed at 0.95, a
240 mm wide 增值税电子普通发票 at 0.83."""
TOP_MM = (5.0, 15.0)
"""Where the invoice's top lands on the sheet: the printable edge, and the PDF's own margin."""


def on_a4(page: RenderedPage, rng: random.Random) -> tuple[RenderedPage, np.ndarray]:
    """``page`` printed at the top of a portrait A4 sheet, centred, scaled down to the printable
    width where it is wider: its ink (what is darker than its paper) multiplies the sheet's
    paper. Returns the sheet and the 3 x 3 map from ``page``'s mm to the sheet's mm."""
    sheet_w, sheet_h = A4_W, A4_H
    ppm = page.dpi / 25.4
    h, w = round(sheet_h * ppm), round(sheet_w * ppm)
    scale = min(1.0, (sheet_w - 2 * MARGIN_MM) / page.width_mm)
    white = np.percentile(page.image.reshape(-1, page.image.shape[2]), 90, axis=0)
    ink = page.image.astype(np.float32) / np.maximum(white, 1).astype(np.float32)
    ph, pw = ink.shape[:2]
    size = (round(pw * scale), round(ph * scale))
    if scale < 1:
        ink = cv2.resize(ink, size, interpolation=cv2.INTER_AREA)
    x0, y0 = (w - size[0]) // 2, round(rng.uniform(*TOP_MM) * ppm)
    base = (240 + rng.uniform(-4, 4), 244 + rng.uniform(-3, 3), 246 + rng.uniform(-3, 3))
    image = paper(h, w, np.random.default_rng(rng.getrandbits(64)), base)
    image[y0 : y0 + size[1], x0 : x0 + size[0]] *= np.clip(ink, 0.0, 1.0)
    sheet = np.clip(image * 255 + 0.5, 0, 255).astype(np.uint8)
    sx, sy = size[0] / pw, size[1] / ph
    to_sheet = np.array([[sx, 0.0, x0 / ppm], [0.0, sy, y0 / ppm], [0.0, 0.0, 1.0]])
    where = {"size_mm": [A4_W, A4_H], "scale": round(sx, 4), "top_mm": round(y0 / ppm, 2)}
    holes = np.zeros((h, w), np.float32)
    return RenderedPage(
        sheet, holes, page.dpi, sheet_w, sheet_h, {**page.info, "sheet": where}
    ), to_sheet


def degrade_on(page: RenderedPage, level: str, rng: random.Random, a4: bool) -> Scan:
    """:func:`~extractor.synth.degrade.degrade` of ``page``, or (``a4``) of the A4 sheet it is
    printed on; the scan's ``page_to_image`` maps ``page``'s mm either way."""
    if not a4:
        return degrade(page, level, rng)
    sheet, to_sheet = on_a4(page, random.Random(f"a4:{rng.random()}"))
    scan = degrade(sheet, level, rng)
    params = {"sheet": sheet.info["sheet"], **scan.params}
    return replace(scan, params=params, page_to_image=scan.page_to_image @ to_sheet)
