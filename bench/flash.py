"""``python -m bench.flash``: a phone's flash over a name's first characters.

A flash's hotspot whitens the print under it; where it lies over a name's start, the first
characters fade into the paper and what is left still reads as a name. This photographs fresh
pages (seeds outside the fixtures) with a small hotspot over the first 2-6 mm of one name a page,
the buyer's and the seller's in turn (:func:`~extractor.synth.degrade.flash_over_start`), and
prints the field-level tally (``extractor.evaluate``) and every wrong value, fallback ``auto``
as the service runs.

    python -m bench.flash                          # 36 national pages, 90%: ~2 minutes
    python -m bench.flash --strength 0.75
    python -m bench.flash --template vat_invoice_digital
"""

from __future__ import annotations

import argparse
import random

import cv2
import numpy as np

from extractor.evaluate import Tally
from extractor.pipeline import Extractor
from extractor.synth import make_document
from extractor.synth.degrade import flash_over_start
from extractor.synth.digital import make_digital_document

SEEDS = {  # level: first seed, outside the fixtures' (the 116 fresh pages' for the national form)
    "vat_invoice": {"light": 20269400, "medium": 20269300, "geometry": 20269500},
    "vat_invoice_digital": {"clean": 20272000, "light": 20272100, "medium": 20272200},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", choices=sorted(SEEDS), default="vat_invoice")
    parser.add_argument("--pages", type=int, default=12, help="per level")
    parser.add_argument("--strength", type=float, default=0.9, help="whitening at the centre")
    parser.add_argument("--fallback", choices=("never", "auto"), default="auto")
    args = parser.parse_args()
    extractor = Extractor(threads=1, fallback=args.fallback)
    digital = args.template == "vat_invoice_digital"
    tally, wrong = Tally(), []
    for level, first in SEEDS[args.template].items():
        for i, seed in enumerate(range(first, first + args.pages)):
            doc = make_digital_document(seed, level) if digital else make_document(seed, level)
            field = ("buyer_name", "seller_name")[i % 2]
            info = doc.truth["pages"][0]["print"]
            box = (info.get("field_ink_boxes_mm") or info["field_text_boxes_mm"])[field]
            to_image = np.array(doc.truth["degradations"]["page_to_image"])
            reach = random.Random(seed).uniform(2.0, 6.0)  # the first one or two characters
            photo = flash_over_start(doc.image, to_image, box, reach, args.strength)
            data = cv2.imencode(".jpg", photo, [cv2.IMWRITE_JPEG_QUALITY, 88])[1].tobytes()
            (page, *_) = extractor.extract(data, args.template).pages
            for name, expected in doc.truth["pages"][0]["fields"].items():
                got = page.fields.get(name)
                if not tally.add(expected, got):
                    shown = (got.value, "VALID" if got.valid else "flagged") if got else None
                    wrong.append((level, seed, field, name, expected, shown))
    print(
        f"{tally.fields // len(doc.truth['pages'][0]['fields'])} {args.template} pages, a hotspot "
        f"whitening {args.strength:.0%} over a name's first 2-6 mm, fallback {args.fallback}"
    )
    print(
        f"fields right {tally.exact}/{tally.fields} ({tally.accuracy:.1%}), right but flagged "
        f"{tally.right_flagged}, wrong and flagged {tally.wrong_flagged}, wrong but valid "
        f"{tally.wrong_valid}"
    )
    for level, seed, field, name, expected, shown in wrong:
        print(f"  {level} {seed} (over {field}) {name}: expected {expected!r}, got {shown}")


if __name__ == "__main__":
    main()
