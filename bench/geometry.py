"""``python -m bench.geometry``: the heavy level's misregistration alone.

The ``heavy`` fixtures combine two things: geometry meant to defeat registration (phone photos
at 10-30 degrees with perspective, crooked scans, other scales, margins cut off, 90/180/270
degree turns) and image quality past what a recogniser reads (blur up to 2 px, motion blur,
noise up to 7 grey levels, JPEG 45-75, text down to ~90 dpi). This measures the first alone:
pages of the generator's ``geometry`` level (the heavy level's geometry, every draw the same, with
the medium level's blur, noise and JPEG quality), on seeds outside the fixtures (whose
``geometry/`` folder holds 8 such pages). It prints the
field-level tally (``extractor.evaluate``), how the pages registered and how often the
fallback was used.

    python -m bench.geometry            # 24 pages, ~2 minutes on one core
    python -m bench.geometry --pages 8
"""

from __future__ import annotations

import argparse
from collections import Counter

from extractor.evaluate import Tally
from extractor.pipeline import Extractor
from extractor.synth.generate import make_document

FIRST_SEED = 20269500  # the fixtures use 20260001-20260055 and 20265001-...


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=24)
    args = parser.parse_args()
    extractor = Extractor(threads=1)
    tally, fields = Tally(), Counter()
    registrations: Counter[str] = Counter()
    for seed in range(FIRST_SEED, FIRST_SEED + args.pages):
        document = make_document(seed, "geometry")
        (page,) = extractor.extract(document.jpeg, "vat_invoice").pages
        registrations[str(page.registration)] += 1
        for name, expected in document.truth["pages"][0]["fields"].items():
            if not tally.add(expected, page.fields.get(name)):
                fields[name] += 1
    print(
        f"{args.pages} pages (seeds {FIRST_SEED}-{FIRST_SEED + args.pages - 1}), heavy geometry "
        f"with medium image quality"
    )
    print(
        f"fields right {tally.exact}/{tally.fields} ({tally.accuracy:.1%}), right but flagged "
        f"{tally.right_flagged}, wrong and flagged {tally.wrong_flagged}, wrong but valid "
        f"{tally.wrong_valid}, read by the fallback {tally.fallback}"
    )
    print("registered by:", dict(registrations), " wrong per field:", dict(fields))


if __name__ == "__main__":
    main()
