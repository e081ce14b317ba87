"""The data layer printed millimetres above or below the form's cells (extractor.print_offset)."""

import random

import cv2
import numpy as np
import pytest

from extractor.pipeline import Extractor
from extractor.print_offset import print_offset
from extractor.registration import register
from extractor.synth.content import make_invoice
from extractor.synth.generate import make_document
from extractor.synth.render import render_invoice
from extractor.templates import TemplateStore


def printed(seed: int, offset_mm: tuple[float, float]):
    """An invoice printed (bench.offset's way: the page itself, no scan) with its data layer up
    to ``offset_mm`` (x, y) off the form: (invoice, page, the offset drawn)."""
    invoice = make_invoice(random.Random(seed))
    page = render_invoice(invoice, 200, random.Random(f"render:{seed}"), offset_mm=offset_mm)
    return invoice, page.image, page.info["data_offset_mm"]


@pytest.mark.parametrize("seed", [116, 122])
def test_print_a_line_low_or_high_is_found_and_read_where_it_lies(seed: int) -> None:
    """Seeds 116 and 122 print their data 3.9 and 3.4 mm above the cells: each field's box,
    with its 2.5 mm margin, held the line meant for the box below (a buyer's name read as its
    tax id, a seller's tax id read as another number that passed its check)."""
    invoice, image, (_, dy) = printed(seed, (2.0, 4.0))
    assert abs(dy) > 3.0
    template = TemplateStore().get("vat_invoice")
    alignment = register(image, template)
    assert alignment.on_form is not None
    found = print_offset(alignment.on_form, template) / template.px_per_mm
    assert abs(found - dy) < 0.5
    png = cv2.imencode(".png", image)[1].tobytes()
    (page,) = Extractor(fallback="never").extract(png, "vat_invoice").pages
    for name, expected in invoice.fields().items():
        assert (page.fields[name].value, page.fields[name].valid) == (expected, True), name


def test_print_within_the_margin_moves_nothing() -> None:
    """Printed 1 mm or less off the cells: the crops' own margin and tightening take it, and
    the boxes are cut where they are."""
    template = TemplateStore().get("vat_invoice")
    for seed in (100, 105):
        _, image, (_, dy) = printed(seed, (2.0, 1.0))
        assert abs(dy) <= 1.0
        alignment = register(image, template)
        assert alignment.on_form is not None
        assert print_offset(alignment.on_form, template) == 0.0


@pytest.mark.parametrize(("seed", "level"), [(20280028, "geometry"), (20280001, "heavy")])
def test_an_e_invoice_is_not_taken_for_a_print_a_line_down(seed: int, level: str) -> None:
    """A 增值税电子普通发票's data is laid out with its form in the PDF: no offset. Its top band
    holds other print than the paper form's boxes, and a line down fit it 6-10% better than
    none; taken, every field of the buyer's and seller's blocks read its neighbour's line (a
    name its tax id). A line off is taken only where it fits far better (TIE): a page printed
    a line off fits 73-100% better than unshifted."""
    doc = make_document(seed, level, electronic=True)
    image = cv2.imdecode(np.frombuffer(doc.jpeg, np.uint8), cv2.IMREAD_COLOR)
    template = TemplateStore().get("vat_invoice")
    alignment = register(image, template)
    assert alignment.matched and alignment.on_form is not None
    assert print_offset(alignment.on_form, template) == 0.0
