"""The 数电票 generator (template ``vat_invoice_digital``) and its committed fixtures."""

from __future__ import annotations

import json
import random
import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import cv2
import numpy as np
import pymupdf
import pytest

from extractor.fields import amount_to_words, is_valid_uscc, parse_amount_words
from extractor.registration import register
from extractor.synth import digital_layout as D
from extractor.synth import names
from extractor.synth.__main__ import main as synth_main
from extractor.synth.digital import (
    OFD_LEVEL,
    PDF_LEVEL,
    TEMPLATE,
    digital_pdf,
    generate_digital_invoice,
    make_digital_document,
)
from extractor.synth.digital_content import FIRST_DAY, LAST_DAY, QR_TYPES, make_digital_invoice
from extractor.synth.digital_form import PT_PER_MM, render_blank_form, render_pdf_page
from extractor.synth.generate import truth_json
from extractor.templates import TemplateStore

ROOT = Path(__file__).resolve().parent.parent
DIGITAL = ROOT / "fixtures" / "digital"
PROVINCES = {r.code[:2] for r in names.REGIONS}


@pytest.fixture(scope="module")
def template():
    return TemplateStore(ROOT / "templates").get(TEMPLATE)


def truth_of(path: Path) -> dict:
    return json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))


def documents(suffix: str, folder: str) -> list[Path]:
    return sorted((DIGITAL / folder).glob(f"*{suffix}"))


def born_digital_pages() -> list[tuple[str, Path, int]]:
    out = []
    for path in documents(".pdf", "pdf"):
        for page in truth_of(path)["pages"]:
            out.append((f"{path.name}#{page['page']}", path, page["page"]))
    return out


def all_pages() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(DIGITAL.glob("*/*.json")):
        for page in json.loads(path.read_text(encoding="utf-8"))["pages"]:
            out.append((f"{path.parent.name}/{path.name}#{page['page']}", page))
    return out


def printed_text(page: dict, field: str) -> str:
    """A field's value as printed on the page."""
    f, extra = page["fields"], page["extra"]
    if field == "issue_date":
        y, m, d = f[field].split("-")
        return f"{y}年{m}月{d}日"
    if field in ("amount", "tax", "total"):
        return "¥" + f[field]
    if field == "total_in_words":
        return "⊗" + extra["total_in_words_text"]
    return f[field]


def box_rect(spec) -> pymupdf.Rect:
    b = spec.box
    return pymupdf.Rect(b.x, b.y, b.x + b.w, b.y + b.h) * PT_PER_MM


# -- determinism ------------------------------------------------------------------------------


def test_pdf_is_deterministic() -> None:
    a, pages_a = digital_pdf([3, 4])
    b, pages_b = digital_pdf([3, 4])
    assert a == b and pages_a == pages_b
    with pymupdf.open(stream=a, filetype="pdf") as doc:
        assert doc.page_count == 2


@pytest.mark.parametrize("level", ["clean", "medium"])
def test_scan_is_deterministic(level: str) -> None:
    a, ta = generate_digital_invoice(7, level)
    b, tb = generate_digital_invoice(7, level)
    assert a.dtype == np.uint8 and a.ndim == 3
    assert np.array_equal(a, b) and ta == tb


def test_content_depends_on_seed_only() -> None:
    fields = {
        level: generate_digital_invoice(11, level)[1]["pages"][0]["fields"]
        for level in ("clean", "light")
    }
    assert fields["clean"] == fields["light"] == digital_pdf([11])[1][0]["fields"]
    assert digital_pdf([12])[1][0]["fields"] != fields["clean"]


def test_regenerates_committed_documents() -> None:
    pdf = documents(".pdf", "pdf")[0]
    truth = truth_of(pdf)
    data, pages = digital_pdf([p["seed"] for p in truth["pages"]])
    assert json.loads(truth_json({**truth, "pages": pages})) == truth
    with pymupdf.open(pdf) as committed, pymupdf.open(stream=data, filetype="pdf") as fresh:
        assert [p.get_text("words") for p in committed] == [p.get_text("words") for p in fresh]

    scan = documents(".jpg", "scans")[0]
    truth = truth_of(scan)
    image, regenerated = generate_digital_invoice(truth["seed"], truth["level"])
    assert json.loads(truth_json({"file": truth["file"], **regenerated})) == truth
    committed_image = cv2.imread(str(scan), cv2.IMREAD_COLOR)
    assert committed_image.shape == image.shape
    # JPEG and font rasterisers may differ by version: compare decoded pixels loosely.
    assert np.abs(committed_image.astype(np.int16) - image.astype(np.int16)).mean() < 1.0


