"""Synthetic scanned classic VAT invoices (template ``vat_invoice``) with ground truth.

API (all deterministic from the seed):

* ``generate_invoice(seed, level, template="vat_invoice") -> (image BGR uint8, truth dict)``;
  ``level`` is one of :data:`LEVELS` (clean, light, medium, heavy, geometry).
* ``make_document(seed, level)`` -> :class:`Document` (image, the JPEG bytes, truth, dpi).
* ``write_fixture_set(out_dir: Path, seed=2026, counts=None) -> list[Path]``: the fixture set
  (``fixtures/``: clean/ light/ medium/ heavy/ multipage/ geometry/ + README.md).
* ``write_reference(template, out_path=None) -> Path``: the template's reference image (the blank
  form at its registration dpi), ``render_form(template, dpi) -> BGR ndarray``.
* ``python -m extractor.synth --out fixtures --seed 2026`` (``roi synth ...`` calls
  ``extractor.synth.__main__.main(argv)``) regenerates the committed set and reference image.
"""

from extractor.synth.content import Invoice, make_invoice
from extractor.synth.degrade import LEVELS
from extractor.synth.form import render_form, write_reference
from extractor.synth.generate import (
    DATA_OFFSET_MM,
    Document,
    generate_invoice,
    make_document,
    write_fixture_set,
)

__all__ = [
    "DATA_OFFSET_MM",
    "LEVELS",
    "Document",
    "Invoice",
    "generate_invoice",
    "make_document",
    "make_invoice",
    "render_form",
    "write_fixture_set",
    "write_reference",
]
