"""Crops: the form's ruled lines are erased from a grey scan's crop, the print is not."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.crops import _LooseCrop, separate_ink
from extractor.registration import register
from extractor.templates import TemplateStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PPM = 200 / 25.4  # crops are cut at the template's 200 dpi


def grey_crop(blur: float) -> np.ndarray:
    """A field's loose crop from a grey scan: a 12-digit code, blurred by ``blur`` px, between
    two ruled lines that cross the whole crop, and a short separator that meets the lower one."""
    image = np.full((120, 600), 232, np.uint8)
    cv2.putText(image, "043002500304", (30, 78), cv2.FONT_HERSHEY_SIMPLEX, 1.7, 50, 4)
    if blur:
        image = cv2.GaussianBlur(image, (0, 0), blur)
    for y in (12, 106):
        cv2.line(image, (0, y), (599, y), 50, 2)
    cv2.line(image, (585, 40), (585, 106), 50, 2)
    return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)


@pytest.mark.parametrize("blur", [0, 2.5])
def test_rules_are_erased_from_a_grey_scan(blur: float) -> None:
    crop = grey_crop(blur)
    clean, ink = separate_ink(crop, PPM)
    for y in (12, 106):  # across the crop: erased from the image and from the ink
        assert (clean[y - 1 : y + 2] == 255).all() and not ink[y - 1 : y + 2].any()
    assert (clean[45:100, 584:587] == 255).all()  # the separator meets a rule: a rule too
    text = (slice(40, 85), slice(25, 570))
    assert np.count_nonzero(clean[text] < 150) >= 0.97 * np.count_nonzero(crop[text][..., 2] < 150)


def test_print_blurred_into_one_blob_is_not_taken_for_a_rule() -> None:
    """heavy/vat_invoice_0041 (a phone photo out of focus, grey): the digits of the codes and
    tax ids run together into long bars of ink, which the ruling removal erased from the crop
    (764 of the invoice code's 4568 dark pixels, 2076 of the buyer's tax id's 3459)."""
    path = FIXTURES / "heavy/vat_invoice_0041.jpg"
    assert json.loads(path.with_suffix(".json").read_text())["level"] == "heavy"
    template = TemplateStore().get("vat_invoice")
    page = cv2.imread(str(path))
    homography = register(page, template).homography
    for name in ("invoice_code", "issue_date", "buyer_tax_id", "seller_tax_id"):
        loose = _LooseCrop.cut(page, homography, template, template.field(name))
        seen = cv2.warpPerspective(
            page,
            loose.to_page,
            loose.clean.shape[::-1],
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderValue=(255, 255, 255),
        )
        dark = seen[..., 2] < 150
        erased = dark & (loose.clean == 255)
        assert np.count_nonzero(dark) > 800
        assert np.count_nonzero(erased) < 0.05 * np.count_nonzero(dark), name


def test_an_amount_printed_past_its_box_is_cut_wider() -> None:
    """A crooked scan whose data layer sits 4-5 mm right of the form (synthetic seed 20269540,
    bench/geometry.py's pages): the tax, right-aligned, runs past its box and the crop margin,
    and its last digit was cut ('¥7.7' read 7.20). The crop is cut again wider on the right."""
    from extractor.pipeline import Extractor
    from extractor.synth.degrade import medium_quality_heavy_geometry
    from extractor.synth.generate import make_document

    with medium_quality_heavy_geometry():
        document = make_document(20269540, "heavy")
    printed = document.truth["pages"][0]["print"]
    assert printed["data_offset_mm"][0] > TemplateStore().get("vat_invoice").crop_margin_mm
    (page,) = Extractor(fallback="never").extract(document.jpeg, "vat_invoice").pages
    expected = document.truth["pages"][0]["fields"]
    for name in ("amount", "tax", "total"):
        assert page.fields[name].value == expected[name] and page.fields[name].valid


def test_a_code_printed_past_its_box_is_read_again_from_a_wider_crop() -> None:
    """A dot-matrix print 5.5 mm left of the form (no scan: the printed page itself): the first
    digit of the check code and of both tax ids lies beyond the crop margin, cut in half. Each
    reading fails its checks, so the field is read again from a crop 4 mm wider on that side."""
    import random

    from extractor.pipeline import Extractor
    from extractor.synth.content import make_invoice
    from extractor.synth.render import render_invoice

    invoice = make_invoice(random.Random(7))
    printed = render_invoice(invoice, 200, random.Random("render:7"), offset_mm=(8.5, 0.5))
    template = TemplateStore().get("vat_invoice")
    assert printed.info["data_offset_mm"][0] < -(template.crop_margin_mm + 2.5)
    png = cv2.imencode(".png", printed.image)[1].tobytes()
    (page,) = Extractor(fallback="never").extract(png, "vat_invoice").pages
    expected = invoice.fields()
    for name in ("check_code", "buyer_tax_id", "seller_tax_id"):
        field = page.fields[name]
        assert (field.value, field.valid) == (expected[name], True)
        assert field.note == "read from a wider crop: the print runs out of the field's box"
    assert all(
        page.fields[name].note is None for name in ("invoice_code", "invoice_number", "issue_date")
    )
