"""Red oval seals: the preprinted 发票监制章 over the title and the seller's 发票专用章."""

from __future__ import annotations

import math

import cv2
import numpy as np

from extractor.synth.raster import Layer

SEAL_RED = (52, 40, 214)  # BGR


def _arc_positions(rx: float, ry: float, n: int, span_deg: float) -> list[float]:
    """Parametric angles of n points spread evenly by arc length over the top of an ellipse."""
    ts = np.linspace(math.radians(-90 - span_deg / 2), math.radians(-90 + span_deg / 2), 721)
    xs, ys = rx * np.cos(ts), ry * np.sin(ts)
    seg = np.hypot(np.diff(xs), np.diff(ys))
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    if n == 1:
        return [math.radians(-90)]
    targets = np.linspace(0, cum[-1], n)
    return [float(np.interp(t, cum, ts)) for t in targets]


def _arc_length(rx: float, ry: float, span_deg: float) -> float:
    ts = np.linspace(math.radians(-90 - span_deg / 2), math.radians(-90 + span_deg / 2), 721)
    return float(np.hypot(np.diff(rx * np.cos(ts)), np.diff(ry * np.sin(ts))).sum())


def _star(layer: Layer, cx: float, cy: float, r: float) -> None:
    pts = []
    for k in range(10):
        radius = r if k % 2 == 0 else r * 0.4
        a = math.radians(-90 + 36 * k)
        pts.append((cx + radius * math.cos(a), cy + radius * math.sin(a)))
    layer.polygon(pts)


def oval_seal(
    rx: float,
    ry: float,
    dpi: float,
    *,
    arc_text: str,
    middle: list[tuple[str, float, str]],
    bottom: str,
    star: bool,
    border: float = 1.0,
) -> np.ndarray:
    """An upright seal as a coverage tile (2rx+2 by 2ry+2 mm around its centre).

    ``middle`` lines are (text, em size mm, Latin font name), centred, from top to bottom.
    """
    pad = 1.0
    layer = Layer(2 * (rx + pad), 2 * (ry + pad), dpi)
    cx, cy = rx + pad, ry + pad
    layer.ellipse(cx, cy, rx - border / 2, ry - border / 2, border)
    n = len(arc_text)
    span = min(250.0, 70.0 + 12.0 * n)
    size = min(4.6, 0.8 * _arc_length(rx - border - 2.6, ry - border - 2.6, span) / max(n, 1))
    inner_rx, inner_ry = rx - border - 0.7 * size - 0.4, ry - border - 0.7 * size - 0.4
    for ch, t in zip(arc_text, _arc_positions(inner_rx, inner_ry, n, span), strict=True):
        x, y = cx + inner_rx * math.cos(t), cy + inner_ry * math.sin(t)
        nx, ny = math.cos(t) / inner_rx, math.sin(t) / inner_ry
        angle = math.degrees(math.atan2(-nx, -ny))
        layer.glyph(ch, x, y, size, angle, name="hei", stroke=0.05)
    lines = len(middle)
    if star:
        _star(layer, cx, cy - 0.3 * ry, 0.15 * ry)
        y = cy + 0.06 * ry
    else:
        y = cy + 0.12 * ry - (lines - 1) * 0.55 * middle[0][1] if middle else cy
    for text, em, latin in middle:
        width = layer.text_width(text, em, cjk="hei", latin=latin)
        fit = min(em, em * (2 * rx - 13) / width) if width else em
        layer.text(cx, y, text, fit, cjk="hei", latin=latin, align="centre")
        y += em * 1.15
    if bottom:
        layer.text(
            cx, cy + ry * 0.58, bottom, min(3.8, 0.3 * ry), cjk="hei", align="centre", stroke=0.04
        )
    return layer.alpha()


def invoice_seal(name: str, tax_id: str, dpi: float) -> np.ndarray:
    """A seller's 发票专用章 as a coverage tile: its name round the rim, its tax id across, a
    star (:func:`oval_seal`, 40 x 26 mm)."""
    return oval_seal(
        20.0,
        13.0,
        dpi,
        arc_text=name,
        middle=[(tax_id, 3.0, "sans_condensed")],
        bottom="发票专用章",
        star=True,
    )


def place(
    page: Layer, tile: np.ndarray, cx: float, cy: float, angle_deg: float, strength: float = 1.0
) -> None:
    """Turn a seal tile ``angle_deg`` counter-clockwise and stamp it centred at (cx, cy) mm."""
    h, w = tile.shape
    side = math.ceil(math.hypot(w, h)) + 2
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle_deg, 1.0)
    m[:, 2] += ((side - w) / 2, (side - h) / 2)
    rotated = cv2.warpAffine(tile, m, (side, side), flags=cv2.INTER_LINEAR)
    page.paste(rotated * strength, cx * page.ppm - side / 2, cy * page.ppm - side / 2)
