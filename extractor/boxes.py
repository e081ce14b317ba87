"""Upright boxes (x0, y0, x1, y1), as the modules that compare them hold them."""

from __future__ import annotations

Box = tuple[float, float, float, float]


def smaller_share(a: Box, b: Box) -> float:
    """The share of the smaller of two boxes that lies in both."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return width * height / smaller if smaller > 0 else 0.0