# -- the committed set ---------------------------------------------------------------------------


def test_fixture_set_is_complete_and_small() -> None:
    pdfs = documents(".pdf", "pdf")
    assert len(pdfs) >= 4
    page_counts = [len(truth_of(p)["pages"]) for p in pdfs]
    assert 2 in page_counts
    for p in pdfs:
        with pymupdf.open(p) as doc:
            assert doc.page_count == len(truth_of(p)["pages"])
    scans = documents(".jpg", "scans")
    assert len(scans) >= 6
    assert {truth_of(p)["level"] for p in scans} == {"clean", "light", "medium"}
    image_pdfs = documents(".pdf", "scans")
    assert len(image_pdfs) >= 1
    ofds = documents(".ofd", "ofd")
    assert len(ofds) >= 2 and {truth_of(p)["level"] for p in ofds} == {"digital_ofd"}
    total = sum(p.stat().st_size for p in DIGITAL.rglob("*") if p.is_file())
    assert total < 3 * 2**20


def test_truth_files_are_well_formed() -> None:
    seen = set()
    for path in sorted(DIGITAL.glob("*/*.json")):
        truth = json.loads(path.read_text(encoding="utf-8"))
        assert Path(truth["file"]).stem == path.stem
        assert (path.parent / truth["file"]).is_file()
        assert truth["file"] not in seen
        seen.add(truth["file"])
        assert truth["template"] == TEMPLATE
        assert truth["level"] == (PDF_LEVEL if path.parent.name == "pdf" else truth["level"])
        assert truth["level"] == (OFD_LEVEL if path.parent.name == "ofd" else truth["level"])
        assert truth["level"] in (PDF_LEVEL, OFD_LEVEL, "clean", "light", "medium")
        assert [p["page"] for p in truth["pages"]] == list(range(len(truth["pages"])))
        assert all(p["template"] == TEMPLATE for p in truth["pages"])


