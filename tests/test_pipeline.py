"""The real pipeline (PP-OCRv6 rec on ONNX Runtime) on committed fixture scans."""

import json
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from conftest import CropsOf

from extractor.crops import crop_fields
from extractor.cross_check import (
    STARS_MISREAD,
    SUM_MARGIN,
    TWO_SLIPS,
    _flag_dates_read_as_codes,
    _mend_amounts,
    _require_confirmation,
    cross_check,
)
from extractor.doubts import LATE_START
from extractor.engines import Recognition, get_engine
from extractor.fields import check_value
from extractor.pipeline import (
    MIN_FOUND_CODE_CHAR_CONFIDENCE,
    Extractor,
    _crop_judge,
    _fullpage_device,
    _Page,
    _within,
)
from extractor.qr import qr_values
from extractor.registration import Alignment, register
from extractor.result import FieldResult
from extractor.synth.content import Party, party
from extractor.synth.digital import digital_pdf, make_digital_document
from extractor.synth.generate import make_document, make_other_page
from extractor.synth.names import REGIONS
from extractor.synth.render import Pins
from extractor.templates import FieldKind, Template, TemplateStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def extractor() -> Extractor:
    return Extractor()


@pytest.fixture(scope="module")
def on_onnxruntime() -> Extractor:
    """Reads as ONNX Runtime does on any CPU, for tests of a misread of heavy blur (OpenVINO's
    bfloat16, the default where the CPU has it, reads such print a little otherwise)."""
    return Extractor(cpu_runtime="onnxruntime")


def truth(path: Path) -> dict:
    return json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "name",
    ["clean/vat_invoice_0001.jpg", "clean/vat_invoice_0007.jpg", "light/vat_invoice_0016.jpg"],
)
def test_every_field_of_a_scan(extractor: Extractor, name: str) -> None:
    path = FIXTURES / name
    result = extractor.extract(path, "vat_invoice")
    (page,) = result.pages
    expected = truth(path)["pages"][0]["fields"]
    assert page.status == "ok", page
    assert page.matched and page.match_score > 0.8
    assert {k: f.value for k, f in page.fields.items()} == expected
    assert all(f.valid for f in page.fields.values())
    assert page.qr is not None and expected["invoice_number"] in page.qr
    stated = qr_values(extractor.templates.get("vat_invoice"), page.qr)  # taken from it unread
    assert {k: f.source for k, f in page.fields.items()} == {
        k: "qr" if k in stated else "roi" for k in expected
    }
    box = page.fields["total"].box
    assert box is not None and box[2] > box[3] > 0


def test_multipage_pdf_skips_the_non_invoice_page(extractor: Extractor) -> None:
    path = FIXTURES / "multipage/vat_invoice_0045.pdf"
    result = extractor.extract(path, "vat_invoice")
    expected = truth(path)["pages"]
    assert len(result.pages) == len(expected)
    for got, want in zip(result.pages, expected, strict=True):
        if want["template"] is None:
            # not the form: unmatched, with at most what the fallback found beside labels
            assert got.status == "unmatched" and got.message and got.registration is None
            assert all(f.source == "fallback" for f in got.fields.values())
        else:
            assert {k: f.value for k, f in got.fields.items()} == want["fields"]


def test_page_selection(extractor: Extractor) -> None:
    result = extractor.extract(
        FIXTURES / "multipage/vat_invoice_0045.pdf", "vat_invoice", pages=[1]
    )
    assert [p.page for p in result.pages] == [1]


def test_registration_survives_turns_and_skew() -> None:
    template = TemplateStore().get("vat_invoice")
    image = cv2.imread(str(FIXTURES / "clean/vat_invoice_0001.jpg"))
    straight = register(image, template)
    corners = np.array([[[0, 0], [1898, 0], [1898, 1102], [0, 1102]]], np.float64)
    for turn in (cv2.ROTATE_90_CLOCKWISE, cv2.ROTATE_180):
        turned = register(cv2.rotate(image, turn), template)
        assert turned.matched and turned.score > 0.9
        h, w = image.shape[:2]
        got = cv2.perspectiveTransform(corners, turned.homography)[0]
        want = cv2.perspectiveTransform(corners, straight.homography)[0]
        if turn == cv2.ROTATE_180:
            want = np.column_stack([w - 1 - want[:, 0], h - 1 - want[:, 1]])
        else:
            want = np.column_stack([h - 1 - want[:, 1], want[:, 0]])
        assert np.abs(got - want).max() < 6  # pixels at 200 dpi: under a millimetre


def test_blank_page_is_unmatched(extractor: Extractor) -> None:
    """Nothing to align to and no labels: unmatched, no fields, after trying the fallback."""
    blank = cv2.imencode(".png", np.full((1100, 1900, 3), 245, np.uint8))[1].tobytes()
    (page,) = extractor.extract(blank, "vat_invoice").pages
    assert page.status == "unmatched" and page.match_score < 0.5 and not page.fields
    assert page.timings_ms.fallback > 0


def test_allowlist_mask_on_a_real_crop() -> None:
    """On this scan the unconstrained model reads a letter into the invoice number (from the
    № sign beside it); the digits allowlist, applied as a mask before the argmax, cannot."""
    template = TemplateStore().get("vat_invoice")
    path = FIXTURES / "clean/vat_invoice_0013.jpg"
    image = cv2.imread(str(path))
    crops = {c.field: c for c in crop_fields(image, register(image, template).homography, template)}
    crop = crops["invoice_number"].image
    engine = get_engine("ppocr")
    free, masked = engine.recognize([crop, crop], [None, "0123456789"])
    assert any(ch.isalpha() for ch in free.text)
    assert (
        masked.text.isdigit() and masked.text == truth(path)["pages"][0]["fields"]["invoice_number"]
    )


def test_forced_read_shows_as_low_confidence() -> None:
    """A name read through a digits mask is nonsense, and its confidence says so."""
    template = TemplateStore().get("vat_invoice")
    image = cv2.imread(str(FIXTURES / "clean/vat_invoice_0001.jpg"))
    crops = {c.field: c for c in crop_fields(image, register(image, template).homography, template)}
    engine = get_engine("ppocr")
    name = crops["buyer_name"].image
    free, forced = engine.recognize([name, name], [None, "0123456789"])
    assert free.confidence > 0.9
    assert not forced.text or forced.confidence < 0.5


def test_fallback_aligns_a_torn_page_by_its_labels(extractor: Extractor) -> None:
    """The lower third of the form is torn off: the frame no longer registers, the printed
    labels that remain align the page, and the fields still on it are read; the ones torn off
    are reported missing, never filled from another field's label."""
    path = FIXTURES / "clean/vat_invoice_0002.jpg"
    image = cv2.imread(str(path))
    image[int(image.shape[0] * 0.62) :, :] = (235, 242, 246)
    expected = truth(path)["pages"][0]["fields"]
    data = cv2.imencode(".png", image)[1].tobytes()
    (page,) = extractor.extract(data, "vat_invoice").pages
    assert not page.matched and page.registration == "labels"
    assert page.timings_ms.fallback > 0
    for name in ("invoice_code", "invoice_number", "issue_date", "buyer_name", "buyer_tax_id"):
        assert page.fields[name].value == expected[name] and page.fields[name].valid
    for name in ("seller_name", "seller_tax_id", "total"):
        assert not page.fields[name].valid
    never = Extractor(fallback="never").extract(data, "vat_invoice").pages[0]
    assert never.status == "unmatched" and not never.fields


def test_a_torn_page_turned_on_its_side_is_aligned_by_its_labels(extractor: Extractor) -> None:
    """The torn form above (another fixture) photographed on its side: its labels lie along a
    few rows, and the homography RANSAC fits to 11 of them folded the page onto a column (its
    corners within 30 px of x = 500): no alignment, no field. An affine map of the same labels
    puts 10 in place, and the page is aligned, asked for as vat_invoice or picked (auto)."""
    path = FIXTURES / "clean/vat_invoice_0003.jpg"
    image = cv2.imread(str(path))
    image[int(image.shape[0] * 0.62) :, :] = (235, 242, 246)
    data = cv2.imencode(".png", np.ascontiguousarray(np.rot90(image)))[1].tobytes()
    expected = truth(path)["pages"][0]["fields"]
    for template in ("vat_invoice", "auto"):
        (page,) = extractor.extract(data, template).pages
        assert page.template == "vat_invoice" and page.registration == "labels"
        for name in ("invoice_code", "invoice_number", "issue_date", "buyer_name", "buyer_tax_id"):
            assert page.fields[name].value == expected[name] and page.fields[name].valid


def test_auto_does_not_take_a_form_cut_off_below_for_the_other_form(extractor: Extractor) -> None:
    """A photo that misses the form's bottom fifth (its drawer's row and part of the seller's
    block): the national form's frame matches it at 0.40, the 数电票's at 0.55, over that
    template's threshold (0.5: its frame matches whole national forms at up to 0.62). Picked by
    its frame alone the page was read through the 数电票's boxes: 5 fields. A frame match that
    weak is checked against the printed labels, which show the national form: every field."""
    path = FIXTURES / "medium/vat_invoice_0032.jpg"
    image = cv2.imread(str(path))
    image[int(image.shape[0] * 0.8) :, :] = (235, 242, 246)
    data = cv2.imencode(".png", image)[1].tobytes()
    (page,) = extractor.extract(data, "auto").pages
    assert page.template_scores is not None
    assert max(page.template_scores, key=page.template_scores.get) == "vat_invoice_digital"
    assert page.template == "vat_invoice" and page.registration == "labels"
    assert {k: f.value for k, f in page.fields.items()} == truth(path)["pages"][0]["fields"]


def _cut(path: Path, rows: slice = slice(None), columns: slice = slice(None)) -> bytes:
    """The fixture's image cut to ``rows`` and ``columns``, saved as a phone saves a photo."""
    image = cv2.imread(str(path))
    return cv2.imencode(".jpg", image[rows, columns], [cv2.IMWRITE_JPEG_QUALITY, 88])[1].tobytes()


