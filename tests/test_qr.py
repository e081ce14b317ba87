"""The QR code read from its template box on registered fixture pages, against the truth."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.qr import qr_values, read_qr
from extractor.registration import register
from extractor.templates import TemplateStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize(
    "name",
    [
        "clean/vat_invoice_0001.jpg",
        "medium/vat_invoice_0027.jpg",  # faint and noisy: OpenCV's detector missed it
        "heavy/vat_invoice_0042.jpg",  # a crooked, blurred scan turned upside down
        "digital/scans/vat_invoice_digital_0007.jpg",
    ],
)
def test_the_payload_is_read_and_states_the_fields(name: str) -> None:
    truth = json.loads((FIXTURES / name).with_suffix(".json").read_text(encoding="utf-8"))
    page = truth["pages"][0]
    template = TemplateStore().get(page["template"])
    image = cv2.imread(str(FIXTURES / name))
    alignment = register(image, template)
    assert alignment.matched
    payload = read_qr(image, alignment.homography, template)
    assert payload == page["extra"]["qr_payload"]
    stated = qr_values(template, payload)
    assert stated and all(page["fields"][field] == value for field, value in stated.items())


def test_a_page_whose_code_is_covered_reads_none() -> None:
    template = TemplateStore().get("vat_invoice")
    image = cv2.imread(str(FIXTURES / "clean/vat_invoice_0001.jpg"))
    alignment = register(image, template)
    x, y, w, h = (v * template.px_per_mm for v in template.qr.box.as_list())
    corners = np.array([[[x, y], [x + w, y], [x + w, y + h], [x, y + h]]], np.float64)
    quad = cv2.perspectiveTransform(corners, alignment.homography)[0]
    cv2.fillConvexPoly(image, np.round(quad).astype(np.int32), (255, 255, 255))
    assert read_qr(image, alignment.homography, template) is None


def test_a_field_the_print_lost_is_taken_from_the_qr_code() -> None:
    """A phone photo whose picture cuts off the page's corners (synthetic heavy-geometry page
    20269526): the invoice number's last digit is outside the picture, read '8429944'. The QR
    code, decoded, states the number: the field takes it, says so, and keeps what was read."""
    from extractor.pipeline import Extractor
    from extractor.synth.generate import make_document

    document = make_document(20269526, "geometry")
    geometry = document.truth["degradations"]["geometry"]
    width, height = geometry["canvas_mm"]
    assert any(
        not (0 <= x <= width and 0 <= y <= height) for x, y in geometry["page_corners_mm_on_canvas"]
    )
    (page,) = Extractor(fallback="never").extract(document.jpeg, "vat_invoice").pages
    number = page.fields["invoice_number"]
    expected = document.truth["pages"][0]["fields"]["invoice_number"]
    assert page.qr is not None and page.qr.split(",")[3] == expected
    assert (number.value, number.valid, number.source) == (expected, True, "qr")
    assert number.raw != expected and number.note == (
        f"from the QR code: the print read {number.raw!r}"
    )


def test_a_doubtful_reading_the_qr_code_states_is_confirmed() -> None:
    from extractor.pipeline import _settle_by_qr
    from extractor.result import FieldResult

    template = TemplateStore().get("vat_invoice")
    doubt = ["uncertain character '4' at 8 (confidence 0.52)"]
    fields = {
        "invoice_number": FieldResult(
            value="84299446", raw="84299446", confidence=0.9, valid=False, errors=doubt
        ),
        "check_code": FieldResult(
            value="1234", raw="1234", confidence=0.9, valid=False, errors=["does not match"]
        ),
    }
    _settle_by_qr(template, {"invoice_number": "84299446", "check_code": "12"}, fields)
    number = fields["invoice_number"]
    assert (number.valid, number.source, number.note) == (True, "roi", "confirmed by the QR code")
    # a QR value that fails the field's own checks is not taken
    assert fields["check_code"].value == "1234" and not fields["check_code"].valid


def test_a_code_printed_off_the_form_with_the_data_is_read() -> None:
    """The printer prints the QR code with the data: a print 6 mm left of the form (synthetic
    invoice 126, the printed page itself) took a quarter of the code out of the template's QR
    box and no code was read, so the invoice number misread from its half-cut first digit
    (62801498 for 52801498) passed as valid. The box is searched with a margin."""
    import random

    from extractor.pipeline import Extractor
    from extractor.synth.content import make_invoice
    from extractor.synth.render import render_invoice

    invoice = make_invoice(random.Random(126))
    printed = render_invoice(invoice, 200, random.Random("render:126"), offset_mm=(7.5, 1.5))
    template = TemplateStore().get("vat_invoice")
    assert printed.info["qr_box_mm"][0] < template.qr.box.x
    png = cv2.imencode(".png", printed.image)[1].tobytes()
    (page,) = Extractor(fallback="never").extract(png, "vat_invoice").pages
    expected = invoice.fields()
    assert page.qr is not None
    assert qr_values(template, page.qr)["invoice_number"] == expected["invoice_number"]
    number = page.fields["invoice_number"]
    assert number.value == expected["invoice_number"] or not number.valid
