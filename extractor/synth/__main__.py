"""``python -m extractor.synth`` / ``roi synth``: write the fixture set and the reference image.

python -m extractor.synth --out fixtures --seed 2026   # fixture set + both reference images
python -m extractor.synth --reference                  # only the templates' reference images
python -m extractor.synth --out /tmp/x --counts clean=3,heavy=2,multipage=0 --no-reference

The 数电票 set (``digital/``, template ``vat_invoice_digital``) is written with the default
counts, or when ``--counts`` names a ``digital_*`` key (digital_pdf, digital_pdf_2page,
digital_clean, digital_light, digital_medium, digital_image_pdf, digital_ofd).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from extractor.templates import Template


def _counts(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if not value.isdigit():
            raise argparse.ArgumentTypeError(f"expected LEVEL=N, got {part!r}")
        out[name.strip()] = int(value)
    return out


DIGITAL_TEMPLATE = "vat_invoice_digital"


def _write_reference(template: Template, out: Path | None) -> Path:
    if template.name == DIGITAL_TEMPLATE:
        from extractor.synth.digital_form import write_reference as write_digital_reference

        return write_digital_reference(template, out)
    from extractor.synth.form import write_reference

    return write_reference(template, out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="roi synth", description="Generate synthetic scanned VAT invoices with ground truth."
    )
    p.add_argument(
        "--out",
        type=Path,
        help="folder for the fixture set (clean/ light/ medium/ heavy/ multipage/ geometry/)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=2026,
        help="base seed (document n gets seed*10000+n); default 2026",
    )
    p.add_argument(
        "--counts",
        type=_counts,
        default=None,
        help="documents per level, e.g. clean=14,light=12,medium=10,heavy=8,multipage=3,geometry=8 "
        "(a level not named gets its default); with "
        "--counts the 数电票 set is written only when a digital_* key is named: digital_pdf=3,"
        "digital_pdf_2page=1,digital_clean=2,digital_light=2,digital_medium=2,digital_image_pdf=1,"
        "digital_ofd=2",
    )
    p.add_argument(
        "--template",
        default="vat_invoice",
        help="template whose reference image to write: vat_invoice (also writes "
        "vat_invoice_digital's unless --reference-out) or vat_invoice_digital",
    )
    p.add_argument(
        "--reference",
        action="store_true",
        help="write the template's reference image (alone unless --out)",
    )
    p.add_argument(
        "--reference-out",
        type=Path,
        help="where to write the reference image (default: the template's)",
    )
    p.add_argument("--no-reference", action="store_true", help="do not write the reference image")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    if args.out is None and not args.reference:
        print("roi synth: give --out FOLDER (fixture set) and/or --reference", file=sys.stderr)
        return 2
    from extractor.synth.generate import write_fixture_set
    from extractor.templates import TemplateStore

    store = TemplateStore()
    template = store.get(args.template)
    if args.reference or not args.no_reference:
        targets = [(template, args.reference_out)]
        if (
            template.name == "vat_invoice"
            and args.reference_out is None
            and DIGITAL_TEMPLATE in store.names()
        ):
            targets.append((store.get(DIGITAL_TEMPLATE), None))
        for each, out in targets:
            path = _write_reference(each, out)
            print(f"reference image: {path} ({path.stat().st_size // 1024} KB)")
    if args.out is not None:
        paths = write_fixture_set(args.out, seed=args.seed, counts=args.counts)
        docs = [p for p in paths if p.suffix in (".jpg", ".pdf", ".tif", ".ofd")]
        size = sum(p.stat().st_size for p in paths)
        print(f"{len(docs)} documents with ground truth under {args.out} ({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
