"""Drawing in millimetres: ink layers (alpha masks) at a given resolution, and compositing.

A :class:`Layer` is one ink (the form's brown, the printer's black, a seal's red) as coverage in
[0, 1]. Layers are laid on paper by multiplication, as inks on paper combine, so black text
under a red seal stays black and a seal over brown lines darkens them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image, ImageDraw

from extractor.synth.fonts import font

MM_PER_INCH = 25.4

# Characters printed with the Latin (monospace) font of a mixed line; the rest use the CJK font.
LATIN = frozenset(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    " !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¥⊗×№"
)

# Where a line's visual centre lies above the baseline, in em (CJK ideographs and Latin digits
# of the fonts used both sit close to this).
CENTRE_ABOVE_BASELINE = 0.37


def px_per_mm(dpi: float) -> float:
    return dpi / MM_PER_INCH


@dataclass(frozen=True, slots=True)
class TextBox:
    """The ink extent of drawn text, in mm (x0, y0, x1, y1)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def as_xywh(self) -> list[float]:
        return [
            round(self.x0, 2),
            round(self.y0, 2),
            round(self.x1 - self.x0, 2),
            round(self.y1 - self.y0, 2),
        ]


def _coverage(lo: float, hi: float, n: int) -> tuple[int, np.ndarray]:
    """Per-pixel coverage of the interval [lo, hi) (pixel units) on pixels 0..n-1."""
    start = max(0, math.floor(lo))
    stop = min(n, math.ceil(hi))
    if stop <= start:
        return start, np.zeros(0, np.float32)
    idx = np.arange(start, stop, dtype=np.float32)
    cov = np.clip(np.minimum(idx + 1, hi) - np.maximum(idx, lo), 0, 1)
    return start, cov.astype(np.float32)


def runs(text: str, cjk: str, latin: str) -> list[tuple[str, str]]:
    """Split ``text`` into (font, run) pieces: Latin characters in ``latin``, others ``cjk``."""
    out: list[tuple[str, str]] = []
    for ch in text:
        name = latin if ch in LATIN else cjk
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + ch)
        else:
            out.append((name, ch))
    return out