def test_no_value_passes_from_a_form_the_image_cuts_off_at_its_side(extractor: Extractor) -> None:
    """A photo that cut off the form's left tenth: the cut is taken for the frame's left side,
    the form is squeezed onto what is left (matched at 0.87), and both names were read without
    their first character (南欣光泰峰印务有限公司 for 济南欣光泰峰印务有限公司) and passed: names
    have no check. A frame that runs along the image's edge on a page matched under 0.95 puts
    every field whose format cannot tell a cut value in doubt; none passes wrong."""
    path = FIXTURES / "light/vat_invoice_0020.jpg"
    width = cv2.imread(str(path)).shape[1]
    (page,) = extractor.extract(_cut(path, columns=slice(width // 10, None)), "vat_invoice").pages
    expected = truth(path)["pages"][0]["fields"]
    assert page.match_score < 0.95
    for name, field in page.fields.items():
        assert not field.valid or field.value == expected[name], name
    buyer = page.fields["buyer_name"]
    assert not buyer.valid and any("image's left edge" in e for e in buyer.errors)


def test_a_field_the_image_cuts_off_is_not_passed_as_absent(extractor: Extractor) -> None:
    """A scan that cut off the form's top quarter: the check code's box lies wholly off the
    image, read empty; the field is optional (older forms print none), so it passed as absent.
    It is in doubt now, and says why."""
    path = FIXTURES / "clean/vat_invoice_0003.jpg"
    height = cv2.imread(str(path)).shape[0]
    (page,) = extractor.extract(_cut(path, rows=slice(height // 4, None)), "vat_invoice").pages
    check_code = page.fields["check_code"]
    assert check_code.value is None and not check_code.valid
    assert "its box lies 100% off the image: the page is cut off there" in check_code.errors


def test_a_code_whose_print_the_scans_edge_cuts_across_is_in_doubt(extractor: Extractor) -> None:
    """Fresh medium 数电票 scan 20294012: the scan's top edge runs through its number, turned a
    little, and cut the tops off its last digits: the 7s read as 1s, twenty digits that passed
    (25211000000939211211 for 25211000000939277277). A code has no check digit: one whose box
    lies off the image and whose print runs off it is in doubt, whoever reads it (the fallback
    reads the same cut print)."""
    doc = make_digital_document(20294012, "medium")
    (page,) = extractor.extract(doc.jpeg, "vat_invoice_digital").pages
    number = page.fields["invoice_number"]
    assert not number.valid
    assert any(
        e.endswith("its print runs off it: characters may be cut across") for e in number.errors
    )


def test_a_nick_off_a_codes_first_digit_leaves_it_standing(extractor: Extractor) -> None:
    """Fresh geometry photo 20295006: the photo's edge runs through the corner of its invoice
    code's box and nicks the top of its first 0, a few columns of it; the code reads right. Ink
    at the edge along less than a character's width is no print cut across: the code stands."""
    from extractor.cut_off import CUT_ACROSS, fields_cut_off

    doc = make_document(20295006, "geometry")
    image = cv2.imdecode(np.frombuffer(doc.jpeg, np.uint8), cv2.IMREAD_COLOR)
    template = TemplateStore().get("vat_invoice")
    homography = register(image, template).homography
    assert "invoice_code" in fields_cut_off(image.shape[:2], template, homography)
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    code = page.fields["invoice_code"]
    assert not any(e.endswith(CUT_ACROSS) for e in code.errors)


def test_print_runs_off_where_its_ink_meets_the_images_edge() -> None:
    """:func:`print_runs_off`: a crop whose top rows lie above the image (cut out white) runs
    off it where its ink reaches those rows, not where only its margin does."""
    from extractor.crops import Crop
    from extractor.cut_off import print_runs_off

    spec = TemplateStore().get("vat_invoice_digital").field("invoice_number")
    image = np.full((40, 240), 255, np.uint8)
    cv2.putText(image, "25211000", (4, 34), cv2.FONT_HERSHEY_SIMPLEX, 1.0, 0, 2)
    top = int(np.flatnonzero((image < 128).any(axis=1))[0])  # the print's first row
    for above, runs_off in ((top + 3, True), (top - 4, False), (0, False)):
        quad = np.float32([[100, -above], [340, -above], [340, 40 - above], [100, 40 - above]])
        crop = Crop(spec, image, quad, True)
        assert print_runs_off(crop, (1000, 1500)) is runs_off, above
    blank = Crop(spec, np.full((40, 240), 250, np.uint8), quad - np.float32([0, 20]), True)
    assert not print_runs_off(blank, (1000, 1500))  # no print


def test_a_field_read_absent_where_most_fields_fail_is_in_doubt() -> None:
    """Fresh geometry photo 20275016 of a 增值税电子普通发票 printed on an A4 sheet (the form
    ~80 dpi, turned): the frame matched it a row off, and 10 of its 11 required fields read
    what fails (its names read as tax ids); its check code's box, blank there, passed as
    absent. Now in doubt; on a page whose required fields pass, an absent check code is not.
    (The fallback now finds a check code there by its four groups of five digits, one digit
    misread, read again otherwise: flagged too.)"""
    from extractor.blank import doubt_absence_amid_failures
    from extractor.doubts import AMID_FAILURES

    doc = make_document(20275016, "geometry", electronic=True, a4=True)
    (page,) = Extractor().extract(doc.jpeg, "auto").pages
    check_code = page.fields["check_code"]
    assert check_code.value != doc.truth["pages"][0]["fields"]["check_code"]
    assert not check_code.valid
    template = TemplateStore().get("vat_invoice")
    fields = {
        spec.name: FieldResult(
            value=None if spec.required is False else "1", raw="", confidence=1.0, valid=True
        )
        for spec in template.fields
    }
    doubt_absence_amid_failures(template, fields)
    assert fields["check_code"].valid  # every required field passes
    for name in ("invoice_code", "invoice_number", "issue_date", "buyer_name", "buyer_tax_id"):
        fields[name].valid, fields[name].errors = False, ["cannot read"]
    doubt_absence_amid_failures(template, fields)
    assert fields["check_code"].valid  # 5 of 11 fail: not most
    fields["amount"].valid, fields["amount"].errors = False, ["cannot read"]
    doubt_absence_amid_failures(template, fields)
    assert not fields["check_code"].valid and fields["check_code"].errors == [
        f"{AMID_FAILURES} (6 of 11)"
    ]


@pytest.mark.parametrize("template", ["vat_invoice_digital", "auto"])
def test_a_weak_frame_match_gives_way_to_the_labels(extractor: Extractor, template: str) -> None:
    """A 数电票 scan cut off below its 价税合计 row: what is left of its ruling matches the
    frame at 0.53 (its template's threshold is 0.5: the form has few rules), misplaced: not one
    of its 10 fields was read. Its printed labels align it, and every field is read."""
    path = FIXTURES / "digital/scans/vat_invoice_digital_0008.jpg"
    image = cv2.imread(str(path))
    image[int(image.shape[0] * 0.8) :, :] = (235, 242, 246)
    data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 88])[1].tobytes()
    (page,) = extractor.extract(data, template).pages
    assert 0.5 <= page.match_score < 0.7
    assert page.template == "vat_invoice_digital" and page.registration == "labels"
    assert page.message and "aligned by its printed labels" in page.message
    assert {k: f.value for k, f in page.fields.items()} == truth(path)["pages"][0]["fields"]


def test_a_steep_photo_is_aligned_by_fewer_labels_than_it_takes_to_pick_a_template(
    extractor: Extractor,
) -> None:
    """A sharp phone photo at 30 degrees with strong perspective (synthetic geometry-level page
    20269532, not a fixture): the frame does not register (0.44) and full-page OCR misreads or
    splits half the labels (称： for 名称, 开户行及乘号), so 9 of the form's 23 distinct labels
    are found in place: too few to tell templates apart, but one homography puts all 9 where
    the form prints them, and the page is known to be a vat_invoice. Every field is read."""
    from extractor.synth.generate import make_document

    document = make_document(20269532, "geometry")
    expected = document.truth["pages"][0]["fields"]
    for template in ("vat_invoice", "auto"):  # picked: the only template whose labels fit so
        (page,) = extractor.extract(document.jpeg, template).pages
        assert not page.matched and page.registration == "labels"
        assert {name: f.value for name, f in page.fields.items()} == expected
        assert all(f.valid for f in page.fields.values())


def test_a_page_of_another_layout_is_not_aligned_by_the_labels_it_shares(
    tmp_path: Path,
) -> None:
    """A 数电票 scan asked for as vat_invoice where vat_invoice is the only template: the two
    forms share labels (名称, 纳税人识别号, 开票日期, 价税合计...), and 8 of its 12 matches fit
    one homography, but not nearly all of them: the page stays unmatched rather than read
    through the classic form's boxes."""
    templates = Path(__file__).resolve().parent.parent / "templates"
    for name in ("vat_invoice.yaml", "vat_invoice.png"):
        (tmp_path / name).write_bytes((templates / name).read_bytes())
    path = FIXTURES / "digital/scans/vat_invoice_digital_0005.jpg"
    (page,) = Extractor(templates=TemplateStore(tmp_path)).extract(path, "vat_invoice").pages
    assert page.status == "unmatched" and page.registration is None


@pytest.mark.parametrize(
    ("path", "asked", "form"),
    [
        ("digital/scans/vat_invoice_digital_0005.jpg", "vat_invoice", "vat_invoice_digital"),
        ("digital/pdf/vat_invoice_digital_0001.pdf", "vat_invoice", "vat_invoice_digital"),
        ("light/vat_invoice_0016.jpg", "vat_invoice_digital", "vat_invoice"),
    ],
)
def test_a_page_asked_for_as_another_form_is_read_as_its_own(
    extractor: Extractor, path: str, asked: str, form: str
) -> None:
    """An ERP sends every invoice as vat_invoice, 数电票 among them: the national form's frame
    matches a 数电票's outline and rules at 0.65-0.86 and its boxes read the wrong lines (a
    buyer's name without its first characters passed; the PDF's text layer did not fit the
    form). The other template's frame matches surely: the page is read as its form, and the
    result says so. The same the other way round (a national form's frame matches the 数电票's
    at 0.55-0.62, over that template's threshold)."""
    (page,) = extractor.extract(FIXTURES / path, asked).pages
    assert page.template == form and page.status == "ok"
    assert page.message and page.message.startswith(f"asked for {asked}, the page is a {form}")
    assert page.template_scores is not None and set(page.template_scores) == {asked, form}
    assert page.template_scores[asked] < 0.9 <= page.template_scores[form]
    expected = truth(FIXTURES / path)["pages"][0]["fields"]
    assert {k: f.value for k, f in page.fields.items()} == expected


def test_a_page_of_another_form_matched_unsurely_is_read_by_its_labels(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The asked template's frame does not match and the other's matches better but under
    LABELS_OVER_FRAME (a worn or cut-off 数电票, scores set here): the page's labels tell it is
    the other form, which is then aligned by them as a page of that template is. The second
    look at the labels found the other template missing among those registered (KeyError);
    the message keeps saying which form the page is."""
    import dataclasses

    import extractor.pipeline as pipeline

    real = pipeline.register

    def unsure(image: np.ndarray, template: Template) -> Alignment:
        found = real(image, template)
        if template.name == "vat_invoice":
            return dataclasses.replace(found, matched=False, score=0.45, homography=None)
        return dataclasses.replace(found, score=0.6)

    monkeypatch.setattr(pipeline, "register", unsure)
    path = FIXTURES / "digital/scans/vat_invoice_digital_0005.jpg"
    (page,) = extractor.extract(path, "vat_invoice").pages
    assert (page.template, page.registration) == ("vat_invoice_digital", "labels")
    assert page.message is not None
    assert page.message.startswith("asked for vat_invoice, the page is a vat_invoice_digital")
    assert page.message.endswith("frame match 0.60 under 0.7: aligned by its printed labels")
    expected = truth(path)["pages"][0]["fields"]
    assert {k: f.value for k, f in page.fields.items()} == expected


def test_a_special_invoice_has_no_check_code(extractor: Extractor) -> None:
    """A 增值税专用发票 on the national paper form carries no check code: its machine number
    (12 digits) is printed on that line, and was read as a check code that failed its checks,
    sending every 专票 to review. Its code (10 digits, the 8th 1 or 5) says it is a 专票: what
    the box read is left out, and the page reads ok, every field right."""
    for seed, level in ((20279000, "medium"), (20279001, "geometry")):
        document = make_document(seed, level, special=True)
        (page,) = extractor.extract(document.jpeg, "vat_invoice").pages
        expected = document.truth["pages"][0]["fields"]
        assert {k: f.value for k, f in page.fields.items() if k != "check_code"} == expected
        check = page.fields["check_code"]
        machine = document.truth["pages"][0]["extra"]["machine_no"]
        assert check.value is None and check.valid and check.raw.replace(" ", "") == machine
        assert check.note and check.note.startswith(
            f"not printed where invoice_code reads {expected['invoice_code']}"
        )
        assert page.status == "ok"


def test_what_a_form_lacks_is_left_out_only_where_its_code_says_so() -> None:
    from extractor.cross_check import _leave_out_what_the_form_lacks

    vat = TemplateStore().get("vat_invoice")

    def read(value: str, errors: list[str] | None = None) -> FieldResult:
        return FieldResult(
            value=value, raw=value, confidence=0.97, valid=not errors, errors=errors or []
        )

    machine = read("658781707175", [r"does not match ^\d{20}$"])
    for code, left_out in (
        ("4200191556", True),  # a 专票's: 8th digit 5
        ("3200172130", True),  # 1
        ("1100153320", False),  # a 10-digit 普票's: 3
        ("044001900111", False),  # a 12-digit code: an e-invoice (普票)
    ):
        fields = {"invoice_code": read(code), "check_code": machine.model_copy(deep=True)}
        _leave_out_what_the_form_lacks(vat, fields)
        assert (fields["check_code"].value is None) is left_out
        assert fields["check_code"].valid is left_out
    # a check code read whole is kept; a code that fails its checks says nothing
    whole = read("12345678901234567890")
    fields = {"invoice_code": read("4200191556"), "check_code": whole}
    _leave_out_what_the_form_lacks(vat, fields)
    assert fields["check_code"] is whole
    fields = {"invoice_code": read("4200191556", ["low recognition confidence 0.4"])}
    fields["invoice_code"].errors = ["does not match"]
    fields["check_code"] = machine.model_copy(deep=True)
    _leave_out_what_the_form_lacks(vat, fields)
    assert fields["check_code"].value == "658781707175" and not fields["check_code"].valid


def test_an_issue_date_before_its_form_was_printed_is_flagged(on_onnxruntime: Extractor) -> None:
    """A 专票 of code 3400181196 (forms printed in 2018) read issued 2010-06-18 (its 8 read 0,
    blurred: fresh heavy 20279017): both pass their own checks, and one of them is wrong; both
    are flagged, the code's year and the date's named. (From its crop with the grey paper kept
    the date reads right, 2018-06-18; the check is the unit test below's.)"""
    document = make_document(20279017, "heavy", special=True)
    (page,) = on_onnxruntime.extract(document.jpeg, "vat_invoice").pages
    code, date = page.fields["invoice_code"], page.fields["issue_date"]
    truth = document.truth["pages"][0]["fields"]
    assert code.value == "3400181196" == truth["invoice_code"]
    if date.value == "2010-06-18":  # its 8 read 0
        why = "invoice_code 3400181196 names forms printed in 2018, issue_date 2010"
        assert not code.valid and not date.valid and code.errors == date.errors == [why]
    else:
        assert date.value == truth["issue_date"] or not date.valid


def test_a_form_printed_ahead_by_a_year_or_issued_later_passes() -> None:
    from extractor.cross_check import _flag_a_date_its_code_rules_out

    vat = TemplateStore().get("vat_invoice")
    for code, issued, flagged in (
        ("044001900111", "2019-03-01", False),  # printed and issued in 2019
        ("044001900111", "2023-03-01", False),  # old stock, issued years later
        ("044002000111", "2019-12-30", False),  # a batch printed ahead for 2020
        ("044002100111", "2019-12-30", True),
        ("3400181196", "2010-06-18", True),  # a 10-digit code's year: its 5th and 6th digits
    ):
        fields = {
            "invoice_code": FieldResult(value=code, raw=code, confidence=1.0, valid=True),
            "issue_date": FieldResult(value=issued, raw=issued, confidence=1.0, valid=True),
        }
        _flag_a_date_its_code_rules_out(vat, fields)
        assert [f.valid for f in fields.values()] == [not flagged] * 2
    qr = FieldResult(value="2010-06-18", raw="", confidence=1.0, valid=True, source="qr")
    fields = {"invoice_code": FieldResult(value="3400181196", raw="", confidence=1.0, valid=True)}
    fields["issue_date"] = qr
    _flag_a_date_its_code_rules_out(vat, fields)
    assert qr.valid and not fields["invoice_code"].valid  # the QR code's date stands


def test_a_digital_number_names_the_year_it_was_issued() -> None:
    """A 数电票's number starts with the year it was issued: the issue date's year, none other
    (2024-06-08 with 24441000000320341899 passes; 2023, or the number's 24 read 21, flags
    both, saying why)."""
    from extractor.cross_check import _flag_a_date_its_code_rules_out

    digital = TemplateStore().get("vat_invoice_digital")
    for number, issued, flagged in (
        ("24441000000320341899", "2024-06-08", False),
        ("24441000000320341899", "2023-12-31", True),
        ("21441000000320341899", "2024-06-08", True),
    ):
        fields = {
            "invoice_number": FieldResult(value=number, raw=number, confidence=1.0, valid=True),
            "issue_date": FieldResult(value=issued, raw=issued, confidence=1.0, valid=True),
        }
        _flag_a_date_its_code_rules_out(digital, fields)
        assert [f.valid for f in fields.values()] == [not flagged] * 2
        if flagged:
            why = f"invoice_number {number} names the year it was issued, 20{number[:2]}, "
            assert fields["issue_date"].errors == [why + f"issue_date {issued[:4]}"]


def test_a_sum_kept_from_its_check_by_a_doubt_is_checked_once_it_is_confirmed(
    on_onnxruntime: Extractor,
) -> None:
    """The total read in doubt (a weak 9) gives the sum rule no value, so amount + tax was not
    checked; its words then confirm it, and the sum is checked with it: the amount and the tax
    (read '¥31752.19' for 31752.10 by the fallback) do not add up to it and are flagged, the
    total its words vouch for stays valid (fresh heavy 专票 20279007, end to end below)."""
    vat = TemplateStore().get("vat_invoice")

    def read(value: str, *errors: str) -> FieldResult:
        return FieldResult(
            value=value, raw=value, confidence=0.9, valid=not errors, errors=list(errors)
        )

    fields = {
        "amount": read("186777.08"),
        "tax": read("31752.19"),
        "total": read("218529.18", "uncertain character '9' at 6 (confidence 0.46)"),
        "total_in_words": read("218529.18"),
    }
    cross_check(vat, None, fields)
    why = ["amount + tax = 218529.27 but total is 218529.18"]
    assert (fields["amount"].errors, fields["tax"].errors) == (why, why)
    assert fields["total"].valid and fields["total"].note == "confirmed by total_in_words = total"
    assert fields["total_in_words"].valid
    fields["tax"] = read("31752.10")  # the sum holding: all four pass
    fields["amount"] = read("186777.08")
    fields["total"] = read("218529.18", "uncertain character '9' at 6 (confidence 0.46)")
    cross_check(vat, None, fields)
    assert all(f.valid for f in fields.values())

    document = make_document(20279007, "heavy", special=True)
    (page,) = on_onnxruntime.extract(document.jpeg, "vat_invoice").pages
    tax, truth = page.fields["tax"], document.truth["pages"][0]["fields"]
    if tax.value != truth["tax"]:  # as the fallback read it on the paper whitened to salt
        assert tax.value == "31752.19" and tax.errors == why and page.status == "needs_review"
    assert page.fields["total"].valid and page.fields["total"].value == truth["total"]


def test_auto_picks_the_template_per_page(extractor: Extractor) -> None:
    result = extractor.extract(FIXTURES / "multipage/vat_invoice_0045.pdf", "auto")
    invoice, note = result.pages
    assert result.template == "auto"
    assert invoice.template == "vat_invoice" and invoice.status == "ok"
    assert (
        invoice.template_scores
        and max(invoice.template_scores, key=invoice.template_scores.get) == "vat_invoice"
    )
    assert note.status == "unmatched" and note.template is None and not note.fields
    assert note.template_scores and all(s < 0.7 for s in note.template_scores.values())


@pytest.mark.parametrize(
    ("name", "statuses"),
    [
        ("vat_invoice_0046.pdf", ["unmatched", "ok", "ok"]),
        ("vat_invoice_0045.pdf", ["ok", "unmatched"]),
    ],
)
def test_a_scanned_page_that_is_no_invoice_is_told_at_a_glance(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch, name: str, statuses: list[str]
) -> None:
    """A typed cover letter scanned before two invoices (fixture 0046; one of its sentences names
    the 发票号码) and a delivery note after one (0045; it prints 规格型号, 单位, 数量, 单价, 金额
    and the form's ``No``) register no frame and show too little of the form's labels to find a
    field by: a glance at their lines' starts tells so, and neither is read whole (~2 s of one
    core each, and the detector's memory at 1,600 px). A page that shows the form's labels is
    still read whole (the torn and steep pages above)."""
    path = FIXTURES / "multipage" / name
    for template in extractor.templates.all():
        extractor.reference_labels(template)
    read_whole = _count_fullpage_reads(extractor, monkeypatch)
    ocr, glanced = extractor.fullpage_ocr(), []
    shows = ocr.shows
    monkeypatch.setattr(
        ocr, "shows", lambda image, starts: glanced.append(shows(image, starts)) or glanced[-1]
    )
    expected = [page["fields"] for page in truth(path)["pages"]]
    for template in ("vat_invoice", "auto"):
        pages = extractor.extract(path, template).pages
        assert [p.status for p in pages] == statuses
        assert [{k: f.value for k, f in p.fields.items()} for p in pages] == expected
    assert glanced == [False, False] and read_whole == []


def test_an_invoices_goods_list_is_no_invoice(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 销货清单 a national invoice with many lines attaches prints the form's goods header
    (8 of its 23 distinct labels, one row), 购买方名称, 销售方名称 and 销售方（章）: eight labels
    seemed to show the form, the page was aligned by them, read whole (12-17 s of one core) and
    given as an invoice, every field failing. Labels of one row count three at most, and its
    title tells a glance at its first line: the page is no invoice, unread."""
    doc = make_other_page("goods_list", 41001, "light")
    for template in extractor.templates.all():
        extractor.reference_labels(template)
    read_whole = _count_fullpage_reads(extractor, monkeypatch)
    for template in ("vat_invoice", "auto"):
        (page,) = extractor.extract(doc.jpeg, template).pages
        assert (page.status, page.fields) == ("unmatched", {})
    assert read_whole == []


def test_a_decimal_point_lost_to_blur_is_restored(extractor: Extractor) -> None:
    """heavy/vat_invoice_0038: the total reads '¥5985 24' (the point blurred into a gap); its
    digits are those of amount + tax and of the amount in words, so the point goes back."""
    path = FIXTURES / "heavy/vat_invoice_0038.jpg"
    (page,) = extractor.extract(path, "vat_invoice").pages
    total = page.fields["total"]
    assert "." not in total.raw
    assert total.value == truth(path)["pages"][0]["fields"]["total"] == "5985.24"
    assert total.valid and total.note == "decimal point restored from amount + tax = total"


def test_a_decimal_point_read_as_a_comma_is_restored() -> None:
    """A blurred point read as a comma ('1366,12', fresh geometry 20279244's total): the
    normaliser refuses it (a thousands separator out of place), and amount + tax give exactly
    its digits with the point where the comma is; the total takes that value, the slip in its
    note, and the errors the comma explains go (before, the value was restored and flagged)."""
    vat = TemplateStore().get("vat_invoice")
    fields = {
        "amount": FieldResult(value="1208.96", raw="¥1208.96", confidence=0.99, valid=True),
        "tax": FieldResult(value="157.16", raw="¥157.16", confidence=0.99, valid=True),
        "total": FieldResult(
            value="1366,12",
            raw="¥1366,12",
            confidence=0.9,
            valid=False,
            errors=[
                "misplaced thousands separator in '1366,12'",
                "uncertain character ',' at 6 (confidence 0.50)",
            ],
        ),
    }
    cross_check(vat, None, fields)
    total = fields["total"]
    assert (total.value, total.valid, total.errors) == ("1366.12", True, [])
    assert total.note == "decimal point read as a comma from amount + tax = total"


def test_a_decimal_point_read_as_a_dash_is_restored() -> None:
    """A blurred point read as a dash ('¥13358-87', fresh geometry 20297402's tax; '¥126077-00',
    heavy e-invoice 20294003's total): the point was restored from amount + tax = total but the
    value stayed flagged for the dash, and the total the sum would vouch for with it went
    unconfirmed. The dash is the point, and the errors it explains go; a second dash is not."""
    vat = TemplateStore().get("vat_invoice")

    def page(tax_raw: str) -> dict[str, FieldResult]:
        checked = check_value(vat.field("tax"), tax_raw)
        errors = [*checked.errors, "uncertain character '-' at 6 (confidence 0.41)"]
        return {
            "amount": FieldResult(value="102760.56", raw="¥102760.56", confidence=1, valid=True),
            "tax": FieldResult(
                value=checked.value, raw=tax_raw, confidence=0.88, valid=False, errors=errors
            ),
            "total": FieldResult(value="116119.43", raw="¥116119.43", confidence=0.94, valid=True),
        }

    fields = page("¥13358-87")
    cross_check(vat, None, fields)
    tax = fields["tax"]
    assert (tax.value, tax.valid, tax.errors) == ("13358.87", True, [])
    assert tax.note == "decimal point read as a dash from amount + tax = total"
    fields = page("¥13-358-87")
    cross_check(vat, None, fields)
    assert not fields["tax"].valid


def test_digits_read_past_an_amounts_end_are_dropped_where_a_rule_gives_its_value() -> None:
    """geometry/0049's total read '¥757.02617' (its crop caught ink past the amount's end):
    three decimals, refused; the amount and the tax give exactly its start, 757.02, which it
    takes, the slip in its note. A start that is not that value is left flagged."""
    vat = TemplateStore().get("vat_invoice")

    def page(total_raw: str) -> dict[str, FieldResult]:
        checked = check_value(vat.field("total"), total_raw)
        return {
            "amount": FieldResult(value="714.17", raw="¥714.17", confidence=0.99, valid=True),
            "tax": FieldResult(value="42.85", raw="¥42.85", confidence=0.99, valid=True),
            "total": FieldResult(
                value=checked.value,
                raw=total_raw,
                confidence=0.9,
                valid=False,
                errors=checked.errors,
            ),
        }

    fields = page("¥757.02617")
    cross_check(vat, None, fields)
    total = fields["total"]
    assert (total.value, total.valid, total.errors) == ("757.02", True, [])
    assert total.note == "digits read past its last decimal dropped from amount + tax = total"
    other = page("¥757.32617")
    cross_check(vat, None, other)
    assert not other["total"].valid


def test_words_read_past_recognising_take_the_total_a_sum_read_unaided_vouches_for() -> None:
    """Words blurred to '分分' (no amount) beside a total that amount + tax, each read valid
    and sure with no help, give to the cent: the words can tell nothing more, as where the QR
    code's amount lets them go unread; they take the total, the note saying what was read. Not
    where a term of the sum was mended or confirmed by a rule (it vouches for nothing then),
    nor where the words read an amount (the rules tell whether it is the total's)."""
    vat = TemplateStore().get("vat_invoice")

    def page(words: str, tax_confidence: float = 0.99) -> dict[str, FieldResult]:
        def read(value: str, confidence: float = 0.99) -> FieldResult:
            return FieldResult(value=value, raw=f"¥{value}", confidence=confidence, valid=True)

        checked = check_value(vat.field("total_in_words"), words)
        return {
            "amount": read("23305.30"),
            "tax": read("3211.78", tax_confidence),
            "total": read("26517.08"),
            "total_in_words": FieldResult(
                value=checked.value, raw=words, confidence=0.46, valid=False, errors=checked.errors
            ),
        }

    fields = page("分分")
    cross_check(vat, None, fields)
    words = fields["total_in_words"]
    assert (words.value, words.valid, words.errors, words.raw) == ("26517.08", True, [], "分分")
    assert words.note == (
        "taken from total, which amount + tax = total vouches for: its print read '分分', no amount"
    )
    unsure = page("万整仟贰佰元角", tax_confidence=0.7)  # the tax vouches for nothing
    cross_check(vat, None, unsure)
    assert not unsure["total_in_words"].valid
    another = page("贰万陆仟伍佰壹拾柒元整")  # reads 26517.00: a person looks
    cross_check(vat, None, another)
    assert another["total_in_words"].value == "26517.00" and not another["total_in_words"].valid


def test_a_name_with_a_doubtful_character_is_flagged_and_the_fallback_reads_it(
    extractor: Extractor,
) -> None:
    """Names have no check digit or rule: one doubtful character (below 0.8) flags the name,
    and the fallback's full-page reading, when it is sure, replaces it (a seller's name read on
    with the rule below it, '—' at 0.42). (geometry/0055's buyer name was the example until its
    print, 1.75 mm below the form's cells, was cut where it lies; then this page's buyer name,
    博越教软件 for 博越毅软件, until print beside a rule erased from its black-and-white crop
    kept its edge.)"""
    path = FIXTURES / "medium/vat_invoice_0027.jpg"
    expected = truth(path)["pages"][0]["fields"]["seller_name"]
    roi_only = Extractor(engine=extractor.engine, fallback="never").extract(path, "vat_invoice")
    name = roi_only.pages[0].fields["seller_name"]
    assert name.value != expected and not name.valid
    assert any("uncertain character" in e for e in name.errors)
    fixed = extractor.extract(path, "vat_invoice").pages[0].fields["seller_name"]
    assert (fixed.value, fixed.valid, fixed.source) == (expected, True, "fallback")


def test_a_fallback_name_takes_the_confidences_of_its_line_read_again() -> None:
    """Full-page OCR scores a whole line; the line read again carries one confidence per
    character (its label and spaces aside), and a second reading that differs is doubt."""
    again = Recognition(
        "称：天津 和平医院", 0.9, (0.99, 0.99, 0.98, 0.97, 1.0, 0.6, 0.95, 0.9, 0.99)
    )
    read, doubt = _within("天津 和平医院", 0.97, again)
    assert doubt is None and read.text == "天津 和平医院"
    assert read.char_confidences == (0.98, 0.97, 1.0, 0.6, 0.95, 0.9, 0.99)
    read, doubt = _within("天津和平区医院", 0.97, again)
    assert read.char_confidences == () and doubt == "read again as '称：天津 和平医院'"


def test_a_code_found_in_a_line_passes_only_sure_of_every_digit(extractor: Extractor) -> None:
    """A code the fallback finds in a line is full-page OCR's reading and the recogniser's of
    the same print, whose misreads agree: a digit at 0.85 passes in its box (0.8), not there
    (0.9). E-invoice 20297701 on an A4 sheet photographed small and blurred (heavy): no QR code
    read, its codes from the lines beside their labels, the invoice code 042001663311 read
    '042001663312' (its last digit at 0.61, when the box's bar was 0.6) and passed."""
    spec = TemplateStore().get("vat_invoice").field("invoice_code")
    read = Recognition("042001663312", 0.95, (0.99,) * 11 + (0.85,))
    assert extractor._field(spec, read, None).valid
    field = extractor._field(spec, read, None, bar=MIN_FOUND_CODE_CHAR_CONFIDENCE)
    assert not field.valid and field.errors == ["uncertain character '2' at 12 (confidence 0.85)"]
    doc = make_document(20297701, "heavy", electronic=True, a4=True)
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    truth = doc.truth["pages"][0]["fields"]
    for name in ("invoice_code", "invoice_number", "check_code"):
        field = page.fields[name]
        assert field.value == truth[name] or not field.valid, (name, field)


def test_a_dates_doubt_is_its_digits_doubt(extractor: Extractor) -> None:
    """heavy/vat_invoice_0041 read its date '2025年05/07日', the '/' (a blurred 月) at 0.49: the
    date is its digits, so a doubtful 年/月/日 or separator does not flag it; a doubtful digit
    does, and so does any doubt when the text does not read as a date."""
    spec = TemplateStore().get("vat_invoice").field("issue_date")
    confs = [0.99] * 11
    confs[7] = 0.49
    field = extractor._field(spec, Recognition("2025年05/07日", 0.95, tuple(confs)), None)
    assert (field.value, field.valid, field.errors) == ("2025-05-07", True, [])
    confs[7], confs[6] = 0.99, 0.49
    field = extractor._field(spec, Recognition("2025年05/07日", 0.95, tuple(confs)), None)
    assert not field.valid and field.errors == ["uncertain character '5' at 7 (confidence 0.49)"]
    confs[6], confs[4] = 0.99, 0.49
    field = extractor._field(spec, Recognition("2025年05/0/日", 0.95, tuple(confs)), None)
    assert not field.valid and any("uncertain character '年'" in e for e in field.errors)


def _amounts(**changes: tuple[str | None, list[str]]) -> dict[str, FieldResult]:
    values = {"amount": "4513.27", "tax": "586.73", "total": "5100.00", "total_in_words": "5100.00"}
    fields = {
        name: FieldResult(value=value, raw=value, confidence=0.99, valid=True)
        for name, value in values.items()
    }
    for name, (value, errors) in changes.items():
        fields[name] = FieldResult(value=value, raw=value or "", confidence=0.5, valid=False)
        fields[name].errors = errors
    return fields


def test_a_mended_amount_confirmed_by_a_rule_keeps_its_mend_in_the_note() -> None:
    """A total read '¥5100 00' with a doubtful digit: its point is restored from amount + tax,
    and the words then confirm it; the note says both, the mend is never silent."""
    template = TemplateStore().get("vat_invoice")
    doubt = ["uncertain character '1' at 2 (confidence 0.41)"]
    fields = _amounts(total=("510000", doubt))
    fields["total"].raw = "¥5100 00"
    _mend_amounts(template, fields)
    _require_confirmation(template, fields, {})
    total = fields["total"]
    assert (total.value, total.valid) == ("5100.00", True)
    assert total.note == (
        "decimal point restored from amount + tax = total; confirmed by amount + tax = total"
    )


def test_an_amount_one_character_off_what_two_passing_readings_give_is_mended() -> None:
    """heavy synthetic page 20269231 read its total '¥47443.489' (a speck after the 8) while
    amount and tax read right: the total takes amount + tax, and says so."""
    template = TemplateStore().get("vat_invoice")
    slips = {
        "5100.001": "one character corrected from amount + tax = total",
        "51O0.00": "one character corrected from amount + tax = total",
        "95100.00": "the ¥ read as a digit from amount + tax = total",
        "45100.70": "the ¥ read as a digit, one character corrected from amount + tax = total",
    }
    for raw, note in list(slips.items())[:-1]:
        fields = _amounts(total=(raw, ["not an amount"]), total_in_words=(None, ["empty"]))
        _mend_amounts(template, fields)
        total = fields["total"]
        assert (total.value, total.raw, total.valid, total.note) == ("5100.00", raw, True, note)
        assert total.errors == []
    # the ¥ read as a digit and a character misread: mended, but two slips fit a sum whose other
    # term was misread too (fresh heavy 20292001's total '414125.94', taken as 14125.95 to fit a
    # tax the fallback read 1625.12 for 1625.11): flagged
    fields = _amounts(total=("45100.70", ["not an amount"]), total_in_words=(None, ["empty"]))
    _mend_amounts(template, fields)
    total = fields["total"]
    assert (total.value, total.valid) == ("5100.00", False)
    assert total.note == slips["45100.70"]
    assert total.errors[0].startswith(TWO_SLIPS)
    # two characters off, or a reading that passed its own checks: flagged as before, not mended
    for raw, errors in (("5100.11", ["not an amount"]), ("5100.01", [])):
        fields = _amounts(total=(raw, errors), total_in_words=(None, ["empty"]))
        fields["total"].valid = not errors
        _mend_amounts(template, fields)
        assert fields["total"].value == raw and fields["total"].note is None
    # the value comes from readings that passed only: a doubtful tax gives none
    fields = _amounts(
        total=("5100.001", ["not an amount"]),
        tax=("586.73", ["uncertain character '3' at 7 (confidence 0.43)"]),
        total_in_words=(None, ["empty"]),
    )
    _mend_amounts(template, fields)
    assert fields["total"].value == "5100.001" and not fields["total"].valid


def test_a_sum_made_to_hold_by_two_slips_vouches_for_none_of_its_other_amounts() -> None:
    """fresh geometry page 20294007 read '¥110.32' as '14110.32' (doubtful) and '¥1336.07' as
    '41336.07' (sure, its ¥ a 4): the tax took 41336.07 - 1225.75 = 40110.32, two slips away,
    and the wrong total passed because the sum then held. The sum holds with such a value by
    construction: it vouches for neither the total nor the amount, and the words, read in
    doubt, for nothing; all three are flagged."""
    template = TemplateStore().get("vat_invoice")
    fields = _amounts(
        tax=("14110.32", ["uncertain character '1' at 1 (confidence 0.49)"]),
        total_in_words=("壹仟叁佰整拾陆元零分", ["整 comes before 元"]),
    )
    fields["amount"].value, fields["amount"].raw = "1225.75", "¥1225.75"
    fields["total"].value = fields["total"].raw = "41336.07"
    _mend_amounts(template, fields)
    _require_confirmation(template, fields, {})
    assert fields["tax"].value == "40110.32" and fields["tax"].errors[0].startswith(TWO_SLIPS)
    assert not fields["total"].valid and not fields["amount"].valid
    assert fields["total"].errors == ["not cross-checked: tax, total_in_words flagged"]
    # the QR code stating the amount vouches for it as before; the total stays flagged
    fields = _amounts(tax=("14110.32", ["uncertain"]), total_in_words=(None, ["empty"]))
    fields["amount"].value, fields["amount"].raw = "1225.75", "¥1225.75"
    fields["total"].value = fields["total"].raw = "41336.07"
    _mend_amounts(template, fields)
    _require_confirmation(template, fields, {"amount": "1225.75"})
    assert fields["amount"].valid and not fields["total"].valid


def test_a_tax_whose_stars_were_read_otherwise_is_none_where_the_amount_is_the_total() -> None:
    """An exempt sale's tax prints ***: blur and a ruling through the stars read '***1', '*4*',
    '8' or nothing. Where the amount and the total read alike and sure, none is due: the tax is
    0.00, saying why. Not a tax read with its point or its ¥ (printed as an amount), not where
    the sum leaves a tax due, not the amount's box."""
    template = TemplateStore().get("vat_invoice")
    for raw in ("***1", "*4*", "8", ""):
        fields = _amounts(tax=(raw or None, ["empty"] if not raw else ["unexpected '*'"]))
        fields["amount"].value = fields["amount"].raw = "5100.00"
        _mend_amounts(template, fields)
        tax = fields["tax"]
        assert (tax.value, tax.valid, tax.raw) == ("0.00", True, raw)
        assert tax.note == f"{STARS_MISREAD} from amount + tax = total"
    for raw in ("28.50", "¥18", "1*2*3"):  # an amount printed, or more than the stars make
        fields = _amounts(tax=(raw, ["uncertain"]))
        fields["amount"].value = "5100.00"
        _mend_amounts(template, fields)
        assert fields["tax"].value == raw and not fields["tax"].valid
    fields = _amounts(tax=("***1", ["uncertain"]))  # 586.73 due: not the stars
    _mend_amounts(template, fields)
    assert fields["tax"].value == "***1" and not fields["tax"].valid


def test_a_red_letter_invoices_amounts_are_mended_negative() -> None:
    """A red-letter invoice's amounts are all negative: its minus read as a point
    ('¥.7477.88') or lost ('42.90') is one character the sum rule gives back (fresh heavy and
    geometry red-letter pages 20297009, 20297012). A term is not given a sign its total lacks."""
    template = TemplateStore().get("vat_invoice")
    red = {
        "amount": "-7477.88",
        "tax": "-972.12",
        "total": "-8450.00",
        "total_in_words": "-8450.00",
    }
    for name, raw in (("amount", "¥.7477.88"), ("tax", "¥972.12"), ("total", "-845O.00")):
        fields = _amounts(**{name: (raw, ["misread"])})
        for other, value in red.items():
            if other != name:
                fields[other].value = fields[other].raw = value
        _mend_amounts(template, fields)
        assert (fields[name].value, fields[name].valid) == (red[name], True)
        assert fields[name].note == "one character corrected from amount + tax = total"
    fields = _amounts(tax=("¥-58.73", ["misread"]))  # 586.73 due, positive as its total
    _mend_amounts(template, fields)
    assert fields["tax"].value == "¥-58.73" and not fields["tax"].valid


@pytest.mark.parametrize(("seed", "level"), [(20295005, "medium"), (20295014, "geometry")])
def test_an_exempt_tax_read_with_a_ruling_through_its_stars_is_none(
    extractor: Extractor, seed: int, level: str
) -> None:
    """Fresh exempt pages whose tax's stars the page's ruling crosses: read '***1' (medium) and
    '*4*' (a steep photo), flagged; the QR code's amount and the total read alike say none is
    due. (Read from crops whose grainy paper is left grey, the stars may read as printed.)"""
    doc = make_document(seed, level, tax_exempt=True)
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    tax = page.fields["tax"]
    assert (tax.value, tax.valid, tax.source) == ("0.00", True, "roi")
    assert "*" in tax.raw and tax.note is not None
    if tax.raw != "***":
        assert tax.note.startswith(STARS_MISREAD), tax.note


@pytest.mark.parametrize(
    ("seed", "level", "options", "read", "mended"),
    [
        (
            20297608,
            "heavy",
            {"electronic": True},
            {"amount": ("77.59", []), "tax": ("22.43", []), "total": ("¥90.00", [])},
            {"tax": "12.41"},
        ),
        (
            20297606,
            "geometry",
            {},
            {
                "amount": ("¥644.78", []),
                "tax": ("¥58.2", []),
                "total": ("4702.80", ["uncertain character '4' at 1 (confidence 0.22)"]),
            },
            {"tax": "58.02", "total": "702.80"},
        ),
        (
            20297704,
            "heavy",
            {"pins": Pins(along_dpi=180, ribbon=0.5)},
            {
                "amount": ("32.30", ["uncertain character '3' at 1 (confidence 0.42)"]),
                "tax": ("13.66", []),
                "total": ("35.96", []),
            },
            {},  # 3.66 costs 1.9, every ¥ a digit 5.7: within the margin, left flagged
        ),
    ],
)
def test_a_sum_no_slip_makes_hold_takes_the_value_the_recogniser_finds_as_likely(
    extractor: Extractor,
    crops_of: CropsOf,
    seed: int,
    level: str,
    options: dict[str, Any],
    read: dict[str, tuple[str, list[str]]],
    mended: dict[str, str],
) -> None:
    """Fresh blurred pages whose amounts did not add up as read, each reading passing or in
    doubt of a character: an e-invoice's tax read '22.43' for 12.41 (the amount and the total
    read right), a photo's tax '¥58.2' for 58.02 and its total '4702.80' for ¥702.80. No slip
    of the ¥ or the point makes the sum hold; the value the others give one field does, and the
    recogniser finds it about as likely in that field's crop as the reading (every other way
    far less): it is taken, the reading kept in the note. A worn ribbon's '32.30' (in doubt) +
    '13.66' = '35.96' holds two ways with slips, the tax's ¥ read as a 1 (3.66) or every ¥ a
    digit (2.30 + 3.66 = 5.96): on its crops whitened to salt the recogniser found the first
    far likelier (1.3 against 6.8) and the tax took 3.66; on its crops with their grey paper
    kept, 1.9 against 5.7, too close to tell, and all three stay flagged. (The readings are
    given, as these pages were read on one CPU; the recogniser's likelihoods on the crops
    decide.)"""
    template = extractor.templates.get("vat_invoice")
    doc = make_document(seed, level, **options)
    fields = {}
    for name, (raw, doubts) in read.items():
        checked = check_value(template.field(name), raw)
        errors = [*checked.errors, *doubts]
        fields[name] = FieldResult(
            value=checked.value, raw=raw, confidence=0.9, valid=not errors, errors=errors
        )
    crops = crops_of(extractor, doc.jpeg, template.name)
    cross_check(template, None, fields, judge=_crop_judge(extractor.engine.likelihoods, crops))
    truth = doc.truth["pages"][0]["fields"]
    if not mended:  # the recogniser cannot tell the ways apart: every field left flagged
        assert not any(f.valid for f in fields.values())
        return
    assert {name: (f.value, f.valid) for name, f in fields.items()} == {
        name: (truth[name], True) for name in read
    }
    for name, value in mended.items():
        note = fields[name].note
        assert note is not None and note.startswith(f"read {read[name][0]!r}: taken as {value}")


def test_a_sum_two_ways_make_hold_alike_is_left_flagged() -> None:
    """Where giving the tax its value and giving the amount its value cost the recogniser
    about the same (within :data:`SUM_MARGIN`), the print does not say which was misread:
    nothing is taken, and the sum flags its fields as before."""
    template = TemplateStore().get("vat_invoice")
    fields = _amounts(total_in_words=(None, ["empty"]))
    fields["tax"] = FieldResult(value="536.73", raw="¥536.73", confidence=0.95, valid=True)
    for gap, taken in ((SUM_MARGIN / 2, False), (SUM_MARGIN * 2, True)):
        trial = {name: field.model_copy(deep=True) for name, field in fields.items()}
        cost = {"tax": 1.0, "amount": 1.0 + gap, "total": 30.0}

        def judge(name: str, texts: list[str], cost: dict[str, float] = cost) -> list[float]:
            return [0.0, *[-cost[name]] * (len(texts) - 1)]

        cross_check(template, None, trial, judge=judge)
        assert (trial["tax"].value == "586.73") is taken
        assert trial["tax"].valid is taken and trial["amount"].value == "4513.27"


def test_a_sum_mended_by_likelihood_that_holds_another_way_too_is_left_flagged() -> None:
    """Fresh worn-ribbon heavy 20297906: ¥245.19 + ¥7.36 = ¥252.55 read '9245.19', '17.30',
    '9252.55' (the ¥ read as a 9 twice). Taking 7.36 for the tax makes 9245.19 + 7.36 =
    9252.55 hold, and 245.19 + 7.36 = 252.55 with it: the sum cannot tell which amount and
    total are meant however cheaply the recogniser finds 7.36 in the tax's print; nothing is
    taken, and the amounts stay flagged."""
    template = TemplateStore().get("vat_invoice")
    read = {"amount": "9245.19", "tax": "17.30", "total": "9252.55"}
    fields = {
        name: FieldResult(value=value, raw=value, confidence=0.95, valid=True)
        for name, value in read.items()
    }

    def judge(name: str, texts: list[str]) -> list[float]:
        return [0.0, *[-0.5 if name == "tax" else -20.0] * (len(texts) - 1)]

    cross_check(template, None, fields, judge=judge)
    assert {name: (f.value, f.valid) for name, f in fields.items()} == {
        name: (value, False) for name, value in read.items()
    }


def test_a_doubtful_amount_the_sum_fits_as_read_with_a_slip_elsewhere_is_not_corrected() -> None:
    """Fresh worn-ribbon heavy 20297704: ¥32.30 + ¥3.66 = ¥35.96 read '32.30' (in doubt of its
    3), '13.66' (the ¥ read as a 1, sure) and '35.96'. The tax as read would correct the amount
    to 22.30, one character off, and both passed, wrong; but the sum holds with the amount as
    read and the tax's 1 dropped. The rule cannot say which slip it was: nothing is mended,
    nothing wrong passes."""
    template = TemplateStore().get("vat_invoice")
    fields = {
        "amount": FieldResult(
            value="32.30",
            raw="32.30",
            confidence=0.73,
            valid=False,
            errors=["uncertain character '3' at 1 (confidence 0.42)"],
        ),
        "tax": FieldResult(value="13.66", raw="13.66", confidence=0.88, valid=True),
        "total": FieldResult(value="35.96", raw="35.96", confidence=0.85, valid=True),
    }
    cross_check(template, None, fields)
    assert fields["amount"].value == "32.30"
    assert not any(
        field.valid and field.value != value
        for field, value in zip(fields.values(), ("32.30", "3.66", "35.96"), strict=True)
    )


def test_slips_before_and_inside_amounts_that_make_the_sum_hold_are_mended_together() -> None:
    """geometry/vat_invoice_0053 (a phone photo at ~110 dpi): '¥32951.14' read '93295114' (the ¥
    a 9, the point lost), '¥2965.60' read '1¥2965.60' (a rule before the ¥ read as 1) and
    '¥35916.74' read '435916.74'. Each alone is one slip too many for the other mends; together
    there is exactly one way for amount + tax = total to hold."""
    template = TemplateStore().get("vat_invoice")
    fields = _amounts(
        amount=("93295114.00", ["uncertain character '9' at 1 (confidence 0.16)"]),
        tax=(None, ["unexpected characters in an amount: '¥'"]),
        total=("435916.74", ["uncertain character '4' at 1 (confidence 0.05)"]),
        total_in_words=(None, ["empty"]),
    )
    fields["amount"].raw, fields["tax"].raw = "93295114", "1¥2965.60"
    _mend_amounts(template, fields)
    assert [fields[n].value for n in ("amount", "tax", "total")] == [
        "32951.14",
        "2965.60",
        "35916.74",
    ]
    assert all(fields[n].valid and not fields[n].errors for n in ("amount", "tax", "total"))
    rule = "from amount + tax = total"
    assert fields["amount"].note == f"the ¥ read as a digit, decimal point restored {rule}"
    assert fields["tax"].note == f"what was read before the ¥ dropped {rule}"
    assert fields["total"].note == f"the ¥ read as a digit {rule}"
    # what follows the ¥ must make the sum hold (to the cent, or one character off)
    fields = _amounts(tax=(None, ["unexpected characters in an amount: '¥'"]))
    fields["tax"].raw = "1¥591.23"
    _mend_amounts(template, fields)
    assert fields["tax"].value is None and not fields["tax"].valid


def test_no_amount_is_corrected_from_a_term_read_in_doubt_and_taken_as_read() -> None:
    """medium/vat_invoice_0027 sent at 42% of its size read '¥54.3' for ¥54.35 (doubted for its
    one decimal, taken as 54.30) and '45.46' for ¥5.40 (its ¥ a 4): the tax was corrected to
    59.75 - 54.30 = 5.45, and the rule it was made to hold then confirmed 54.30, both wrong and
    valid. A correction takes its value from terms that are sure, or whose doubt a slip
    explains; here there is none, and both stay flagged."""
    template = TemplateStore().get("vat_invoice")
    fields = _amounts(
        amount=("54.30", ["read with 1 decimal where 2 are printed"]),
        tax=("45.46", ["uncertain character '4' at 1 (confidence 0.00)"]),
    )
    fields["amount"].raw, fields["tax"].raw = "¥54.3", "45.46"
    fields["total"].value = fields["total_in_words"].value = "59.75"
    _mend_amounts(template, fields)
    _require_confirmation(template, fields, {})
    assert [fields[n].value for n in ("amount", "tax")] == ["54.30", "45.46"]
    assert not fields["amount"].valid and not fields["tax"].valid


def test_no_amount_is_corrected_from_a_term_read_unsure() -> None:
    """An e-invoice photographed small on its A4 sheet read '¥77193.78' as '977193.78', '¥10035.19'
    as '910035.19' (tax at 0.64) and ¥87228.97 as 67228.97 (passing): with both ¥ read as
    digits, the amount one character off total - tax, it was 'corrected' to 57193.78, and the
    wrong total passed with it. A 数电票 so photographed: the amount corrected from a tax read
    492.84 at 0.72 from the fallback (492.04). A value given by other readings is as sure as
    they are: a term read under MEND_TERM_CONFIDENCE gives none; the same readings surer do, but
    the amount's two slips (the ¥ read as a digit, a character misread) leave it flagged."""
    template = TemplateStore().get("vat_invoice")
    for confidence, mended in ((0.64, False), (0.9, True)):
        fields = _amounts(
            amount=("977193.78", ["uncertain character '9' at 1 (confidence 0.30)"]),
            tax=("910035.19", ["uncertain character '9' at 1 (confidence 0.20)"]),
            total_in_words=(None, ["empty"]),
        )
        fields["tax"].confidence = confidence
        fields["total"].value = fields["total"].raw = "67228.97"
        _mend_amounts(template, fields)
        assert (fields["amount"].value == "57193.78") is mended
        assert not fields["amount"].valid
        assert any(e.startswith(TWO_SLIPS) for e in fields["amount"].errors) is mended
    for confidence, mended in ((0.72, False), (0.85, True)):
        fields = _amounts(total=("5100.001", ["not an amount"]), total_in_words=(None, ["empty"]))
        fields["tax"].confidence = confidence
        _mend_amounts(template, fields)
        assert (fields["total"].value, fields["total"].valid) == (
            ("5100.00", True) if mended else ("5100.001", False)
        )


def test_amount_in_words_one_character_off_a_vouched_total_takes_its_value() -> None:
    """geometry/vat_invoice_0053 read ⊗叁万伍仟玖佰壹拾陆元柒角肆分 without its 柒: one character
    off the words of a total that amount + tax vouch for, so the words take the total; two
    characters off words of 10 or more too (fresh geometry 20277004 read 叁拾捌万叁仟壹佰拾元
    叁角壹分 for 383178.31); three, or two off shorter words, or a total nothing else vouches
    for, and the words stay flagged."""
    from extractor.cross_check import _mend_words

    template = TemplateStore().get("vat_invoice")
    for raw, mended in (
        ("叁万伍仟玖佰壹拾陆元角肆分", True),
        ("叁万伍仟玖佰拾陆元角肆分", True),
        ("叁万伍仟玖佰拾元角肆分", False),
    ):
        fields = _amounts(
            amount=("32951.14", []), tax=("2965.60", []), total_in_words=(None, ["cannot read"])
        )
        for name in ("amount", "tax"):
            fields[name].valid = True
        fields["total"].value = fields["total"].raw = "35916.74"
        fields["total_in_words"].raw = raw
        _mend_words(template, fields)
        words = fields["total_in_words"]
        assert (words.value, words.valid) == (("35916.74", True) if mended else (None, False))
    assert words.note is None
    fields["total_in_words"].raw = "叁万伍仟玖佰壹拾陆元角肆分"
    fields["tax"].value = "2965.61"  # the sum no longer holds: nothing vouches for the total
    _mend_words(template, fields)
    assert fields["total_in_words"].value is None
    fields = _amounts(total_in_words=(None, ["cannot read"]))
    fields["total_in_words"].raw = "⊗伍仟壹佰圆"  # 整 lost: the words of 5100.00 are 伍仟壹佰元整
    _mend_words(template, fields)
    assert fields["total_in_words"].note == (
        "one character corrected from total_in_words = total (total vouched for by amount + tax "
        "= total)"
    )
    fields = _amounts(total_in_words=(None, ["cannot read"]))
    fields["total_in_words"].raw = "⊗伍仟佰圆"  # 壹 and 整 lost from six characters: left flagged
    _mend_words(template, fields)
    assert fields["total_in_words"].value is None and not fields["total_in_words"].valid


def test_amount_in_words_that_state_another_amount_are_not_mended_to_a_vouched_total() -> None:
    """Fresh worn geometry 20291019: the words read whole (叁拾壹万伍仟零肆拾玖圆伍角伍分,
    315049.55, right), in doubt for a weak 壹 only; the tax and the total both read 9 for 0
    (26913.27 and 315949.55), adding up with the amount. The words are two characters off the
    total's (零 for 玖佰) and took its value before. Blur and wear lose characters (拾叁元零叁分
    for 柒拾叁元零叁分 is mended); they do not read another one sure where the words state an
    amount: the words keep their value and say they differ from the total."""
    from extractor.cross_check import _mend_words
    from extractor.fields import parse_amount_words

    template = TemplateStore().get("vat_invoice")
    for raw, amounts, mended in (
        ("拾叁元零叁分", ("64.63", "8.40", "73.03"), True),  # 柒 lost: states 13.03
        ("叁拾壹万伍仟零肆拾玖圆伍角伍分", ("289036.28", "26913.27", "315949.55"), False),
    ):
        fields = _amounts(total_in_words=(None, ["uncertain character"]))
        for name, value in zip(("amount", "tax", "total"), amounts, strict=True):
            fields[name].value = fields[name].raw = value
            fields[name].valid = True
        words = fields["total_in_words"]
        words.raw = raw
        _mend_words(template, fields)
        assert (words.value == amounts[2], words.valid) == (mended, mended)
        differ = f"total_in_words and total differ: {parse_amount_words(raw)} vs {amounts[2]}"
        assert (differ in words.errors) is not mended


def test_a_name_the_fallback_found_without_its_start_takes_the_start_from_its_box() -> None:
    """geometry/vat_invoice_0052: a rule across 广 hid it from full-page detection, which found
    '州智顺越东贸易有限责任公司' (and read again from where it began, the same); the box's own
    reading, flagged, was '广州香顺越乐责易有限责任公司'. The name takes the box's first
    character and stays flagged; a box reading that does not hold the name is left out."""
    from extractor.pipeline import _doubt_a_lost_start

    found = FieldResult(value="州智顺越东贸易有限责任公司", raw="", confidence=0.99, valid=True)
    _doubt_a_lost_start(found, "广州香顺越乐责易有限责任公司")
    assert (found.value, found.valid) == ("广州智顺越东贸易有限责任公司", False)
    assert found.errors == ["the line found starts after '广', read in its box"]
    for own in (
        "北京春女明维机板设备公司",
        "州智顺越东贸易有限责任公司",
        "一二三四州智顺越东贸易有限责任公司",
    ):
        found = FieldResult(value="州智顺越东贸易有限责任公司", raw="", confidence=0.99, valid=True)
        _doubt_a_lost_start(found, own)
        assert (found.value, found.valid) == ("州智顺越东贸易有限责任公司", True), own
    # medium/vat_invoice_0028 thresholded to black and white: the box read a 中 more inside
    # the name, not in front of it (the name was '郑郑州市…' before)
    found = FieldResult(value="郑州市金水区突病预防控制中心", raw="", confidence=0.9, valid=True)
    _doubt_a_lost_start(found, "郑州市中金水区疾病预防控副中心")
    assert (found.value, found.valid) == ("郑州市金水区突病预防控制中心", True)
    # fresh geometry page 20269542: the box read the label's 称 in front of a whole name
    found = FieldResult(value="杭州恒丰机械设备有限公司", raw="", confidence=0.99, valid=True)
    _doubt_a_lost_start(found, "称杭州恒丰机械设备有限公司", "名称")
    assert (found.value, found.valid) == ("杭州恒丰机械设备有限公司", True)
    # fresh heavy page 20274059: the box read the label's end, misread (本： for 称：), and the
    # three characters the full-page line lost; the label's colon, read in front, is the form's
    for own in ("本：天津力瑞电子股份有限公司", "名称：天津力瑞电子股份有限公司"):
        found = FieldResult(value="瑞电子股份有限公司", raw="", confidence=0.99, valid=True)
        _doubt_a_lost_start(found, own, "名称")
        assert (found.value, found.valid) == ("天津力瑞电子股份有限公司", False), own
    found = FieldResult(value="天津力瑞电子股份有限公司", raw="", confidence=0.99, valid=True)
    _doubt_a_lost_start(found, "本：天津力瑞电子股份有限公司", "名称")
    assert (found.value, found.valid) == ("天津力瑞电子股份有限公司", True)


def test_a_name_the_fallback_found_without_its_start_is_flagged_on_a_photo() -> None:
    """Fresh heavy page 20274059 (a crooked scan turned 270°, blurred): the buyer's box read
    '本：天津力瑞电子股份有限公司' (the label's 称： misread, flagged for its colon) and the
    fallback's line '瑞电子股份有限公司', which passed. It takes the box's 天津力 and is
    flagged."""
    doc = make_document(20274059, "heavy")
    (page,) = Extractor(fallback="auto").extract(doc.jpeg, "vat_invoice").pages
    name = page.fields["buyer_name"]
    assert name.value == doc.truth["pages"][0]["fields"]["buyer_name"] == "天津力瑞电子股份有限公司"
    assert not name.valid and any(e.startswith(LATE_START) for e in name.errors)


def test_a_name_the_fallback_found_without_its_end_is_flagged() -> None:
    """light/vat_invoice_0025 sent at 58% of its size: a seal's ring across 理股 split the
    full-page line, whose first part '深圳中美卓东物业管理' passed for the seller's name; the
    box's own reading, flagged, went on with 股份有限公司. The name is flagged; a box reading
    that ends where the name does, or goes on with no name's characters, flags nothing."""
    from extractor.pipeline import _doubt_a_lost_end

    found = FieldResult(value="深圳中美卓东物业管理", raw="", confidence=1.0, valid=True)
    _doubt_a_lost_end(found, "深圳中美卓东物业管理股份有限公司4921R")
    assert (found.value, found.valid) == ("深圳中美卓东物业管理", False)
    assert found.errors == [
        "the line found ends before '股份有限公司4921R', read after it in its box"
    ]
    for own in (
        "深圳中美卓东物业管理股份有限公司",  # a line that ends as the box's reading does
        "称：深圳中美卓东物业管理股份有限公司",
        "深圳中美卓东物业管理股份有限公司91440307MA",  # the tax id below, run into the box
        "北京春女明维机板设备公司股份有限公司",  # not the same line
    ):
        found = FieldResult(
            value="深圳中美卓东物业管理股份有限公司", raw="", confidence=1.0, valid=True
        )
        _doubt_a_lost_end(found, own)
        assert found.valid and not found.errors, own


def test_a_small_image_of_a_form_passes_no_name_cut_short(extractor: Extractor) -> None:
    """The page of the test above at 58% of its size (1,101 px wide, JPEG quality 60): the
    seller's name is read whole, or flagged; never passed without its 股份有限公司."""
    path = FIXTURES / "light/vat_invoice_0025.jpg"
    image = cv2.imread(str(path))
    height, width = image.shape[:2]
    small = cv2.resize(
        image, (round(width * 0.58), round(height * 0.58)), interpolation=cv2.INTER_AREA
    )
    data = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, 60])[1].tobytes()
    (page,) = extractor.extract(data, "vat_invoice").pages
    name = page.fields["seller_name"]
    assert name.value == truth(path)["pages"][0]["fields"]["seller_name"] or not name.valid, name


@pytest.mark.parametrize("kind", ["national clean", "national light", "数电票 scan", "数电票 PDF"])
def test_a_red_letter_invoice_reads_its_negative_amounts(extractor: Extractor, kind: str) -> None:
    """A red-letter invoice (红字发票: a return or a discount, every amount negative, 负 before
    the words) reads whole under ``auto``, each amount negative and valid: the QR code states
    the negative amount, the sum holds in negatives, and ⊗负... parses to the negative total."""
    from extractor.synth.digital import digital_pdf, make_digital_document
    from extractor.synth.generate import make_document

    if kind == "数电票 PDF":
        data, truths = digital_pdf([7000, 7001], red_letter=True)
        expected = [entry["fields"] for entry in truths]
    else:
        if kind.startswith("national"):
            document = make_document(7100, kind.split()[1], red_letter=True)
        else:
            document = make_digital_document(7100, "clean", red_letter=True)
        data, expected = document.jpeg, [document.truth["pages"][0]["fields"]]
    pages = extractor.extract(data, "auto").pages
    assert [{k: f.value for k, f in page.fields.items()} for page in pages] == expected
    assert all(f.valid for page in pages for f in page.fields.values())
    for fields in expected:
        assert all(fields[name].startswith("-") for name in ("amount", "tax", "total"))


@pytest.mark.parametrize(("seed", "level"), [(7100, "light"), (7102, "medium")])
def test_a_form_printed_in_green_reads_whole(seed: int, level: str) -> None:
    """The national form printed in green ink (some copies and older forms are) registers on
    the brown reference and every field reads right and valid from its box (that a green
    form's ink is dropped and a green highlighter's print kept: tests/test_crops.py)."""
    from extractor.synth.generate import make_document

    document = make_document(seed, level, form_ink="green")
    (page,) = Extractor(fallback="never").extract(document.jpeg, "vat_invoice").pages
    expected = document.truth["pages"][0]["fields"]
    assert {k: (f.value, f.valid) for k, f in page.fields.items()} == {
        k: (v, True) for k, v in expected.items()
    }


@pytest.mark.parametrize(
    ("name", "corner", "field", "leg"),
    [
        ("clean/vat_invoice_0010.jpg", "tl", "buyer_name", 0.2),  # 航 read 亢, half covered
        ("digital/scans/vat_invoice_digital_0009.jpg", "tl", "buyer_name", 0.225),  # 媒有限公司…
        ("medium/vat_invoice_0030.jpg", "bl", "seller_name", 0.2),  # 方 lost
    ],
)
def test_a_name_a_folded_corner_covers_is_not_passed(
    extractor: Extractor, name: str, corner: str, field: str, leg: float
) -> None:
    """A corner of the paper folded over before the scan (the fold ~50 mm from the corner
    along both edges: ``leg`` of the image's width) covers the start of a name: what is left
    of it read as the name and passed (names have no check). The form's labels and rules
    beside the box are missing where the flap lies, and the name is in doubt, saying so; the
    other party's name, whose box's surroundings show, passes as before."""
    from extractor.covered import COVERED_BY, covered_names
    from extractor.synth.degrade import fold_corner

    path = FIXTURES / name
    image = cv2.imread(str(path))
    folded = fold_corner(image, corner, leg * image.shape[1])
    expected = truth(path)["pages"][0]["fields"]
    (page,) = extractor.extract(cv2.imencode(".jpg", folded)[1].tobytes(), "auto").pages
    result = page.fields[field]
    assert not result.valid and result.value != expected[field]
    assert any(error.startswith(COVERED_BY) for error in result.errors), result.errors
    other = "seller_name" if field == "buyer_name" else "buyer_name"
    assert (page.fields[other].value, page.fields[other].valid) == (expected[other], True)
    template = extractor.templates.get(page.template)
    plain = register(image, template)
    assert plain.on_form is not None and covered_names(template, plain.on_form) == {}


@pytest.mark.parametrize(
    ("name", "note", "field"),
    [
        # over the middle of the buyer's name, its end hidden (济南东 passed); the note covers
        # the frame's top too, and the page is aligned by its printed labels
        ("light/vat_invoice_0024.jpg", (0.253, 0.0, 0.464, 0.329), "buyer_name"),
        ("medium/vat_invoice_0036.jpg", (0.265, 0.0, 0.566, 0.401), "buyer_name"),  # 成都方
        # over the seller's label and the start of its name (建材有限公司 passed)
        ("clean/vat_invoice_0011.jpg", (0.0, 0.543, 0.256, 1.0), "seller_name"),
    ],
)
def test_a_name_a_sticky_note_covers_is_not_passed(
    extractor: Extractor, name: str, note: tuple[float, float, float, float], field: str
) -> None:
    """A yellow sticky note laid on the invoice (x0, y0, x1, y1: shares of the image) hides
    part of a name; what shows of it read as the name and passed. The form's labels and rules
    along the box are missing under the note, and the name is in doubt, saying so."""
    from extractor.covered import COVERED_BY

    path = FIXTURES / name
    image = cv2.imread(str(path))
    h, w = image.shape[:2]
    x0, y0, x1, y1 = (round(v) for v in (note[0] * w, note[1] * h, note[2] * w, note[3] * h))
    image[y0:y1, x0:x1] = (140, 240, 255)
    expected = truth(path)["pages"][0]["fields"]
    (page,) = extractor.extract(cv2.imencode(".jpg", image)[1].tobytes(), "auto").pages
    result = page.fields[field]
    assert not result.valid and result.value != expected[field]
    assert any(error.startswith(COVERED_BY) for error in result.errors), result.errors


def test_one_partys_tax_id_read_for_the_others_is_flagged(extractor: Extractor) -> None:
    """A sticky note over the seller's block (its labels, the start of its name and tax id):
    the fallback found a 纳税人识别号 label and took the id beside it, the buyer's, for the
    seller's; it passes its check character. No taxpayer invoices itself: tax ids read alike
    are flagged, and the buyer's, read from its own box, says so too."""
    path = FIXTURES / "clean/vat_invoice_0010.jpg"
    image = cv2.imread(str(path))
    h, w = image.shape[:2]
    x0, y0, x1, y1 = round(0.014 * w), round(0.649 * h), round(0.264 * w), h
    image[y0:y1, x0:x1] = (140, 240, 255)
    cv2.rectangle(image, (x0, y0), (x1 - 1, y1 - 1), (110, 190, 205), 2)  # its shaded edge
    expected = truth(path)["pages"][0]["fields"]
    jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
    (page,) = extractor.extract(jpeg, "auto").pages
    seller, buyer = page.fields["seller_tax_id"], page.fields["buyer_tax_id"]
    assert seller.value == buyer.value == expected["buyer_tax_id"]
    assert not seller.valid and not buyer.valid
    assert any(error.startswith("the same tax id") for error in seller.errors)


def test_the_amounts_of_a_low_resolution_photo_add_up_after_their_slips() -> None:
    """geometry/vat_invoice_0053: a low-resolution photo whose amounts were each read with a
    slip (the ¥ as a digit, a point lost) before ECC ran at a quarter scale; now the tax reads
    right. Every amount is right, and each one read otherwise says which slip; the total, read
    '135916674' (the ¥ a 1, its point lost and a 6 too many), is flagged for its slips (the ¥
    and a character: :data:`~extractor.cross_check.TWO_SLIPS`), and the words then have no total
    vouched for to take (before, both passed). A sum made to hold so vouches for neither other
    amount: they are right, and flagged as not cross-checked. Since its crops keep their grey
    paper (not whitened into salt) every amount reads as printed, and all pass; either way no
    amount is wrong, and one read otherwise says which slip."""
    path = FIXTURES / "geometry/vat_invoice_0053.jpg"
    (page,) = Extractor(fallback="never").extract(path, "vat_invoice").pages
    truth = json.loads(path.with_suffix(".json").read_text())
    expected = truth["pages"][0]["fields"]
    total = page.fields["total"]
    for name in ("amount", "tax", "total"):
        field = page.fields[name]
        assert field.value == expected[name], name
        if re.sub(r"[^0-9.]", "", field.raw) != expected[name]:
            assert "from amount + tax = total" in (field.note or ""), name
        if name != "total" and not total.valid:
            assert field.errors == ["not cross-checked: total flagged"], name
    if re.sub(r"[^0-9.]", "", total.raw) != expected["total"]:  # its slips: flagged
        assert total.errors[0].startswith(TWO_SLIPS)
        assert not page.fields["total_in_words"].valid
    else:
        assert all(page.fields[n].valid for n in ("amount", "tax", "total", "total_in_words"))


def test_a_yen_read_as_a_digit_is_dropped_when_only_that_makes_the_sum_hold() -> None:
    """heavy/vat_invoice_0041 (blurred, upside down) read '9140929.50', '912683.66' and
    '4153613.24': every ¥ a digit, and the amount's 8 a 0."""
    template = TemplateStore().get("vat_invoice")
    doubt = ["uncertain character '9' at 1 (confidence 0.02)"]
    fields = _amounts(
        amount=("94513.27", doubt), tax=("4586.73", doubt), total_in_words=(None, ["empty"])
    )
    _mend_amounts(template, fields)
    assert [fields[n].value for n in ("amount", "tax", "total")] == ["4513.27", "586.73", "5100.00"]
    assert fields["tax"].note == "the ¥ read as a digit from amount + tax = total"
    assert fields["total"].note is None and fields["total"].valid
    assert fields["amount"].valid and fields["tax"].valid and fields["tax"].errors == []
    # with one more character off in a doubtful reading: heavy/vat_invoice_0041's own
    fields = _amounts(
        amount=("9140929.50", doubt),
        tax=("912683.66", doubt),
        total=("4153613.24", doubt),
        total_in_words=(None, ["empty"]),
    )
    fields["tax"].confidence, fields["total"].confidence = 0.91, 0.88  # as that page read them
    _mend_amounts(template, fields)
    assert [fields[n].value for n in ("amount", "tax", "total")] == [
        "140929.58",
        "12683.66",
        "153613.24",
    ]
    assert not fields["amount"].valid and fields["amount"].note == (
        "the ¥ read as a digit, one character corrected from amount + tax = total"
    )
    assert fields["amount"].errors[0].startswith(TWO_SLIPS)
    # leading digits that belong to the amounts: dropping the 4 of amount and total would hold
    # too (513.27 + 586.73 = 1100.00 is not it, but 44758.00 + 2685.48 = 47443.48 is)
    fields = _amounts(total_in_words=(None, ["empty"]))
    for name, value in (("amount", "44758.00"), ("tax", "2685.48"), ("total", "47443.48")):
        fields[name].value = fields[name].raw = value
    _mend_amounts(template, fields)
    assert [fields[n].value for n in ("amount", "tax", "total")] == [
        "44758.00",
        "2685.48",
        "47443.48",
    ]
    assert all(fields[n].note is None for n in ("amount", "tax", "total"))
    # the same with a speck after the total: one character off either way, so no ¥ is dropped;
    # the total is mended from the readings that passed
    fields["total"].value = fields["total"].raw = "47443.489"
    fields["total"].errors, fields["total"].valid = ["more than two decimal places"], False
    _mend_amounts(template, fields)
    assert [fields[n].value for n in ("amount", "tax", "total")] == [
        "44758.00",
        "2685.48",
        "47443.48",
    ]
    assert fields["total"].note == "one character corrected from amount + tax = total"
    # the ¥ dropped from the tax and the total one character off: the total is corrected from
    # the amount and the tax as the slip explains it; the other way (the tax corrected to
    # 5100.01 - 4513.27 = 586.74) took a total in doubt as read, and is none
    fields = _amounts(
        tax=("4586.73", doubt), total=("5100.01", doubt), total_in_words=(None, ["empty"])
    )
    fields["tax"].confidence = 0.91  # its ¥ read as a 4, the rest sure (heavy/0041's tax)
    _mend_amounts(template, fields)
    assert [fields[n].value for n in ("tax", "total")] == ["586.73", "5100.00"]
    assert fields["total"].note == "one character corrected from amount + tax = total"


def test_a_doubtful_amount_the_sum_agrees_with_is_confirmed() -> None:
    template = TemplateStore().get("vat_invoice")
    fields = _amounts(tax=("586.73", ["uncertain character '3' at 7 (confidence 0.43)"]))
    _require_confirmation(template, fields, {})
    assert fields["tax"].valid and fields["tax"].note == "confirmed by amount + tax = total"
    # a format error is not doubt: no rule mends it
    fields = _amounts(total_in_words=("5100.00", ["unit 佰 has no digit before it"]))
    _require_confirmation(template, fields, {})
    assert not fields["total_in_words"].valid and fields["total"].valid


def test_a_sum_that_holds_two_ways_confirms_neither() -> None:
    """A heavy 300 dpi PDF scan read amount '472.67' and total '479.21', each with the ¥ before
    it read as a doubtful 4, and tax '¥6.54': the sum holds as read and with the 4s dropped
    (72.67 + 6.54 = 79.21, the print), so it vouches for neither; the words, unread, cannot."""
    template = TemplateStore().get("vat_invoice")
    fields = _amounts(
        amount=("472.67", ["uncertain character '4' at 1 (confidence 0.00)"]),
        total=("479.21", ["uncertain character '4' at 1 (confidence 0.41)"]),
        total_in_words=(None, ["missing 元 after the integer part"]),
    )
    fields["tax"] = FieldResult(value="6.54", raw="¥6.54", confidence=0.92, valid=True)
    _mend_amounts(template, fields)
    _require_confirmation(template, fields, {})
    for name in ("amount", "total"):
        assert not fields[name].valid and fields[name].value in ("472.67", "479.21")
        assert fields[name].errors[-1] == (
            "amount + tax = total holds read otherwise too: 72.67 + 6.54 = 79.21"
        )
    # with the ¥ read where it is printed, the one way it holds confirms as before
    fields["amount"].raw = "¥472.67"
    fields["amount"].errors = ["uncertain character '4' at 2 (confidence 0.40)"]
    fields["total"].raw = "¥479.21"
    fields["total"].errors = ["uncertain character '4' at 2 (confidence 0.41)"]
    _require_confirmation(template, fields, {})
    assert fields["amount"].valid and fields["total"].valid


def test_an_amount_only_the_qr_code_can_vouch_for() -> None:
    template = TemplateStore().get("vat_invoice")
    unreadable = {"total": (None, ["not found"]), "total_in_words": (None, ["not found"])}
    fields = _amounts(**unreadable)
    _require_confirmation(template, fields, {})
    assert not fields["amount"].valid and not fields["tax"].valid
    assert fields["amount"].errors == ["not cross-checked: total flagged"]
    fields = _amounts(**unreadable)
    stated = qr_values(template, "01,04,1100,12345678,4513.27,20240512,,abcd")
    _require_confirmation(template, fields, stated)
    assert fields["amount"].valid and not fields["tax"].valid


def test_an_amount_that_passed_is_mended_when_the_value_it_is_given_is_surer() -> None:
    """Read right but for one character, with full confidence: a total read '¥8100.00' where
    amount + tax and the words both say 5100.00; a tax read '¥586.78' where the QR code states
    the amount and the words state the total."""
    template = TemplateStore().get("vat_invoice")
    fields = _amounts()
    fields["total"].value, fields["total"].raw = "8100.00", "¥8100.00"
    _mend_amounts(template, fields)
    total = fields["total"]
    assert (total.value, total.raw, total.valid) == ("5100.00", "¥8100.00", True)
    assert total.note == (
        "one character corrected from amount + tax = total and total_in_words = total"
    )
    fields = _amounts()
    fields["tax"].value, fields["tax"].raw = "586.78", "¥586.78"
    _mend_amounts(template, fields, {"amount": "4513.27"})
    tax = fields["tax"]
    assert (tax.value, tax.valid) == ("586.73", True)
    assert tax.note == (
        "one character corrected from amount + tax = total (amount vouched for by the QR code; "
        "total vouched for by total_in_words = total)"
    )
    # nothing vouches for the amount: the tax or the amount may be the one misread; flagged
    fields = _amounts()
    fields["tax"].value, fields["tax"].raw = "586.78", "¥586.78"
    _mend_amounts(template, fields, {"amount": "4513.21"})
    assert fields["tax"].value == "586.78" and fields["tax"].note is None
    # two characters off: another value, not a misreading of this one
    fields = _amounts()
    fields["total"].value, fields["total"].raw = "8100.09", "¥8100.09"
    _mend_amounts(template, fields)
    assert fields["total"].value == "8100.09" and fields["total"].note is None


def test_an_amount_read_with_a_digit_short_is_doubtful_and_mended(extractor: Extractor) -> None:
    """Amounts are printed with two decimals: heavy-geometry page 20269511 read its tax '¥341.4'
    (the 1 lost to blur), a value that passes as an amount. Read so it is in doubt, and one
    character off what amount and total give, so it is mended."""
    template = TemplateStore().get("vat_invoice")
    spec = template.field("tax")
    assert spec.decimals == 2
    for raw, doubt in (("¥341.4", "read with 1 decimal"), ("¥34114", "read with 0 decimals")):
        field = extractor._field(spec, Recognition(raw, 0.99, (0.99,) * len(raw)), None)
        assert not field.valid and field.errors == [f"{doubt} where 2 are printed"]
    assert extractor._field(spec, Recognition("¥341.14", 0.99, (0.99,) * 7), None).valid
    fields = _amounts()
    fields["tax"] = extractor._field(spec, Recognition("¥586.7", 0.99, (0.99,) * 6), None)
    _mend_amounts(template, fields)
    tax = fields["tax"]
    assert (tax.value, tax.valid, tax.errors) == ("586.73", True, [])
    assert tax.note == "one character corrected from amount + tax = total"


def test_a_name_line_the_fallback_finds_far_into_its_box_is_in_doubt(
    extractor: Extractor,
) -> None:
    """Full-page OCR that finds only the end of a name ('有限公司' 41 mm into the buyer's box on
    fresh heavy page 20269205, passed as valid): names are printed from the left of their box,
    so a line starting well into it is doubtful. The whole line is not."""
    path = FIXTURES / "clean/vat_invoice_0001.jpg"
    image = cv2.imread(str(path))
    template = TemplateStore().get("vat_invoice")
    homography = register(image, template).homography
    spec = template.field("seller_name")
    (crop,) = [c for c in crop_fields(image, homography, template) if c.spec is spec]
    name = truth(path)["pages"][0]["fields"]["seller_name"]
    assert name.endswith("有限公司")
    page = _Page(image, homography, template, None)
    whole = extractor._from_text(spec, (name, 0.99, crop.quad), page)
    assert whole is not None and (whole.value, whole.valid) == (name, True)
    # the line's last four characters of its len(name): the end of the same line
    share = 4 / len(name)
    end = crop.quad.copy()
    end[0] = crop.quad[1] + (crop.quad[0] - crop.quad[1]) * share
    end[3] = crop.quad[2] + (crop.quad[3] - crop.quad[2]) * share
    tail = extractor._from_text(spec, ("有限公司", 0.99, end), page)
    assert tail is not None and tail.value == "有限公司" and not tail.valid
    assert tail.errors[-1].startswith("the line found starts")


def test_a_name_line_found_late_does_not_win_over_a_reading_that_holds_its_start(
    extractor: Extractor,
) -> None:
    """Fresh heavy page 20269213: the buyer's box reads the whole name, flagged for one
    uncertain character (尔 at 0.64), and the fallback finds only its end, '滨分公司', 41 mm into
    the box and surer of it. Both are in doubt; the one that holds the other's start is kept."""
    from extractor.synth.generate import make_document

    document = make_document(20269213, "heavy")
    (page,) = extractor.extract(document.jpeg, "vat_invoice").pages
    name = page.fields["buyer_name"]
    assert name.value == document.truth["pages"][0]["fields"]["buyer_name"]
    assert name.source == "roi"


def test_a_code_digit_needs_more_confidence_than_an_amount_digit(extractor: Extractor) -> None:
    """Codes carry no check digit: fresh heavy page 20269207 passed a check code three digits
    off whose weakest digit read at 0.51, and wrong codes passed with a weakest digit of 0.66-0.78
    where right ones seldom have one under 0.9 (``MIN_CODE_CHAR_CONFIDENCE``). An amount's digit
    at 0.55 has its rules behind it."""
    template = TemplateStore().get("vat_invoice")
    confs = (0.99,) * 7 + (0.55,) + (0.99,) * 12
    code = extractor._field(template.field("check_code"), Recognition("5" * 20, 0.97, confs), None)
    assert not code.valid and code.errors == ["uncertain character '5' at 8 (confidence 0.55)"]
    # a check code's 0 read 9 at 0.73-0.78 passed on four forms of fresh heavy page 20297637
    confs = (0.99,) * 18 + (0.75,) + (0.99,)
    code = extractor._field(template.field("check_code"), Recognition("5" * 20, 0.98, confs), None)
    assert not code.valid and code.errors == ["uncertain character '5' at 19 (confidence 0.75)"]
    sure = extractor._field(
        template.field("check_code"), Recognition("5" * 20, 0.99, (0.85,) + (0.99,) * 19), None
    )
    assert sure.valid
    amount = extractor._field(
        template.field("total"), Recognition("¥5100.00", 0.97, (0.99, 0.55) + (0.99,) * 6), None
    )
    assert amount.valid


def test_a_code_the_fallback_finds_is_read_again_digit_by_digit(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """heavy/vat_invoice_0037 (blurred to ~100 dpi): the ROI path reads the invoice code with a
    digit below the codes' bar, and full-page OCR reads its line '641002366305' with a line
    score of ~0.9, which alone would pass. The line is read again by the recogniser: where that
    reading is sure of every digit it gives the code (the right one on the CPU this test was
    written on); where it is not (another CPU's rounding: '94 1002306 305'), the field is
    flagged. Either way the line's wrong code never passes on its own."""
    import extractor.pipeline as pipeline

    path = FIXTURES / "heavy/vat_invoice_0037.jpg"
    expected = truth(path)["pages"][0]["fields"]["invoice_code"]
    found: list[str] = []
    lines_in_box = pipeline.lines_in_box

    def recording(*args: Any) -> tuple[str, float, np.ndarray] | None:
        hit = lines_in_box(*args)
        spec = args[1]
        if spec.name == "invoice_code" and hit is not None:
            found.append(hit[0])
        return hit

    monkeypatch.setattr(pipeline, "lines_in_box", recording)
    (page,) = extractor.extract(path, "vat_invoice").pages
    code = page.fields["invoice_code"]
    spec = TemplateStore().get("vat_invoice").field("invoice_code")
    assert found and found[0] != expected and check_value(spec, found[0]).ok
    assert code.source == "fallback"
    assert (code.value == expected) if code.valid else any("read again" in e for e in code.errors)


@pytest.mark.parametrize(
    ("options", "device"),
    [
        ({}, ("cpu", 0)),
        ({"provider": "cpu", "threads": 1}, ("cpu", 1)),
        ({"provider": "cuda", "threads": 1}, ("cpu", 1)),
        ({"provider": "tensorrt", "threads": 2}, ("tensorrt", 2)),
    ],
)
def test_the_fallback_runs_on_the_recognisers_threads_and_on_a_gpu_only_through_tensorrt(
    options: dict, device: tuple
) -> None:
    """The CUDA EP re-plans its convolutions on every new input shape, and full-page OCR meets
    a new shape with each page and line batch: a CUDA worker's fallback runs on its CPU."""
    assert _fullpage_device(options) == device


def test_the_fallback_reads_only_the_rows_of_the_fields_in_doubt(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """medium/vat_invoice_0035: its amount in words (read with the print checked: else it takes
    the total's value unread) and its seller's name fail on the ROI path. The fallback's OCR
    reads their rows of the form alone (one band, a quarter of the page) and finds them there.
    (Its seller's tax id, read on with the seal's print of it, is the id on the ROI path.)"""
    path = FIXTURES / "medium/vat_invoice_0035.jpg"
    extractor = _print_checked(extractor)
    seen = _count_fullpage_reads(extractor, monkeypatch)
    (page,) = extractor.extract(path, "vat_invoice").pages
    expected = truth(path)["pages"][0]["fields"]
    for name in ("total_in_words", "seller_name"):
        field = page.fields[name]
        assert (field.value, field.valid, field.source) == (expected[name], True, "fallback")
    tax_id = page.fields["seller_tax_id"]
    assert (tax_id.value, tax_id.valid, tax_id.source) == (expected["seller_tax_id"], True, "roi")
    h, w = cv2.imread(str(path)).shape[:2]
    assert len(seen) == 1 and seen[0][0] * seen[0][1] < 0.3 * h * w


def test_the_fallback_reads_no_line_again_for_a_field_read_valid(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """medium/vat_invoice_0027 with the fallback reading the whole page (``always``): every
    name and code has its line there, and a name's or code's line is read a second time by the
    recogniser. A field read valid on the ROI path keeps that reading, so the fallback makes
    no reading of its own for it: its lines are read again for the fields in doubt only (a
    field valid only once a rule confirmed it was in doubt as read)."""
    path = FIXTURES / "medium/vat_invoice_0027.jpg"
    as_read = Extractor(extractor.engine, fallback="never").extract(path, "vat_invoice")
    read_valid = {
        name
        for name, f in as_read.pages[0].fields.items()
        if f.valid and not (f.note or "").startswith("confirmed")
    }
    asked: list[str] = []
    from_text = Extractor._from_text

    def recording(self: Extractor, spec: Any, found: Any, page: Any = None) -> Any:
        if found is not None:
            asked.append(spec.name)
        return from_text(self, spec, found, page)

    monkeypatch.setattr(Extractor, "_from_text", recording)
    (page,) = Extractor(extractor.engine, fallback="always").extract(path, "vat_invoice").pages
    assert asked and not read_valid & set(asked)
    for name in read_valid:
        assert page.fields[name] == as_read.pages[0].fields[name]


def test_no_fallback_for_what_the_rules_confirm(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """geometry/vat_invoice_0051: only its amount in words is in doubt on the ROI path (read
    with the print checked), and it states the total: the rule confirms it, and full-page OCR
    (seconds) is not run at all. By default the words are not read at all where the sum holds
    with the QR code's amount (medium/vat_invoice_0031): they take the total's value."""
    for name, reader, note in (
        ("geometry/vat_invoice_0051.jpg", _print_checked(extractor), "confirmed by"),
        ("medium/vat_invoice_0031.jpg", extractor, "taken from"),
    ):
        path = FIXTURES / name
        seen = _count_fullpage_reads(reader, monkeypatch)
        (page,) = reader.extract(path, "vat_invoice").pages
        assert {k: f.value for k, f in page.fields.items()} == truth(path)["pages"][0]["fields"]
        assert all(f.valid and f.source in ("roi", "qr") for f in page.fields.values())
        assert note in (page.fields["total_in_words"].note or "")
        assert seen == [] and page.timings_ms.fallback == 0


def _count_fullpage_reads(
    extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[int, ...]]:
    """The shapes of the images the extractor's full-page OCR is given, from now on."""
    extractor.reference_labels(TemplateStore().get("vat_invoice"))  # read once, whole
    ocr = extractor.fullpage_ocr()
    seen: list[tuple[int, ...]] = []
    read = ocr._read
    monkeypatch.setattr(
        ocr, "_read", lambda image, *more: seen.append(image.shape) or read(image, *more)
    )
    return seen


def _print_checked(extractor: Extractor) -> Extractor:
    """``extractor`` (its engine, its fallback) reading the print of every field."""
    return Extractor(extractor.engine, fallback=extractor.fallback, check_print=True)


def _prepared(
    extractor: Extractor, name: str, check_print: bool = True
) -> tuple[Any, dict[str, str]]:
    """A fixture page prepared for recognition, and its truth; ``check_print``: every field to
    be read, as with ``Extractor(check_print=True)`` (else those the QR code states are not)."""
    from extractor.loading import iter_pages
    from extractor.pipeline import PreparedPage
    from extractor.result import Timings

    path = FIXTURES / name
    page = next(iter_pages(path.read_bytes()))
    if check_print:
        extractor = _print_checked(extractor)
    prepared = extractor.prepare(page, TemplateStore().get("vat_invoice"), Timings())
    assert isinstance(prepared, PreparedPage)
    return prepared, truth(path)["pages"][0]["fields"]


def test_readings_that_other_readings_confirm(extractor: Extractor) -> None:
    """Which first readings of a page (the cascade's tiny model's, every one of them unsure
    here) other readings confirm, so that the small model need not read them again: those the
    QR code states, those of a rule that holds (amount + tax = total, the total in words
    stating the total) with every field it names, and a tax id of 18 characters whose check
    character holds. The names are not read yet (None)."""
    from extractor.fields.words import amount_to_words

    prepared, expected = _prepared(extractor, "clean/vat_invoice_0001.jpg")
    assert prepared.qr is not None
    printed = {
        **expected,
        "amount": f"¥{expected['amount']}",
        "tax": f"¥{expected['tax']}",
        "total": f"¥{expected['total']}",
        "total_in_words": f"⊗{amount_to_words(expected['total'])}",
        "invoice_code.again": expected["invoice_code"],  # the form's second prints
        "invoice_number.again": expected["invoice_number"],
    }
    fields = [c.spec.name for c in prepared.crops]

    def confirmed(unsure: str = "", **read_as: str) -> set[str]:
        texts = {**printed, **read_as}
        reads = [
            None
            if c.spec.kind is FieldKind.name
            else Recognition(t, 0.9, (0.9,) * len(t))
            if c.spec.name != unsure
            else Recognition(t, 0.8, (0.9,) * (len(t) - 1) + (0.3,))
            for c, t in zip(prepared.crops, (texts[f] for f in fields), strict=True)
        ]
        return {fields[i] for i in extractor._confirmed(prepared, reads)}

    stated = set(qr_values(prepared.template, prepared.qr))
    assert stated == {"invoice_code", "invoice_number", "amount", "issue_date", "check_code"}
    rules = {"amount", "tax", "total", "total_in_words"}
    ids = {"buyer_tax_id", "seller_tax_id"}  # each vouched for by its check character
    # the second prints, read as the code's values, are confirmed with them (two prints alike)
    stated |= {"invoice_code.again", "invoice_number.again"}
    assert confirmed() == stated | rules | ids
    assert "buyer_name" not in confirmed()
    # a tax id with one character read wrong breaks its check; one with a character below
    # the bar is read again; an older 15-character id carries no check of its own
    buyer_id = expected["buyer_tax_id"]
    slipped = buyer_id[:9] + ("4" if buyer_id[9] != "4" else "7") + buyer_id[10:]
    assert confirmed(buyer_tax_id=slipped) == stated | rules | {"seller_tax_id"}
    assert confirmed(unsure="buyer_tax_id") == stated | rules | {"seller_tax_id"}
    assert confirmed(buyer_tax_id="110108800512123") == stated | rules | {"seller_tax_id"}
    # a number the QR code states otherwise; the words stating another total
    wrong_number = str(int(expected["invoice_number"]) + 1).zfill(8)
    number = {"invoice_number", "invoice_number.again"}  # no longer alike
    assert confirmed(invoice_number=wrong_number) == stated - number | rules | ids
    assert confirmed(total_in_words="⊗壹圆整") == stated | rules - {"total_in_words"} | ids
    # a sum that does not hold confirms none of its terms but the one the QR code states
    assert confirmed(tax="¥0.01") == stated | {"total_in_words", "total"} | ids
    # a character below the field's bar (the page would go to the fallback): read again, and
    # the rule waits for that reading
    assert confirmed(unsure="tax") == stated | {"total_in_words", "total"} | ids


def test_the_qr_codes_values_confirm_readings_unread(extractor: Extractor) -> None:
    """The fields the QR code states are not read (``check_print`` off), and still vouch for
    the readings of the rules they take part in: the amount it states, with the tax and the
    total read, confirms them when the sum holds, and the words stating the total."""
    from extractor.fields.words import amount_to_words

    prepared, expected = _prepared(extractor, "clean/vat_invoice_0001.jpg", check_print=False)
    assert set(prepared.stated) == {
        "invoice_code", "invoice_number", "amount", "issue_date", "check_code"
    }  # fmt: skip
    assert [c.spec.name for c in prepared.crops] == [  # not cut out
        f.name for f in prepared.template.fields if f.name not in prepared.stated
    ]
    printed = {
        **expected,
        "tax": f"¥{expected['tax']}",
        "total": f"¥{expected['total']}",
        "total_in_words": f"⊗{amount_to_words(expected['total'])}",
    }

    def confirmed(**read_as: str) -> set[str]:
        texts = {**printed, **read_as}
        reads = [
            None if c.spec.kind is FieldKind.name else Recognition(t, 0.9, (0.9,) * len(t))
            for c, t in ((c, texts[c.spec.name]) for c in prepared.crops)
        ]
        return {prepared.crops[i].spec.name for i in extractor._confirmed(prepared, reads)}

    ids = {"buyer_tax_id", "seller_tax_id"}  # each vouched for by its check character
    assert confirmed() == {"tax", "total", "total_in_words"} | ids
    assert confirmed(tax="¥0.01") == {"total", "total_in_words"} | ids


def test_the_total_in_words_is_read_only_where_the_total_is_in_doubt(
    extractor: Extractor,
) -> None:
    """The total in words repeats the total: on a page whose QR code was decoded it is read
    after the other fields, and only where the total is in doubt. Where the sum holds with the
    code's amount, it takes the total's value unread (source and confidence the total's, its
    box the template's); where the tax cannot be read, the words are read and state the total;
    with the print checked, they are read with the rest."""
    prepared, expected = _prepared(extractor, "clean/vat_invoice_0001.jpg", check_print=False)
    names = [crop.spec.name for crop in prepared.crops]
    words = names.index("total_in_words")
    (reads,) = extractor.recognize([prepared])
    assert reads[words] is None and all(r is not None for i, r in enumerate(reads) if i != words)
    assert prepared.repeats == {"total_in_words": "total"}
    fields = extractor.finish(prepared, reads).fields
    total, repeated = fields["total"], fields["total_in_words"]
    assert repeated.value == total.value == expected["total_in_words"]
    assert repeated.valid and repeated.raw == "" and "taken from total" in (repeated.note or "")
    assert (repeated.source, repeated.confidence) == (total.source, total.confidence)
    assert repeated.box is not None and repeated.box != total.box

    prepared, _ = _prepared(extractor, "clean/vat_invoice_0001.jpg", check_print=False)
    prepared.crops[names.index("tax")].image[:] = 255  # a tax nobody can read: no sum holds
    (reads,) = extractor.recognize([prepared])
    assert prepared.repeats == {} and reads[words] is not None
    fields = extractor.finish(prepared, reads).fields
    assert fields["total_in_words"].value == expected["total_in_words"]
    assert fields["total_in_words"].raw and fields["total_in_words"].valid

    checked, _ = _prepared(extractor, "clean/vat_invoice_0001.jpg")
    (reads,) = _print_checked(extractor).recognize([checked])
    assert checked.repeats == {} and all(r is not None for r in reads)


def test_a_sum_that_holds_two_ways_confirms_no_reading(extractor: Extractor) -> None:
    """472.67 + 6.54 = 479.21, and, the ¥ read as the 4 of amount and total, 72.67 + 6.54 =
    79.21: the sum cannot tell which, so it confirms none of them for the cascade."""
    prepared, _ = _prepared(extractor, "clean/vat_invoice_0001.jpg")
    prepared.qr = None

    def confirmed(texts: dict[str, str]) -> set[str]:
        reads = [
            Recognition(t, 0.9, (0.9,) * len(t)) if (t := texts.get(c.spec.name)) else None
            for c in prepared.crops
        ]
        return {prepared.crops[i].spec.name for i in extractor._confirmed(prepared, reads)}

    assert confirmed({"amount": "472.67", "tax": "¥6.54", "total": "479.21"}) == set()
    read_with_yen = {"amount": "¥472.67", "tax": "¥6.54", "total": "¥479.21"}
    assert confirmed(read_with_yen) == set(read_with_yen)


def test_the_fallback_is_for_what_the_cross_checks_leave_in_doubt(extractor: Extractor) -> None:
    """Full-page OCR costs seconds: it is not run for a doubtful reading that the page's rules
    or QR code confirm (the total in words stating the total, medium/0031's case), nor for a
    field that read valid and disagrees with another (a person looks at that); it is for what
    stays in doubt."""
    from extractor.fields.words import amount_to_words
    from extractor.pipeline import _doubted

    prepared, expected = _prepared(extractor, "clean/vat_invoice_0001.jpg")
    printed = {
        **expected,
        "amount": f"¥{expected['amount']}",
        "tax": f"¥{expected['tax']}",
        "total": f"¥{expected['total']}",
        "total_in_words": amount_to_words(expected["total"]),
        "invoice_code.again": expected["invoice_code"],  # the form's second prints
        "invoice_number.again": expected["invoice_number"],
    }

    def doubted(unsure: tuple[str, ...] = (), **read_as: str) -> list[str]:
        texts = {**printed, **read_as}
        fields = {}
        for crop in prepared.crops:
            text = texts[crop.spec.name]
            confs = (0.99,) * len(text)
            if crop.spec.name in unsure:
                confs = (*confs[:-1], 0.3)
            read = Recognition(text, sum(confs) / len(confs), confs)
            fields[crop.spec.name] = extractor._field(crop.spec, read, None)
        return _doubted(prepared, fields)

    assert doubted() == []
    # doubtful, and confirmed: by the total, by the sum, by the QR code
    assert doubted(unsure=("total_in_words", "tax", "invoice_number")) == []
    # doubtful names have nothing to confirm them
    assert doubted(unsure=("buyer_name",)) == ["buyer_name"]
    # the words in doubt and stating another total: the fallback reads them
    assert doubted(unsure=("total_in_words",), total_in_words="壹圆整") == ["total_in_words"]
    # the tax read valid but off the sum: flagged at the end, not sent to the fallback
    assert doubted(tax="¥0.01") == []
    # a doubtful tax off the sum: the fallback may read it right
    assert doubted(unsure=("tax",), tax="¥0.01") == ["tax"]


def test_pages_read_together_read_as_each_alone(extractor: Extractor) -> None:
    """The service reads many pages' crops in one call (`Extractor.recognize`): each page's
    readings, and which of its unsure readings the page confirms (so the small model is spared
    them), are the same as when the page is read alone."""
    from extractor.engines.cascade import CascadeRecognizer

    engine = extractor.engine
    assert isinstance(engine, CascadeRecognizer)
    names = [
        "heavy/vat_invoice_0040.jpg",  # unsure readings to read again
        "light/vat_invoice_0016.jpg",  # its words unsure, stating the total
        "clean/vat_invoice_0010.jpg",  # its total unsure, the sum holding
    ]
    pages = [_prepared(extractor, name)[0] for name in names]
    full = engine.full
    seen = [0]
    read = full.recognize

    def counting(crops: Any, allowlists: Any) -> list[Recognition]:
        seen[0] += len(crops)
        return read(crops, allowlists)

    full.recognize = counting  # type: ignore[method-assign]
    try:
        alone = [extractor.recognize([page])[0] for page in pages]
        seen_alone, seen[0] = seen[0], 0
        together = extractor.recognize(pages)
        seen_together = seen[0]
    finally:
        del full.recognize
    assert [[r.text for r in page] for page in together] == [[r.text for r in p] for p in alone]
    names_read = sum(c.spec.kind is FieldKind.name for page in pages for c in page.crops)
    assert seen_together == seen_alone > names_read  # some unsure readings were read again...
    assert seen_alone < names_read + sum(  # ...and some confirmed ones were not
        1
        for page in pages
        for c, r in zip(
            page.crops, engine.fast.recognize(page.images, page.allowlists), strict=True
        )
        if c.spec.kind is not FieldKind.name and not engine._sure(r)
    )


def test_a_code_read_as_the_date_is_flagged_unless_the_qr_code_states_it() -> None:
    """(tests/test_bend.py reads such a number on a bent page.)"""
    template = TemplateStore().get("vat_invoice")

    def read(value: str, source: str = "roi") -> FieldResult:
        return FieldResult(value=value, raw=value, confidence=0.99, valid=True, source=source)

    fields = {"issue_date": read("2023-05-25"), "invoice_number": read("20230525")}
    fields["check_code"] = read("20230525000000000000")
    _flag_dates_read_as_codes(template, fields)
    assert not fields["invoice_number"].valid and fields["issue_date"].valid
    assert fields["check_code"].valid  # the date's digits are not the whole code
    fields["invoice_number"] = read("20230525", source="qr")
    _flag_dates_read_as_codes(template, fields)
    assert fields["invoice_number"].valid


def test_invoices_photographed_together_are_each_read(extractor: Extractor) -> None:
    """Two invoices scanned or photographed together, side by side, then one above the other: a
    result for each (the same page, forms 1 and 2, in reading order), every field of both read
    as from its own scan. Before, the first one the frame search met was read, the other lost
    unsaid."""
    first, second = FIXTURES / "clean/vat_invoice_0001.jpg", FIXTURES / "light/vat_invoice_0015.jpg"
    a = cv2.imread(str(first))
    b = cv2.resize(cv2.imread(str(second)), (a.shape[1], a.shape[0]))
    gap, (h, w) = 40, a.shape[:2]
    beside = np.full((h + 2 * gap, 2 * w + 3 * gap, 3), 255, np.uint8)
    beside[gap : gap + h, gap : gap + w] = a
    beside[gap : gap + h, 2 * gap + w : 2 * gap + 2 * w] = b
    stacked = np.full((2 * h + 3 * gap, w + 2 * gap, 3), 255, np.uint8)
    stacked[gap : gap + h, gap : gap + w] = a
    stacked[2 * gap + h : 2 * gap + 2 * h, gap : gap + w] = b
    for page in (beside, stacked):
        data = cv2.imencode(".jpg", page)[1].tobytes()
        results = extractor.extract(data, "vat_invoice").pages
        assert [(r.page, r.form, r.status) for r in results] == [(1, 1, "ok"), (1, 2, "ok")]
        for result, scan in zip(results, (first, second), strict=True):
            got = {name: f.value for name, f in result.fields.items()}
            assert got == truth(scan)["pages"][0]["fields"]
    (alone,) = extractor.extract(first, "vat_invoice").pages  # one form: one result
    assert alone.form == 1 and alone.status == "ok"


@pytest.mark.parametrize(
    ("seed", "names"),
    [
        (20271004, ("呼和浩特市新城区利力安鑫人力资源服务中心（有限合伙）", None)),
        (20271003, (None, "重庆市渝中区云腾宇电子商务服务中心（有限合伙）")),
        (20271006, ("宁波市海曙区中航欣机械设备服务中心（有限合伙）", None)),
    ],
)
def test_a_name_in_brackets_is_read_with_the_brackets_it_is_registered_with(
    extractor: Extractor, seed: int, names: tuple[str | None, str | None]
) -> None:
    """A partnership's name ends in （有限合伙）: the recogniser answers a half-width bracket for
    the full-width one as often as not, and is unsure which (both print alike); the name is
    given as registered, and passes."""
    rng = random.Random(f"brackets:{seed}")
    buyer, seller = (
        replace(p, name=name) if name else p
        for p, name in zip((party(rng, REGIONS[0]), party(rng, REGIONS[1])), names, strict=True)
    )
    doc = make_document(seed, "clean", parties=(buyer, seller))
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    for role, name in zip(("buyer", "seller"), names, strict=True):
        if name:
            field = page.fields[f"{role}_name"]
            assert (field.value, field.valid, field.source) == (name, True, "roi"), field.errors


def _to_a_person(seed: int, name: str | None) -> tuple[Party, Party]:
    """A 普通发票's buyer and seller: the buyer named ``name`` (None: a company), with no tax
    id, address or bank account printed."""
    rng = random.Random(seed)
    seller, buyer = party(rng, REGIONS[2]), party(rng, REGIONS[0])
    return replace(
        buyer, name=name or buyer.name, tax_id="", address_phone="", bank_account=""
    ), seller


@pytest.mark.parametrize(
    ("seed", "level", "name", "speck"),
    [
        (20272100, "clean", "赵磊", False),
        (20272104, "light", "黄丽", False),
        (20272108, "medium", "张伟", True),  # a speck in the blank box read '1'
        # a short name under a rule's remnant, which holds more ink in a row than the name
        (20272001, "medium", "刘洋", False),  # a fax: the rule broken into dashes
        (20272003, "medium", "王秀英", False),  # faint print, the rule darker
    ],
)
def test_an_invoice_to_a_person_has_no_buyer_tax_id(
    extractor: Extractor, seed: int, level: str, name: str, speck: bool
) -> None:
    doc = make_document(seed, level, parties=_to_a_person(seed, name))
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    tax_id = page.fields["buyer_tax_id"]
    assert (tax_id.value, tax_id.valid, tax_id.source) == (None, True, "roi")
    assert tax_id.note is not None and name in tax_id.note
    if "speck" in tax_id.note:  # what the recogniser makes of a speck varies with the CPU
        assert speck
    assert page.fields["buyer_name"].value == name
    # nothing else flagged (the name itself may be in doubt: 黄 read at 0.70 on one CPU)
    assert all(field.valid for key, field in page.fields.items() if key != "buyer_name")


def test_a_persons_identity_card_number_as_the_buyers_tax_id_passes(extractor: Extractor) -> None:
    """A person may give their identity card number as their tax id (GB 11643's example here):
    no USCC, and read valid, from a scan and from a 数电票's text layer."""
    card = "11010519491231002X"
    buyer, seller = _to_a_person(20272100, "赵磊")
    doc = make_document(20272100, "clean", parties=(replace(buyer, tax_id=card), seller))
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    tax_id = page.fields["buyer_tax_id"]
    assert (tax_id.value, tax_id.valid) == (card, True)
    # nothing else flagged (the name itself may be in doubt on another CPU, as above)
    assert all(field.valid for key, field in page.fields.items() if key != "buyer_name")
    data, _ = digital_pdf([20272100], buyer=Party("赵磊", card, "", ""))
    (page,) = extractor.extract(data, "vat_invoice_digital").pages
    assert (page.fields["buyer_tax_id"].value, page.status) == (card, "ok")


def test_a_company_buyer_without_its_tax_id_is_flagged(extractor: Extractor) -> None:
    doc = make_document(20272100, "clean", parties=_to_a_person(20272100, None))
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    assert page.fields["buyer_name"].valid
    assert not page.fields["buyer_tax_id"].valid and page.status == "needs_review"


def test_a_digital_invoice_to_a_person_is_read_from_its_text_layer(extractor: Extractor) -> None:
    data, (truth,) = digital_pdf([20272100], buyer=Party("个人（张伟）", "", "", ""))
    (page,) = extractor.extract(data, "vat_invoice_digital").pages
    assert (page.registration, page.status) == ("text_layer", "ok")
    assert page.fields["buyer_name"].value == "个人（张伟）"
    assert page.fields["buyer_tax_id"].value is None
    assert all(page.fields[k].value == v for k, v in truth["fields"].items() if v)


@pytest.mark.parametrize(("seed", "level"), [(20273000, "clean"), (20273004, "medium")])
def test_a_tax_exempt_invoice_has_no_tax(extractor: Extractor, seed: int, level: str) -> None:
    """免税: the tax column and the total tax print ***; the tax is none, the total the
    amount, and no fallback runs to find digits that were never printed."""
    doc = make_document(seed, level, tax_exempt=True)
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    tax = page.fields["tax"]
    assert (tax.value, tax.valid, tax.source) == ("0.00", True, "roi")
    assert tax.raw.strip("¥") == "***" and tax.note is not None and "免税" in tax.note
    expected = doc.truth["pages"][0]["fields"]
    assert page.fields["total"].value == expected["total"] == expected["amount"]
    assert page.status == "ok" and all(f.source != "fallback" for f in page.fields.values())


def test_a_tax_exempt_digital_invoice_reads_from_its_text_layer(extractor: Extractor) -> None:
    data, (truth,) = digital_pdf([20273009], tax_exempt=True)
    (page,) = extractor.extract(data, "vat_invoice_digital").pages
    assert (page.registration, page.status) == ("text_layer", "ok")
    assert {k: f.value for k, f in page.fields.items()} == truth["fields"]


@pytest.mark.parametrize("level", ["clean", "light"])
def test_an_electronic_invoice_is_not_taken_for_a_form_printed_a_line_off(
    extractor: Extractor, level: str
) -> None:
    """A 增值税电子普通发票 stacks its code, number, date and check code at the top right, where
    the paper form prints none: unshifted, the template's boxes hold the print of the header's
    rows in part; 5 mm down, the buyer's block's boxes each hold the next row's print as well as
    their own held theirs, and the page was read a line off (each name its tax id, flagged)."""
    doc = make_document(20274003, level, electronic=True)
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    expected = doc.truth["pages"][0]["fields"]
    for name in ("buyer_name", "seller_name", "seller_tax_id", "tax", "total"):
        assert (page.fields[name].value, page.fields[name].valid) == (expected[name], True), name


def test_a_person_has_no_tax_id_on_a_page_aligned_by_its_labels(extractor: Extractor) -> None:
    """A 数电票 scan whose frame matches under its threshold is read on its label-aligned page:
    there too the person's blank tax id box is absent, not the seller's id found beside the
    label (flagged: one party's id read for the other's)."""
    doc = make_digital_document(20276023, "medium", buyer=Party("张伟", "", "", ""))
    (page,) = extractor.extract(doc.jpeg, "vat_invoice_digital").pages
    assert page.registration == "labels"
    tax_id = page.fields["buyer_tax_id"]
    assert (tax_id.value, tax_id.valid) == (None, True) and "张伟" in (tax_id.note or "")


def test_print_in_an_optional_fields_box_read_as_nothing_is_flagged(extractor: Extractor) -> None:
    """An e-invoice photographed small on its A4 sheet, its QR code past decoding: under the
    paper form's check code box the e-invoice prints its machine number, blurred past reading,
    and the recogniser read nothing; the check code (optional: a 专用发票 has none) was absent
    and valid, where the e-invoice prints one at its top right. Print read as nothing is no
    absent value: flagged."""
    doc = make_document(20373012, "heavy", electronic=True, a4=True)
    (page, *_) = extractor.extract(doc.jpeg, "vat_invoice").pages
    check_code = page.fields["check_code"]
    expected = doc.truth["pages"][0]["fields"]["check_code"]
    assert check_code.valid is False or check_code.value == expected


def test_an_e_invoices_top_band_is_read_when_its_qr_code_is_not(extractor: Extractor) -> None:
    """An e-invoice printed on an A4 sheet, scanned, its QR code not decoded (blurred; here
    covered, since the enlarged read decodes this one): the paper form's date box held the
    check code's digits (not a date), the fallback found no 开票日期 (read 升亲日期), and the
    check code found beside 校验码 was flagged as the date's digits. The one date written out
    in reach of the date's box is the date; the check code then stands. The labels 发票代码 and
    发票号码 graze the paper form's № (a millimetre into it): the fallback left them unread as
    the form's own print, and the invoice code was not found."""
    doc = make_document(20373011, "medium", electronic=True, a4=True)
    image = cv2.imdecode(np.frombuffer(doc.jpeg, np.uint8), cv2.IMREAD_COLOR)
    template = extractor.templates.get("vat_invoice")
    alignment = register(image, template)
    assert alignment.matched and alignment.homography is not None and template.qr is not None
    box, ppm = template.qr.box, template.px_per_mm
    corners = np.array([[box.x, box.y], [box.x + box.w, box.y], [box.x + box.w, box.y + box.h],
                        [box.x, box.y + box.h]], np.float64) * ppm  # fmt: skip
    sticker = cv2.perspectiveTransform(corners[None], alignment.homography)[0]
    cv2.fillConvexPoly(image, sticker.round().astype(np.int32), (245, 245, 245))
    covered = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
    (page,) = extractor.extract(covered, "vat_invoice").pages
    expected = doc.truth["pages"][0]["fields"]
    assert page.qr is None  # nothing to settle the top band with
    for name in ("invoice_code", "issue_date", "check_code"):
        field = page.fields[name]
        assert (field.value, field.valid, field.source) == (expected[name], True, "fallback")


def test_an_e_invoices_code_and_check_code_are_found_without_their_labels(
    extractor: Extractor,
) -> None:
    """An e-invoice photographed at an angle, its QR code past decoding: the paper form's check
    code box holds the e-invoice's machine number (12 digits, flagged), its code box nothing,
    and the top band's faint labels (发票代码, 校验码) were not detected, so nothing led to the
    code and check code the page prints at its top right. Printed as only they are (a code
    whose region, kind and year hold; four groups of five digits), each is found in its row."""
    doc = make_document(20280000, "heavy", electronic=True)
    (page,) = extractor.extract(doc.jpeg, "vat_invoice").pages
    expected = doc.truth["pages"][0]["fields"]
    assert page.qr is None
    for name in ("invoice_code", "check_code"):
        field = page.fields[name]
        assert (field.value, field.valid, field.source) == (expected[name], True, "fallback")


@pytest.mark.parametrize(
    ("fallback", "template"), [("auto", "vat_invoice"), ("auto", "auto"), ("never", "vat_invoice")]
)
def test_a_photo_its_frame_and_labels_miss_is_read_through_its_refitted_outline(
    fallback: str, template: str
) -> None:
    """A blurred phone photo whose frame matched only once every piece's outline was refitted
    (:attr:`Alignment.refitted`), and whose labels full-page OCR did not find enough of to align
    it (or, the fallback off, were not looked for): it was unmatched, every field lost. Now it
    is cut through that match (``auto`` picks the template so where the match is sure), and
    what no other reading confirms is flagged as read so (the sum rule confirms the amounts, or
    mends one: where the small model runs on OpenVINO, a ¥ read as a digit)."""
    from extractor.doubts import REFITTED

    doc = make_document(20382046, "heavy")
    truth = doc.truth["pages"][0]["fields"]
    (page,) = Extractor(fallback=fallback).extract(doc.jpeg, template).pages
    assert page.template == "vat_invoice" and page.registration == "frame"
    assert REFITTED in (page.message or "")
    assert sum(page.fields[name].value == value for name, value in truth.items()) >= 8
    for name, field in page.fields.items():
        if field.valid:
            assert field.value == truth[name] and field.note
            assert "confirmed" in field.note or field.note.endswith("from amount + tax = total")
        elif field.value == truth[name]:
            assert REFITTED in field.errors
