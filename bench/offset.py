"""``python -m bench.offset``: data printed far off the preprinted form.

Paper VAT invoices are printed onto preprinted forms, and printers put the data several
millimetres off the cells, sometimes over the labels. The fixture levels offset the print by up
to 3-5 mm; this prints invoices up to ``--max-mm`` (7.5 by default) left or right of the form and
up to 1.5 mm up or down, with nothing else done to them (the printed page itself, as PNG: no
scan), on seeds outside the fixtures. It prints the field-level tally (``extractor.evaluate``)
and every wrong value with the page's offset, the template path alone (fallback ``never``).

    python -m bench.offset              # 40 pages, ~1 minute on one core
    python -m bench.offset --pages 10 --max-mm 5
"""

from __future__ import annotations

import argparse
import random

import cv2

from extractor.evaluate import Tally
from extractor.pipeline import Extractor
from extractor.synth.content import make_invoice
from extractor.synth.render import render_invoice

FIRST_SEED = 100  # make_invoice's seeds; the fixtures' invoices come from 2026xxxx
DPI = 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--max-mm", type=float, default=7.5)
    parser.add_argument("--max-down-mm", type=float, default=1.5, help="up or down, at most")
    args = parser.parse_args()
    extractor = Extractor(threads=1, fallback="never")
    tally, wrong = Tally(), []
    for seed in range(FIRST_SEED, FIRST_SEED + args.pages):
        invoice = make_invoice(random.Random(seed))
        printed = render_invoice(
            invoice, DPI, random.Random(f"render:{seed}"), offset_mm=(args.max_mm, args.max_down_mm)
        )
        png = cv2.imencode(".png", printed.image)[1].tobytes()
        (page,) = extractor.extract(png, "vat_invoice").pages
        for name, expected in invoice.fields().items():
            field = page.fields.get(name)
            if not tally.add(expected, field):
                got = (field.value, "VALID" if field.valid else "flagged") if field else None
                wrong.append((seed, printed.info["data_offset_mm"], name, expected, got))
    print(
        f"{args.pages} pages (seeds {FIRST_SEED}-{FIRST_SEED + args.pages - 1}), print up to "
        f"{args.max_mm} mm left or right of the form, {args.max_down_mm} mm up or down"
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
