"""``python -m bench.bends``: the fields read on pages that do not lie flat.

Invoices are torn off a printer's roll, folded in three for an envelope, kept curled in a
drawer, and photographed on a desk as they are: no homography maps their form onto its
template, and a field's box lands millimetres off its print (:mod:`extractor.bend` measures
and takes out what the homography leaves). The fixtures' light and medium pages (22 scans, 264
fields) bent the ways paper bends, each condition on all of them, saved as a phone saves them
(JPEG 80); the field-level tally (``extractor.evaluate``) per condition, the fallback on
(``auto``, as the service runs). The bends are fixed transforms of the committed fixtures, the
same on every run.

    python -m bench.bends                       # every condition, ~6 minutes on one core
    python -m bench.bends --conditions sag,fold
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import cv2
import numpy as np

from bench.lighting import Relight, tally_conditions

Displace = Callable[[np.ndarray, np.ndarray, int, int], tuple[np.ndarray, np.ndarray]]
"""(x, y, width, height) of each pixel of the bent image -> where it comes from on the flat one."""


def bent(displace: Displace) -> Relight:
    """The page bent: each pixel taken from where ``displace`` says it comes from."""

    def change(page: np.ndarray, _: int) -> np.ndarray:
        h, w = page.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        sx, sy = displace(xx, yy, w, h)
        return cv2.remap(page, sx, sy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)

    return change


def _sag(amount: float) -> Displace:
    """Every row arcs down by up to ``amount`` of the height in the middle."""
    return lambda x, y, w, h: (x, y - amount * h * np.sin(np.pi * x / w))


def _bulge(amount: float) -> Displace:
    """The middle nearer the camera: rows spread apart by up to ``amount`` in the middle."""
    return lambda x, y, w, h: (x, h / 2 + (y - h / 2) / (1 + amount * np.sin(np.pi * x / w)))


def _fold(slope: float) -> Displace:
    """A crease down the page at 45% of its width, each half tilted by ``slope``."""
    return lambda x, y, w, h: (x, y - slope * np.abs(x - 0.45 * w))


def _crease(slope: float) -> Displace:
    """A crease across the page at 40% of its height, each half slanted by ``slope``."""
    return lambda x, y, w, h: (x - slope * np.abs(y - 0.4 * h), y)


CONDITIONS: dict[str, tuple[str, Relight]] = {
    "flat": ("the fixtures as they are", lambda page, _: page),
    "sag": ("rows sagging by 2% of the height in the middle", bent(_sag(0.02))),
    "sag more": ("rows sagging by 4%", bent(_sag(0.04))),
    "bulge": ("the middle 8% nearer the camera", bent(_bulge(0.08))),
    "fold": ("a crease down the page, halves tilted by 1.5%", bent(_fold(0.015))),
    "fold more": ("a crease down the page, halves tilted by 3%", bent(_fold(0.03))),
    "crease": ("a crease across the page, halves slanted by 3%", bent(_crease(0.03))),
    "fold most": ("a crease down the page, halves tilted by 5%", bent(_fold(0.05))),
    "sag most": ("rows sagging by 6%", bent(_sag(0.06))),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    args = parser.parse_args()
    tally_conditions(CONDITIONS, args.conditions, "bend", parser)


if __name__ == "__main__":
    main()