class Layer:
    """One ink's coverage over a page of ``width_mm`` x ``height_mm`` at ``dpi``."""

    def __init__(self, width_mm: float, height_mm: float, dpi: float) -> None:
        self.ppm = px_per_mm(dpi)
        self.width_mm = width_mm
        self.height_mm = height_mm
        self.w = round(width_mm * self.ppm)
        self.h = round(height_mm * self.ppm)
        self.arr = np.zeros((self.h, self.w), np.float32)
        self._pil = Image.new("L", (self.w, self.h), 0)
        self._draw = ImageDraw.Draw(self._pil)

    # -- geometry -------------------------------------------------------------------------

    def rect(self, x0: float, y0: float, x1: float, y1: float, value: float = 1.0) -> None:
        """Fill an axis-aligned rectangle (mm), anti-aliased exactly at its edges."""
        xs, cx = _coverage(x0 * self.ppm, x1 * self.ppm, self.w)
        ys, cy = _coverage(y0 * self.ppm, y1 * self.ppm, self.h)
        if cx.size and cy.size:
            region = self.arr[ys : ys + cy.size, xs : xs + cx.size]
            np.maximum(region, np.outer(cy, cx) * value, out=region)

    def cells(self, x0: float, y0: float, cell: float, mask: np.ndarray) -> None:
        """Fill the true cells of a boolean grid whose top-left corner is at (x0, y0) mm.

        Coverage is the exact area of each pixel under dark cells, so neighbouring cells join
        without seams (a QR code's modules).
        """
        rows, cols = mask.shape

        def weights(origin: float, n: int, limit: int) -> tuple[int, np.ndarray]:
            edges = origin * self.ppm + np.arange(n + 1) * cell * self.ppm
            start, stop = max(0, math.floor(edges[0])), min(limit, math.ceil(edges[-1]))
            p = np.arange(start, stop, dtype=np.float64)[:, None]
            w = np.clip(np.minimum(p + 1, edges[None, 1:]) - np.maximum(p, edges[None, :-1]), 0, 1)
            return start, w

        xs, wx = weights(x0, cols, self.w)
        ys, wy = weights(y0, rows, self.h)
        cover = (wy @ mask.astype(np.float64) @ wx.T).astype(np.float32)
        region = self.arr[ys : ys + cover.shape[0], xs : xs + cover.shape[1]]
        np.maximum(region, np.clip(cover, 0, 1), out=region)

    def hline(self, y: float, x0: float, x1: float, t: float) -> None:
        self.rect(x0 - t / 2, y - t / 2, x1 + t / 2, y + t / 2)

    def vline(self, x: float, y0: float, y1: float, t: float) -> None:
        self.rect(x - t / 2, y0 - t / 2, x + t / 2, y1 + t / 2)

    def box(self, x0: float, y0: float, x1: float, y1: float, t: float) -> None:
        self.hline(y0, x0, x1, t)
        self.hline(y1, x0, x1, t)
        self.vline(x0, y0, y1, t)
        self.vline(x1, y0, y1, t)

    def dashed_vline(
        self, x: float, y0: float, y1: float, t: float, dash: float, gap: float, value: float
    ) -> None:
        y = y0
        while y < y1:
            self.rect(x - t / 2, y, x + t / 2, min(y + dash, y1), value)
            y += dash + gap

    def ellipse(
        self, cx: float, cy: float, rx: float, ry: float, t: float, angle: float = 0.0
    ) -> None:
        """An elliptical ring (mm) of stroke ``t``; ``t <= 0`` fills it."""
        shift = 4
        k = self.ppm * (1 << shift)
        canvas = np.zeros_like(self.arr, np.uint8)
        thickness = -1 if t <= 0 else max(1, round(t * self.ppm))
        cv2.ellipse(
            canvas,
            (round(cx * k), round(cy * k)),
            (round(rx * k), round(ry * k)),
            angle,
            0,
            360,
            255,
            thickness,
            cv2.LINE_AA,
            shift,
        )
        np.maximum(self.arr, canvas.astype(np.float32) / 255, out=self.arr)

    def polygon(self, points_mm: Iterable[tuple[float, float]], value: float = 1.0) -> None:
        shift = 4
        k = self.ppm * (1 << shift)
        pts = np.array([[round(x * k), round(y * k)] for x, y in points_mm], np.int32)
        canvas = np.zeros_like(self.arr, np.uint8)
        cv2.fillPoly(canvas, [pts], 255, cv2.LINE_AA, shift)
        np.maximum(self.arr, canvas.astype(np.float32) / 255 * value, out=self.arr)

    # -- text -----------------------------------------------------------------------------

    def text_width(
        self, text: str, size: float, cjk: str = "ming", latin: str = "mono", spacing: float = 0.0
    ) -> float:
        """Advance width (mm) of ``text`` at an em size of ``size`` mm."""
        total = sum(
            font(name, size * self.ppm).getlength(run) for name, run in runs(text, cjk, latin)
        )
        return total / self.ppm + spacing * max(0, len(text) - 1)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float,
        *,
        cjk: str = "ming",
        latin: str = "mono",
        align: str = "left",
        spacing: float = 0.0,
        stroke: float = 0.0,
        value: float = 1.0,
    ) -> TextBox | None:
        """Draw one line whose visual centre is at height ``y`` (mm).

        ``x`` is the left edge, the centre or the right edge for ``align`` left, centre, right.
        ``spacing`` adds mm between characters; ``stroke`` thickens strokes (mm, faux bold).
        Returns the ink's bounding box in mm (None for blank text).
        """
        width = self.text_width(text, size, cjk, latin, spacing)
        if align == "centre":
            x -= width / 2
        elif align == "right":
            x -= width
        baseline = (y + CENTRE_ABOVE_BASELINE * size) * self.ppm
        pen = x * self.ppm
        fill = round(255 * value)
        stroke_px = round(stroke * self.ppm)
        box: list[float] | None = None
        pieces = [(n, r) for n, r in runs(text, cjk, latin)]
        if spacing:
            pieces = [(n, ch) for n, r in pieces for ch in r]
        for name, run in pieces:
            f = font(name, size * self.ppm)
            if run.strip():
                self._draw.text(
                    (pen, baseline),
                    run,
                    font=f,
                    fill=fill,
                    anchor="ls",
                    stroke_width=stroke_px,
                    stroke_fill=fill,
                )
                b = self._draw.textbbox(
                    (pen, baseline), run, font=f, anchor="ls", stroke_width=stroke_px
                )
                box = (
                    list(b)
                    if box is None
                    else [
                        min(box[0], b[0]),
                        min(box[1], b[1]),
                        max(box[2], b[2]),
                        max(box[3], b[3]),
                    ]
                )
            pen += f.getlength(run) + spacing * self.ppm
        if box is None:
            return None
        return TextBox(*(v / self.ppm for v in box))

    def glyph(
        self,
        ch: str,
        cx: float,
        cy: float,
        size: float,
        angle: float,
        name: str = "hei",
        stroke: float = 0.0,
    ) -> None:
        """One character centred at (cx, cy) mm, turned ``angle`` degrees counter-clockwise."""
        f = font(name, size * self.ppm)
        side = math.ceil(size * self.ppm * 1.6) + 4
        tile = Image.new("L", (side, side), 0)
        stroke_px = round(stroke * self.ppm)
        ImageDraw.Draw(tile).text(
            (side / 2, side / 2),
            ch,
            font=f,
            fill=255,
            anchor="mm",
            stroke_width=stroke_px,
            stroke_fill=255,
        )
        tile = tile.rotate(angle, resample=Image.Resampling.BICUBIC)
        self.paste(
            np.asarray(tile, np.float32) / 255, cx * self.ppm - side / 2, cy * self.ppm - side / 2
        )

    def paste(self, tile: np.ndarray, left_px: float, top_px: float) -> None:
        """Max-combine a coverage tile whose top-left corner lands at (left_px, top_px)."""
        x0, y0 = round(left_px), round(top_px)
        h, w = tile.shape
        ax0, ay0 = max(0, x0), max(0, y0)
        ax1, ay1 = min(self.w, x0 + w), min(self.h, y0 + h)
        if ax1 <= ax0 or ay1 <= ay0:
            return
        region = self.arr[ay0:ay1, ax0:ax1]
        np.maximum(region, tile[ay0 - y0 : ay1 - y0, ax0 - x0 : ax1 - x0], out=region)

    def alpha(self) -> np.ndarray:
        """The layer's coverage, float32 in [0, 1]."""
        return np.maximum(self.arr, np.asarray(self._pil, np.float32) / 255)


def compose(
    paper: np.ndarray, layers: Iterable[tuple[np.ndarray, tuple[int, int, int]]]
) -> np.ndarray:
    """Lay inks on paper (float32 HxWx3 BGR in [0, 1]); each layer is (alpha, BGR colour 0-255)."""
    out = paper.copy()
    for alpha, colour in layers:
        absorb = 1.0 - np.asarray(colour, np.float32) / 255.0
        out *= 1.0 - alpha[..., None] * absorb
    return out


def to_uint8(image: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(image * 255.0), 0, 255).astype(np.uint8)
