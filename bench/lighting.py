"""``python -m bench.lighting``: the fields read under the light a phone photo is taken in.

The fixtures' light and medium pages (22 scans, 264 fields) relit the way photos and tired
scanners light a page, each condition on all of them: a shadow darkening one side, a soft-edged
shadow of a hand or a phone over part of the page, vignetting, an underexposed photo, colour
casts. It prints the field-level tally (``extractor.evaluate``) per condition, the fallback on
(``auto``, as the service runs). No page is tuned for: the conditions are fixed transforms of
the committed fixtures, the same on every run.

    python -m bench.lighting                    # every condition, ~4 minutes on one core
    python -m bench.lighting --conditions shadow,hand
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from extractor.evaluate import Tally
from extractor.pipeline import Extractor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LEVELS = ("light", "medium")

Relight = Callable[[np.ndarray, int], np.ndarray]  # (float32 BGR page, page number) -> page


def _ramp(page: np.ndarray, left: float, top: float = 1.0) -> np.ndarray:
    """Brightness from ``left`` at the left edge to 1 at the right, times ``top`` at the top
    edge to 1 at the bottom."""
    h, w = page.shape[:2]
    across = np.linspace(left, 1.0, w, dtype=np.float32)[None, :]
    down = np.linspace(top, 1.0, h, dtype=np.float32)[:, None]
    return page * (across * down)[..., None]


def _hand(page: np.ndarray, number: int) -> np.ndarray:
    """A soft-edged shadow at 45% over the part of the page beyond a line at a random angle
    (seeded by the page's number), its edge soft over 15% of the page's width."""
    rng = np.random.default_rng(number)
    angle, at = rng.uniform(0, 2 * np.pi), rng.uniform(0.3, 0.7)
    h, w = page.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    side = ((xx / w - at) * np.cos(angle) + (yy / h - 0.5) * np.sin(angle)) / 0.15
    return page * (0.45 + 0.55 * np.clip(side + 0.5, 0, 1))[..., None]


def _vignette(page: np.ndarray, _: int) -> np.ndarray:
    h, w = page.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = (((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (h / 2)) ** 2) / 2
    return page * (1 - 0.5 * r2)[..., None]


CONDITIONS: dict[str, tuple[str, Relight]] = {
    "as scanned": ("the fixtures as they are", lambda page, _: page),
    "gentle": ("75% at the left edge to 100% at the right", lambda p, _: _ramp(p, 0.75)),
    "shadow": ("35% at the left edge to 100%, 80% at the top", lambda p, _: _ramp(p, 0.35, 0.8)),
    "hand": ("a soft-edged shadow at 45% over part of the page", _hand),
    "vignette": ("50% in the corners", _vignette),
    "dim": ("an underexposed photo: 55% throughout", lambda p, _: p * 0.55 + 10),
    "cool": ("a blue cast: green 90%, red 62%", lambda p, _: p * np.float32([1, 0.9, 0.62])),
    "warm": (
        "tungsten: blue 65%, green 79%, red 90%",
        lambda p, _: p * np.float32([0.65, 0.79, 0.9]),
    ),
}


def relit(path: Path, relight: Relight, number: int) -> bytes:
    """The scan at ``path`` relit, as a JPEG of quality 80 (what a phone saves)."""
    page = cv2.imread(str(path)).astype(np.float32)
    out = np.clip(relight(page, number), 0, 255).astype(np.uint8)
    ok, jpeg = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, 80])
    assert ok
    return jpeg.tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    args = parser.parse_args()
    tally_conditions(CONDITIONS, args.conditions, "light", parser)


def tally_conditions(
    conditions: dict[str, tuple[str, Relight]],
    chosen: str,
    column: str,
    parser: argparse.ArgumentParser,
) -> None:
    """Print the field-level tally of the light and medium fixtures under each of the
    ``chosen`` (comma-separated) ``conditions``, one table row each."""
    names = [c.strip() for c in chosen.split(",") if c.strip()]
    unknown = [n for n in names if n not in conditions]
    if unknown:
        parser.error(f"unknown condition(s) {', '.join(unknown)}: one of {', '.join(conditions)}")
    pages = sorted(p for level in LEVELS for p in (FIXTURES / level).glob("*.jpg"))
    extractor = Extractor(threads=1)
    print(f"{len(pages)} pages ({' and '.join(LEVELS)} fixtures), fallback auto\n")
    print(f"| {column} | fields right | right but flagged | wrong and flagged | wrong but valid | "
          "from the fallback |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for name in names:
        what, change = conditions[name]
        tally = Tally()
        for number, path in enumerate(pages):
            truth = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
            (page,) = extractor.extract(relit(path, change, number), "vat_invoice").pages
            for field, expected in truth["pages"][0]["fields"].items():
                tally.add(expected, page.fields.get(field))
        print(
            f"| {name}: {what} | {tally.exact}/{tally.fields} | {tally.right_flagged} | "
            f"{tally.wrong_flagged} | {tally.wrong_valid} | {tally.fallback} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
