"""The benchmark's figure, drawn with Pillow (no plotting library needed).

Left: pages/s per core, full-page OCR against the ROI path and its variants (log scale).
Right: where a ROI page's CPU time goes, stage by stage, for the shipped path and variants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

STAGE_COLOURS = {
    "decode": (141, 160, 203),
    "register": (252, 141, 98),
    "crop": (102, 194, 165),
    "recognize": (231, 138, 195),
    "validate": (166, 216, 84),
    "fallback": (255, 217, 47),
}
KEPT = (56, 120, 180)
LOST = (190, 190, 190)
FULL = (200, 80, 60)


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    pages_per_s: float
    kind: str  # "full", "kept", "lost"


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def draw(
    path: Path,
    bars: Sequence[Bar],
    stages: Sequence[tuple[str, dict[str, float]]],
    title: str,
) -> None:
    width, row_h = 1500, 30
    rows = max(len(bars), len(stages) + 2)
    height = 110 + rows * row_h + 60
    img = Image.new("RGB", (width, height), "white")
    d = ImageDraw.Draw(img)
    big, small = _font(20), _font(14)
    d.text((20, 15), title, fill="black", font=big)

    # left panel: pages/s per core, log scale
    lx, lw, top = 280, 420, 80
    d.text((20, top - 25), "pages/s per core (log scale)", fill="black", font=small)
    hi = max(b.pages_per_s for b in bars) * 1.5
    lo = min(b.pages_per_s for b in bars) / 1.5
    span = math.log10(hi) - math.log10(lo)
    ticks = [m * 10.0**e for e in range(-2, 4) for m in (1, 2, 5)]
    for value in ticks:
        if lo <= value <= hi:
            x = lx + lw * (math.log10(value) - math.log10(lo)) / span
            d.line([(x, top), (x, top + len(bars) * row_h)], fill=(225, 225, 225))
            d.text((x - 10, top + len(bars) * row_h + 4), f"{value:g}", fill="grey", font=small)
    for i, bar in enumerate(bars):
        y = top + i * row_h
        colour = {"full": FULL, "kept": KEPT, "lost": LOST}[bar.kind]
        x1 = lx + lw * (math.log10(bar.pages_per_s) - math.log10(lo)) / span
        d.rectangle([lx, y + 4, x1, y + row_h - 6], fill=colour)
        d.text((20, y + 7), bar.label[:34], fill="black", font=small)
        d.text((x1 + 6, y + 7), f"{bar.pages_per_s:.2f}", fill="black", font=small)
    d.text(
        (20, top + len(bars) * row_h + 26),
        "blue: accuracy kept (no field lost vs its reference), grey: a field lost, "
        "red: full-page OCR",
        fill="grey",
        font=small,
    )

    # right panel: stacked CPU ms per stage
    rx, rw = 1010, 440
    label = "CPU ms per ROI page by stage (mean over pages)"
    d.text((760, top - 25), label, fill="black", font=small)
    longest = max(sum(s.values()) for _, s in stages) * 1.1
    for i, (label, split) in enumerate(stages):
        y = top + i * row_h
        d.text((760, y + 7), label[:30], fill="black", font=small)
        x = float(rx)
        for stage, ms in split.items():
            if ms <= 0:
                continue
            w = rw * ms / longest
            d.rectangle([x, y + 4, x + w, y + row_h - 6], fill=STAGE_COLOURS.get(stage, "grey"))
            x += w
        d.text((x + 6, y + 7), f"{sum(split.values()):.0f}", fill="black", font=small)
    y = top + len(stages) * row_h + 10
    x = 760
    for stage, colour in STAGE_COLOURS.items():
        d.rectangle([x, y + 4, x + 14, y + 18], fill=colour)
        d.text((x + 18, y + 4), stage, fill="black", font=small)
        x += 30 + 8 * len(stage)
    img.save(path)