@pytest.mark.parametrize(
    ("where", "page"), all_pages(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_truth_is_valid(where: str, page: dict, template) -> None:
    f = page["fields"]
    assert set(f) == {spec.name for spec in template.fields}
    for spec in template.fields:
        if spec.regex:
            assert re.fullmatch(spec.regex, f[spec.name]), (spec.name, f[spec.name])
    for name in ("buyer_tax_id", "seller_tax_id"):
        assert is_valid_uscc(f[name]), f[name]
    for k in ("amount", "tax", "total", "total_in_words"):
        assert re.fullmatch(r"\d+\.\d\d", f[k])
    amount, tax, total = (Decimal(f[k]) for k in ("amount", "tax", "total"))
    assert amount + tax == total and f["total_in_words"] == f["total"]
    day = date.fromisoformat(f["issue_date"])
    assert FIRST_DAY <= day <= LAST_DAY
    number = f["invoice_number"]
    assert len(number) == 20 and number.isdigit()
    assert number[:2] == f"{day.year % 100:02d}"
    assert number[2:4] in PROVINCES
    assert number[4] in "12"
    extra = page["extra"]
    assert sum(Decimal(i["amount"]) for i in extra["items"]) == amount
    assert sum(Decimal(i["tax"]) for i in extra["items"]) == tax
    words = extra["total_in_words_text"]
    assert words.replace("圆", "元") == amount_to_words(total)
    assert parse_amount_words(words) == f["total"]
    kind = extra["title"].removeprefix("电子发票（").removesuffix("）")
    payload = extra["qr_payload"].split(",")
    assert payload[:7] == [
        "01",
        QR_TYPES[kind],
        "",
        number,
        f["amount"],
        day.strftime("%Y%m%d"),
        "",
    ]
    assert re.fullmatch(r"[0-9A-F]{4}", payload[7])


def test_content_rules_hold_over_many_seeds() -> None:
    for seed in range(200):
        inv = make_digital_invoice(random.Random(seed))
        assert is_valid_uscc(inv.buyer.tax_id) and is_valid_uscc(inv.seller.tax_id)
        assert inv.amount + inv.tax == inv.total
        assert sum(i.amount for i in inv.items) == inv.amount
        assert 1 <= len(inv.items) <= D.MAX_ITEMS
        assert {i.rate for i in inv.items} <= {Decimal(r) for r in ("0.13", "0.09", "0.06", "0.03")}
        assert re.fullmatch(r"\d{20}", inv.number) and inv.number[2:4] == inv.region.code[:2]


# -- geometry and the text layer ----------------------------------------------------------------


def test_layout_agrees_with_template(template) -> None:
    assert (template.page.width_mm, template.page.height_mm) == (D.PAGE_W, D.PAGE_H)
    assert {spec.name for spec in template.fields} == set(D.VALUE_AREAS)
    for spec in template.fields:
        x0, y0, x1, y1 = D.VALUE_AREAS[spec.name]
        assert spec.box.as_list() == pytest.approx([x0, y0, x1 - x0, y1 - y0]), spec.name
    assert template.qr is not None
    assert template.qr.box.as_list() == pytest.approx(list(D.QR_BOX))
    assert template.qr.fields == {"invoice_number": 3, "amount": 4, "issue_date": 5}


@pytest.mark.parametrize(
    ("where", "path", "index"), born_digital_pages(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_text_layer_holds_each_field_in_its_box(where: str, path: Path, index: int, template):
    page_truth = truth_of(path)["pages"][index]
    with pymupdf.open(path) as doc:
        page = doc[index]
        assert page.rect.width == pytest.approx(D.PAGE_W * PT_PER_MM)
        assert page.rect.height == pytest.approx(D.PAGE_H * PT_PER_MM)
        words = page.get_text("words")
        for spec in template.fields:
            rect = box_rect(spec)
            expected = printed_text(page_truth, spec.name)
            # the characters MuPDF clips to the box are exactly the value
            clipped = [w[4] for w in page.get_text("words", clip=rect)]
            assert clipped == [expected], (spec.name, clipped)
            # and the value is one word of the page, its centre in the box, alone there
            centred = [w[4] for w in words if rect.contains(((w[0] + w[2]) / 2, (w[1] + w[3]) / 2))]
            assert centred == [expected], (spec.name, centred)
            # the whole word lies inside the box
            (word,) = [w for w in words if w[4] == expected]
            grown = pymupdf.Rect(rect.x0 - 0.5, rect.y0 - 0.5, rect.x1 + 0.5, rect.y1 + 0.5)
            assert pymupdf.Rect(word[:4]) in grown, spec.name
        # labels are words of their own, outside the value boxes
        texts = [w[4] for w in words]
        for label in ("发票号码：", "开票日期：", "名称：", D.TAX_ID_LABEL, "（小写）"):
            assert label in texts, label


def test_image_only_pdf_has_no_text_layer() -> None:
    for path in documents(".pdf", "scans"):
        truth = truth_of(path)
        assert truth["kind"] == "image_only_pdf" and truth["level"] in ("clean", "light", "medium")
        with pymupdf.open(path) as doc:
            assert doc.page_count == 1
            assert doc[0].get_text("words") == []
            assert len(doc[0].get_images()) == 1


# -- registration ----------------------------------------------------------------------------------


def test_reference_image(template) -> None:
    path = template.reference_image_path
    assert path is not None and path.is_file()
    assert path.stat().st_size < 200_000
    committed = cv2.imread(str(path), cv2.IMREAD_COLOR)
    w, h = template.reference_size_px
    assert committed.shape == (h, w, 3)
    fresh = render_blank_form(template)
    gray = [cv2.cvtColor(im, cv2.COLOR_BGR2GRAY).astype(np.int16) for im in (fresh, committed)]
    assert np.abs(gray[0] - gray[1]).mean() < 3.0  # the PNG is palette-quantised


def test_scans_register(template) -> None:
    for path in documents(".jpg", "scans"):
        alignment = register(cv2.imread(str(path), cv2.IMREAD_COLOR), template)
        assert alignment.matched and alignment.score > 0.9, (path.name, alignment)


def test_registration_is_exact_on_a_scan(template) -> None:
    """The homography found maps the template's boxes where the scan's truth says they are."""
    doc = make_digital_document(5, "medium")
    alignment = register(doc.image, template)
    assert alignment.score > 0.9
    page_to_image = np.array(doc.truth["degradations"]["page_to_image"])
    ppm = template.px_per_mm
    for spec in template.fields:
        b = spec.box
        corners_mm = np.array([[b.x, b.y], [b.x + b.w, b.y + b.h]], np.float64)
        expected = cv2.perspectiveTransform(corners_mm[None], page_to_image)[0]
        # reference px (pixel centres at integers) -> page px
        corners_ref = corners_mm * ppm - 0.5
        found = cv2.perspectiveTransform(corners_ref[None], alignment.homography)[0]
        assert np.abs(found - expected).max() < 0.6 * doc.dpi / 25.4, spec.name


@pytest.mark.parametrize("level", ["clean", "medium"])
def test_a_sheet_printed_on_a4_has_its_invoice_where_its_truth_says(template, level: str) -> None:
    """``a4=True``: the invoice printed at the top of a portrait A4 sheet, scaled to the
    printable width (0.95), the sheet scanned whole; the truth's map is the invoice's."""
    doc = make_digital_document(5, level, a4=True)
    h, w = doc.image.shape[:2]
    assert h > 1.3 * w  # the sheet, portrait
    assert doc.truth["degradations"]["sheet"]["scale"] == pytest.approx(200 / 210, abs=0.01)
    alignment = register(doc.image, template)
    assert alignment.score > 0.9
    page_to_image = np.array(doc.truth["degradations"]["page_to_image"])
    corners_mm = np.array([[[20, 20], [190, 120]]], np.float64)
    expected = cv2.perspectiveTransform(corners_mm, page_to_image)[0]
    found = cv2.perspectiveTransform(corners_mm * template.px_per_mm - 0.5, alignment.homography)
    assert np.abs(found[0] - expected).max() < 0.6 * doc.dpi / 25.4
    plain = make_digital_document(5, level).truth["pages"][0]["fields"]
    assert doc.truth["pages"][0]["fields"] == plain  # the same invoice, on another paper


def test_rendered_pdf_registers(template) -> None:
    path = documents(".pdf", "pdf")[0]
    with pymupdf.open(path) as doc:
        image = render_pdf_page(doc[0], 200)
    alignment = register(image, template)
    assert alignment.score > 0.9


def test_roi_pipeline_reads_a_clean_scan() -> None:
    from extractor.pipeline import Extractor

    path = next(p for p in documents(".jpg", "scans") if truth_of(p)["level"] == "clean")
    result = Extractor().extract(path, TEMPLATE)
    (page,) = result.pages
    assert page.matched and page.match_score > 0.9
    assert {k: f.value for k, f in page.fields.items()} == truth_of(path)["pages"][0]["fields"]


def test_clean_scan_qr_code_decodes(template) -> None:
    path = next(p for p in documents(".jpg", "scans") if truth_of(p)["level"] == "clean")
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    ppm = truth_of(path)["degradations"]["dpi"] / 25.4
    x, y, w, h = template.qr.box.as_list()
    crop = image[round(y * ppm) : round((y + h) * ppm), round(x * ppm) : round((x + w) * ppm)]
    data, _, _ = cv2.QRCodeDetector().detectAndDecode(crop)
    assert data == truth_of(path)["pages"][0]["extra"]["qr_payload"]


# -- the command line --------------------------------------------------------------------------


def test_cli_writes_digital_documents_when_named(tmp_path: Path) -> None:
    counts = (
        "clean=0,light=0,medium=0,heavy=0,multipage=0,geometry=0,digital_pdf=1,digital_pdf_2page=0,"
        "digital_clean=1,digital_light=0,digital_medium=0,digital_image_pdf=0,digital_ofd=0"
    )
    assert (
        synth_main(["--out", str(tmp_path), "--seed", "9", "--counts", counts, "--no-reference"])
        == 0
    )
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == [
        "README.md",
        "digital/pdf/vat_invoice_digital_0001.json",
        "digital/pdf/vat_invoice_digital_0001.pdf",
        "digital/scans/vat_invoice_digital_0002.jpg",
        "digital/scans/vat_invoice_digital_0002.json",
    ]
    truth = json.loads((tmp_path / "digital/scans/vat_invoice_digital_0002.json").read_text())
    assert truth["seed"] == 95002 and truth["level"] == "clean"
    assert "vat_invoice_digital" in (tmp_path / "README.md").read_text(encoding="utf-8")
