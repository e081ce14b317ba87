"""``python -m bench.offset``: data printed far off the preprinted form.

Paper VAT invoices are printed onto preprinted forms, and printers put the data several
millimetres off the cells, sometimes over the labels. The fixture levels offset the print by up
to 3-5 mm; this prints invoices up to ``--max-mm`` (7.5 by default) left or right of the form and
up to 1.5 mm up or down, with nothing else done to them (the printed page itself, as PNG: no
scan), on seeds outside the fixtures. It prints the field-level tally (``extractor.evaluate``)
and every wrong value with the page's offset, the template path alone (fallback ``never``).

    python -m bench.offset              # 40 pages, ~1 minute on one core
    python -m bench.offset --pages 10 --max-mm 5

Paper invoices are filled in by dot-matrix printers and often scanned black and white, where
the form's rules, labels and the seller's seal are as black as the print: ``--pins`` prints
the data dot by dot (:class:`extractor.synth.render.Pins`), ``--scan bw`` thresholds the page
as a scanner's black-and-white mode does (``grey``: a grey scan, JPEG 80).

    python -m bench.offset --max-mm 5 --pins lq --scan bw
"""

from __future__ import annotations

import argparse
import random

import cv2
import numpy as np

from extractor.evaluate import Tally
from extractor.pipeline import Extractor
from extractor.synth.content import make_invoice
from extractor.synth.degrade import black_and_white, scanner_grey
from extractor.synth.render import Pins, render_invoice

FIRST_SEED = 100  # make_invoice's seeds; the fixtures' invoices come from 2026xxxx
DPI = 200
PINS = {"lq": Pins(), "draft": Pins(along_dpi=180), "worn": Pins(ribbon=0.6)}


def scanned(image: np.ndarray, scan: str) -> bytes:
    """The printed page as ``scan`` gives it: as printed (PNG), grey (JPEG 80) or black and
    white (:func:`~extractor.synth.degrade.black_and_white`; PNG)."""
    if scan == "colour":
        return cv2.imencode(".png", image)[1].tobytes()
    if scan == "grey":
        grey = scanner_grey(image)
        return cv2.imencode(".jpg", grey, [cv2.IMWRITE_JPEG_QUALITY, 80])[1].tobytes()
    return cv2.imencode(".png", black_and_white(image))[1].tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--max-mm", type=float, default=7.5)
    parser.add_argument("--max-down-mm", type=float, default=1.5, help="up or down, at most")
    parser.add_argument("--pins", choices=sorted(PINS), help="a dot-matrix head prints the data")
    parser.add_argument("--scan", choices=("colour", "grey", "bw"), default="colour")
    parser.add_argument("--fallback", choices=("never", "auto"), default="never")
    args = parser.parse_args()
    extractor = Extractor(threads=1, fallback=args.fallback)
    tally, wrong = Tally(), []
    for seed in range(FIRST_SEED, FIRST_SEED + args.pages):
        invoice = make_invoice(random.Random(seed))
        printed = render_invoice(
            invoice,
            DPI,
            random.Random(f"render:{seed}"),
            offset_mm=(args.max_mm, args.max_down_mm),
            pins=PINS.get(args.pins or ""),
        )
        (page,) = extractor.extract(scanned(printed.image, args.scan), "vat_invoice").pages
        for name, expected in invoice.fields().items():
            field = page.fields.get(name)
            if not tally.add(expected, field):
                got = (field.value, "VALID" if field.valid else "flagged") if field else None
                wrong.append((seed, printed.info["data_offset_mm"], name, expected, got))
    print(
        f"{args.pages} pages (seeds {FIRST_SEED}-{FIRST_SEED + args.pages - 1}), print up to "
        f"{args.max_mm} mm left or right of the form, {args.max_down_mm} mm up or down, "
        f"printer {args.pins or 'as drawn'}, scan {args.scan}, fallback {args.fallback}"
    )
    print(
        f"fields right {tally.exact}/{tally.fields} ({tally.accuracy:.1%}), right but flagged "
        f"{tally.right_flagged}, wrong and flagged {tally.wrong_flagged}, wrong but valid "
        f"{tally.wrong_valid}"
    )
    for seed, offset, name, expected, got in wrong:
        print(f"  {seed} offset {offset} mm  {name}: expected {expected!r}, got {got}")


if __name__ == "__main__":
    main()
