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
