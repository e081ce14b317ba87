"""Born-digital PDFs: fields come from the text layer, with no OCR."""

import io
import json
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from extractor.fields import amount_to_words, check_value
from extractor.fullpage import FullPageOCR
from extractor.loading import iter_pages
from extractor.overprints import without_overprints
from extractor.pipeline import Extractor
from extractor.radicals import SIMPLIFIED_RADICALS, unify_radicals
from extractor.synth.digital import digital_pdf
from extractor.templates import TemplateStore

ROOT = Path(__file__).resolve().parent.parent
FONT = Path("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc")
PT_PER_MM = 72 / 25.4


def printed(name: str, value: str) -> str:
    """How an issuing system prints a normalised value."""
    if name in ("amount", "tax", "total"):
        return f"¥{value}"
    if name == "total_in_words":
        return "⊗" + amount_to_words(value)
    if name == "issue_date":
        y, m, d = value.split("-")
        return f"{y}年{m}月{d}日"
    if name == "check_code":
        return " ".join(value[i : i + 5] for i in range(0, 20, 5))
    return value


def born_digital(truth: dict, path: Path, *, size_mm: tuple[float, float] = (241, 140)) -> Path:
    """A PDF at the form's size whose text layer prints each field in its box, plus labels."""
    template = TemplateStore().get("vat_invoice")
    doc = pymupdf.open()
    page = doc.new_page(width=size_mm[0] * PT_PER_MM, height=size_mm[1] * PT_PER_MM)
    page.insert_font(fontname="zh", fontfile=str(FONT))
    for spec in template.fields:
        box = spec.box
        if spec.label:  # the form's label, left of the value
            page.insert_text(
                ((box.x - 12) * PT_PER_MM, (box.y + box.h * 0.7) * PT_PER_MM),
                spec.label,
                fontname="zh",
                fontsize=6,
            )
        page.insert_text(
            ((box.x + 1) * PT_PER_MM, (box.y + box.h * 0.75) * PT_PER_MM),
            printed(spec.name, truth[spec.name]),
            fontname="zh",
            fontsize=8,
        )
    page.draw_rect(pymupdf.Rect(13, 38, 228, 120) * PT_PER_MM, width=0.8)
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def extractor() -> Extractor:
    return Extractor()


@pytest.fixture(scope="module")
def truth() -> dict:
    data = json.loads((ROOT / "fixtures/clean/vat_invoice_0003.json").read_text(encoding="utf-8"))
    return data["pages"][0]["fields"]


def test_fields_come_from_the_text_layer(
    extractor: Extractor, truth: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import extractor.loading as loading

    rendered: list[int] = []
    real = loading._render
    monkeypatch.setattr(loading, "_render", lambda *a: rendered.append(a[1]) or real(*a))
    pdf = born_digital(truth, tmp_path / "digital.pdf")
    (page,) = extractor.extract(pdf, "vat_invoice").pages
    assert rendered == []  # the page's image was never needed
    assert page.registration == "text_layer" and page.status == "ok"
    assert {k: f.value for k, f in page.fields.items()} == truth
    assert all(f.source == "text_layer" and f.valid for f in page.fields.values())
    assert page.timings_ms.recognize == 0 and page.timings_ms.register == 0


def test_other_page_size_takes_the_image_path(
    extractor: Extractor, truth: dict, tmp_path: Path
) -> None:
    pdf = born_digital(truth, tmp_path / "a4.pdf", size_mm=(297, 210))
    (page,) = extractor.extract(pdf, "vat_invoice").pages
    assert page.registration != "text_layer"
    assert all(f.source != "text_layer" for f in page.fields.values())


def moved(pdf: Path, dx_mm: float, dy_mm: float) -> bytes:
    """The PDF's text layer, every word moved by (dx, dy) mm: another revision of the layout,
    whose cells sit a few millimetres off the template's boxes."""
    page = pymupdf.open(pdf)[0]
    out = pymupdf.open()
    new = out.new_page(width=page.rect.width, height=page.rect.height)
    for x0, y0, x1, y1, text, *_ in page.get_text("words"):
        height = y1 - y0
        width = pymupdf.get_text_length(text, fontname="china-s", fontsize=1)
        size = min(0.8 * height, (x1 - x0) / width)
        at = (x0 + dx_mm * PT_PER_MM, y1 + dy_mm * PT_PER_MM - 0.22 * height)
        new.insert_text(at, text, fontname="china-s", fontsize=size)
    return out.tobytes()


def test_fields_out_of_their_boxes_are_read_beside_their_labels(extractor: Extractor) -> None:
    pdf = ROOT / "fixtures/digital/pdf/vat_invoice_digital_0001.pdf"
    expected = json.loads(pdf.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]
    result = extractor.extract(moved(pdf, 6, 4), "vat_invoice_digital")
    (page,) = result.pages
    assert page.registration == "text_layer"
    assert {k: f.value for k, f in page.fields.items()} == expected["fields"]
    for field in page.fields.values():
        assert field.valid and field.source == "text_layer"
        assert field.note is not None and "beside its label" in field.note
    # where the text stayed in its box, the box is read as before
    still = extractor.extract(moved(pdf, 3, -2), "vat_invoice_digital").pages[0]
    assert {k: f.value for k, f in still.fields.items()} == expected["fields"]
    assert all(f.note is None for f in still.fields.values())


def rescaled(
    pdf: Path, size_mm: tuple[float, float], scale: float, at_mm: tuple[float, float]
) -> bytes:
    """The PDF's page drawn ``scale`` times its size at ``at_mm`` on a page of ``size_mm``: an
    issuing system that prints the form on another paper size (text layer and ruling alike)."""
    src = pymupdf.open(pdf)
    width, height = src[0].rect.width, src[0].rect.height
    out = pymupdf.open()
    page = out.new_page(width=size_mm[0] * PT_PER_MM, height=size_mm[1] * PT_PER_MM)
    x, y = at_mm[0] * PT_PER_MM, at_mm[1] * PT_PER_MM
    page.show_pdf_page(pymupdf.Rect(x, y, x + width * scale, y + height * scale), src, 0)
    return out.tobytes()


def test_a_page_of_another_size_is_read_from_its_text_layer_once_registered(
    extractor: Extractor,
) -> None:
    pdf = ROOT / "fixtures/digital/pdf/vat_invoice_digital_0001.pdf"
    expected = json.loads(pdf.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]
    for size, scale, at in (((297, 210), 1.3, (10, 12)), ((200, 120), 0.85, (6, 8))):
        result = extractor.extract(rescaled(pdf, size, scale, at), "vat_invoice_digital")
        (page,) = result.pages
        assert page.registration == "text_layer" and page.matched
        assert page.timings_ms.recognize == 0 and page.timings_ms.register > 0
        assert {k: f.value for k, f in page.fields.items()} == expected["fields"]
        assert all(f.valid and f.source == "text_layer" for f in page.fields.values())
        # boxes are where the words are on this page: inside the placed form, in page px
        dpi = extractor.dpi / 25.4
        for field in page.fields.values():
            assert field.box is not None
            x, y, w, h = field.box
            assert at[0] * dpi <= x and x + w <= (at[0] + 210 * scale) * dpi
            assert at[1] * dpi <= y and y + h <= (at[1] + 140 * scale) * dpi


@pytest.mark.parametrize("degrees", [90, 180, 270])
def test_a_page_shown_turned_is_read_from_its_text_layer(
    extractor: Extractor, degrees: int
) -> None:
    """A PDF page with /Rotate is rendered turned; its words are turned with it, and the frame
    registration maps them back onto the form."""
    pdf = ROOT / "fixtures/digital/pdf/vat_invoice_digital_0001.pdf"
    expected = json.loads(pdf.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]
    doc = pymupdf.open(pdf)
    doc[0].set_rotation(degrees)
    (page,) = extractor.extract(doc.tobytes(), "vat_invoice_digital").pages
    assert page.registration == "text_layer" and page.timings_ms.recognize == 0
    assert {k: f.value for k, f in page.fields.items()} == expected["fields"]
    assert all(f.valid and f.source == "text_layer" for f in page.fields.values())
    # boxes are on the page as rendered: a name's box stands upright on a quarter-turned page
    *_, w, h = page.fields["buyer_name"].box
    assert (h > w) == (degrees in (90, 270))


def test_ideographs_spelled_as_radicals_are_read_as_the_ideographs(extractor: Extractor) -> None:
    """An issuing system whose text layer maps 一 to the Kangxi radical ⼀ and 门 to ⻔ (one
    glyph in the font): the words look right and compare wrong (a date ending in ⽇ is no date,
    so the page took the OCR path). They are spelled back on loading."""
    data, truth = digital_pdf([7000, 7003, 7005], radicals=True)
    layer = "".join(page.get_text() for page in pymupdf.open(stream=data))
    assert sum(0x2E80 <= ord(ch) <= 0x2FDF for ch in layer) > 20
    result = extractor.extract(data, "vat_invoice_digital")
    for page, expected in zip(result.pages, truth, strict=True):
        assert page.registration == "text_layer" and page.timings_ms.recognize == 0
        assert {k: f.value for k, f in page.fields.items()} == expected["fields"]
        assert all(f.valid and f.source == "text_layer" for f in page.fields.values())


@pytest.mark.parametrize("mark", ["ⓧ", "⨂"])
def test_the_mark_before_the_words_is_read_whatever_the_text_layer_names_it(
    extractor: Extractor, mark: str
) -> None:
    """The circled cross printed before the amount in words is one glyph that fonts name ⊗, ⓧ
    or ⨂: a text layer that gave it as ⓧ failed the words as an amount in capitals, and the
    page took the OCR path (registered, cut and read: ~30x the time)."""
    data, truth = digital_pdf([7000, 7003], words_mark=mark)
    assert f"{mark}叁佰叁拾捌元陆角伍分" in pymupdf.open(stream=data)[0].get_text()
    result = extractor.extract(data, "vat_invoice_digital")
    for page, expected in zip(result.pages, truth, strict=True):
        assert page.registration == "text_layer" and page.timings_ms.recognize == 0
        assert {k: f.value for k, f in page.fields.items()} == expected["fields"]
        assert all(f.valid and f.source == "text_layer" for f in page.fields.values())


def test_text_printed_bold_by_overprinting_is_read_once(extractor: Extractor) -> None:
    """A PDF writer that emboldens by printing every line three times a tenth of a millimetre
    apart: the page shows each name once, its text layer holds it three times. Read as it
    came, a name was itself three times over, and valid (no check of a name can tell), or, as
    on these two, the date, split where the writer switched fonts, was no date and the pages
    went to OCR."""
    data, truth = digital_pdf([7000, 7003], overprinted=True)
    layer = pymupdf.open(stream=data)[0].get_text("words")
    name = truth[0]["fields"]["seller_name"]
    assert sum(word[4] == name for word in layer) == 3
    result = extractor.extract(data, "auto")
    for page, expected in zip(result.pages, truth, strict=True):
        assert page.registration == "text_layer" and page.timings_ms.recognize == 0
        assert {k: f.value for k, f in page.fields.items()} == expected["fields"]
        assert all(f.valid and f.source == "text_layer" for f in page.fields.values())


def test_a_text_layer_drawn_once_keeps_pymupdfs_words() -> None:
    """Looking for text drawn twice changes nothing on a page where none is: the words are
    PyMuPDF's own, box for box (the committed 数电票 PDFs)."""
    pdfs = sorted((ROOT / "fixtures" / "digital" / "pdf").glob("*.pdf"))
    assert pdfs
    for path in pdfs:
        for page in pymupdf.open(path):
            textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_WORDS)
            words = page.get_text("words", textpage=textpage, sort=True)
            rawdict = page.get_text("rawdict", textpage=textpage)
            assert without_overprints(words, rawdict) == words


def unmapped(data: bytes, characters: str) -> bytes:
    """The PDF, its fonts' ToUnicode maps sending ``characters``' glyphs to U+FFFD (no
    character): a map that misses some glyphs. MuPDF then answers each such glyph's id."""
    doc = pymupdf.open(stream=data)
    for xref in range(1, doc.xref_length()):
        kind, ref = doc.xref_get_key(xref, "ToUnicode")
        if kind != "xref":
            continue
        stream = int(ref.split()[0])
        cmap = doc.xref_stream(stream).decode("latin-1")
        for ch in characters:
            cmap = cmap.replace(f"> <{ord(ch):04X}>", "> <FFFD>")
        doc.update_stream(stream, cmap.encode("latin-1"))
    return doc.tobytes()


def test_a_name_with_glyphs_its_font_does_not_map_is_not_read_from_the_text_layer(
    extractor: Extractor,
) -> None:
    """Two of the buyer's characters are missing from the font's ToUnicode map, and the text
    layer gives something else for them (every other field as printed): the name would be
    valid and wrong. The page is read from its image instead."""
    data, truth = digital_pdf([7000])
    expected = truth[0]["fields"]
    name = expected["buyer_name"]
    others = "".join(v for k, v in expected.items() if k != "buyer_name")
    lost = "".join(ch for ch in name if ch not in others and ord(ch) > 0x2000)[:2]
    assert len(lost) == 2
    garbled = unmapped(data, lost)
    layer = pymupdf.open(stream=garbled)[0].get_text()
    assert name[2:] in layer and not set(lost) & set(layer)
    (page,) = extractor.extract(garbled, "vat_invoice_digital").pages
    buyer = page.fields["buyer_name"]
    assert page.registration != "text_layer" and buyer.source != "text_layer"
    assert buyer.value == name or not buyer.valid  # read from the image, or flagged


@pytest.mark.parametrize(
    "name",
    [
        "北京\ufffd科技有限公司",  # MuPDF's U+FFFD
        "⋹䤪电子商务有限公司",  # glyph ids: a math symbol, an extension-A ideograph
        "亊㬴吝厨亝㝌㯕欜懯⏇☸⣄",  # a name whose font has no ToUnicode map at all
        "\ue3a1\ue44f有限公司",  # private use
        "トヨタ自動車有限公司",  # kana
    ],
)
def test_a_name_holding_what_no_name_is_written_with_is_not_valid(name: str) -> None:
    template = TemplateStore().get("vat_invoice_digital")
    check = check_value(template.field("buyer_name"), name)
    assert not check.ok and "no name's text" in check.errors[0]


@pytest.mark.parametrize(
    "name", ["华东医药合伙企业（有限合伙）", "ＡＢＣ·李氏 & Co., Ltd.", "Café Zoë"]
)
def test_names_in_ideographs_latin_and_punctuation_stay_valid(name: str) -> None:
    template = TemplateStore().get("vat_invoice_digital")
    assert check_value(template.field("buyer_name"), name).ok


def with_logo(data: bytes, index: int) -> bytes:
    """The PDF with a letterhead's logo on page ``index``: a picture covering a few percent."""
    doc = pymupdf.open(stream=data)
    logo = np.zeros((60, 60, 3), np.uint8)
    logo[10:50, 10:50] = (200, 30, 30)
    doc[index].insert_image(pymupdf.Rect(480, 30, 540, 90), stream=png(logo))
    return doc.tobytes()


def png(image: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def full_page_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What full-page OCR is asked from now on (it does it): ``read`` a page, or ``glance`` at
    it for a form's labels (:meth:`FullPageOCR.shows`)."""
    asked: list[str] = []
    read, shows = FullPageOCR.__call__, FullPageOCR.shows
    monkeypatch.setattr(
        FullPageOCR, "__call__", lambda ocr, *a, **k: asked.append("read") or read(ocr, *a, **k)
    )
    monkeypatch.setattr(
        FullPageOCR, "shows", lambda ocr, *a, **k: asked.append("glance") or shows(ocr, *a, **k)
    )
    return asked


def test_a_born_digital_page_that_is_no_invoice_is_told_without_ocr(
    extractor: Extractor, full_page_reads: list[str]
) -> None:
    """Two 数电 invoices and a typed letter in one PDF: the letter does not register, and the
    form's labels are looked for in its text layer, not by full-page OCR (~2 s a page)."""
    data, truth = digital_pdf([7000, 7001], letter_at=1)
    pdf = with_logo(data, 1)
    assert truth[1]["kind"] == "cover_letter" and next(iter_pages(pdf, pages={1})).words
    for template in extractor.templates.all():  # their labels: full-page OCR of the references
        extractor.reference_labels(template)
    full_page_reads.clear()
    for template in ("vat_invoice_digital", "auto"):
        pages = extractor.extract(pdf, template).pages
        assert [p.status for p in pages] == ["ok", "unmatched", "ok"]
        assert pages[1].fields == {} and pages[1].registration is None
        assert [{k: f.value for k, f in p.fields.items()} for p in pages] == [
            page["fields"] for page in truth
        ]
    assert full_page_reads == []


def test_a_page_mostly_picture_is_looked_at_by_full_page_ocr_though_it_has_words(
    extractor: Extractor, full_page_reads: list[str]
) -> None:
    """A typed caption over a picture filling the page (an expense report's photo of a list of
    receipts): what the picture prints is not in the text layer, so a page that does not
    register is looked at by full-page OCR, as a scan is; none of its lines starts with a
    label of the form, so it is not read whole."""
    picture = Image.new("RGB", (1400, 1800), "white")
    draw = ImageDraw.Draw(picture)
    font = ImageFont.truetype(str(FONT), 36)
    for i in range(12):
        draw.text(
            (80, 200 + 110 * i),
            f"第{i + 1}项 交通费 出租车 发票 金额 {30 + i}.00 元",
            font=font,
            fill="black",
        )
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_font(fontname="zh", fontfile=str(FONT))
    page.insert_text(
        (40, 40),
        "报销单 附件 第3页 共5页 出租车发票照片 王明 2024年10月",
        fontname="zh",
        fontsize=11,
    )
    page.insert_image(pymupdf.Rect(40, 60, 555, 800), stream=png(np.asarray(picture)))
    loaded = next(iter_pages(doc.tobytes()))
    assert loaded.words is not None and loaded.pictured > 0.5
    extractor.reference_labels(extractor.templates.get("vat_invoice"))
    full_page_reads.clear()
    (result,) = extractor.extract(doc.tobytes(), "vat_invoice").pages
    assert result.status == "unmatched" and full_page_reads == ["glance"]


def test_a_text_layer_of_glyph_ids_is_not_read(extractor: Extractor) -> None:
    """Without their ToUnicode maps the CJK fonts' text comes out as glyph ids (㬴, ⏇, ☸, kana):
    the page is read from its image, every field right."""
    data, truth = digital_pdf([7002])
    doc = pymupdf.open(stream=data)
    for font in doc[0].get_fonts(full=True):
        xref, base_font = font[0], font[3]
        if "DejaVu" not in base_font:  # the digits' font keeps its map
            doc.xref_set_key(xref, "ToUnicode", "null")
    garbled = doc.tobytes()
    assert next(iter_pages(data)).words is not None
    assert next(iter_pages(garbled)).words is None
    (page,) = extractor.extract(garbled, "vat_invoice_digital").pages
    assert page.registration == "frame"
    assert {k: f.value for k, f in page.fields.items()} == truth[0]["fields"]


def test_unify_radicals_touches_radicals_only() -> None:
    assert unify_radicals("2025年01⽉02⽇") == "2025年01月02日"
    assert unify_radicals("⼤连⻓城⻔业（⼴州）有限公司") == "大连长城门业（广州）有限公司"
    assert unify_radicals("ＡＢ（北京）¥1,234.56 ⊗") == "ＡＢ（北京）¥1,234.56 ⊗"
    assert unify_radicals("⺮⻌") == "⺮⻌"  # components, no character of their own


def glyph(font: ImageFont.FreeTypeFont, ch: str) -> np.ndarray:
    image = Image.new("L", (64, 64), 255)
    ImageDraw.Draw(image).text((4, 0), ch, font=font, fill=0)
    return np.asarray(image) < 128


def test_simplified_radicals_are_drawn_as_their_ideographs() -> None:
    """The supplement's table (no Unicode decomposition to check it by): in WenQuanYi Zen Hei
    each radical is the very glyph of the ideograph it is mapped to."""
    font = ImageFont.truetype(str(FONT), 56)
    for radical, ideograph in SIMPLIFIED_RADICALS.items():
        a, b = glyph(font, radical), glyph(font, ideograph)
        assert a.sum() > 50 and (a & b).sum() / (a | b).sum() > 0.98, (radical, ideograph)


def merged_sheet(per_sheet: int) -> tuple[bytes, list[Path], list[pymupdf.Rect]]:
    """The first ``per_sheet`` (2 or 4) 数电票 fixture PDFs merged onto one A4 page (2: one
    above the other; 4: two by two, the page turned), as offices merge them to print: the
    sheet, the PDFs, and the cell (points) each was placed in."""
    root = Path(__file__).resolve().parent.parent / "fixtures" / "digital" / "pdf"
    pdfs = sorted(root.glob("*.pdf"))[:per_sheet]
    sheet = pymupdf.open()
    if per_sheet == 2:
        page = sheet.new_page(width=595, height=842)
        cells = [pymupdf.Rect(20, 30 + i * 400, 575, 30 + i * 400 + 370) for i in (0, 1)]
    else:
        page = sheet.new_page(width=842, height=595)
        cells = [pymupdf.Rect(x, y, x + 400, y + 280) for y in (10, 300) for x in (10, 430)]
    for cell, path in zip(cells, pdfs, strict=True):
        with pymupdf.open(path) as source:
            height = cell.width * source[0].rect.height / source[0].rect.width
            page.show_pdf_page(pymupdf.Rect(cell.x0, cell.y0, cell.x1, cell.y0 + height), source, 0)
    return sheet.tobytes(), pdfs, cells


@pytest.mark.parametrize("per_sheet", [2, 4])
def test_invoices_merged_on_one_sheet_are_each_read_from_its_text_layer(per_sheet: int) -> None:
    """数电票 PDFs merged two to an A4 page (one above the other) or four (two by two, the page
    turned), as offices merge them to print: each form is found by its frame and read from the
    words its registration maps onto it (the others' words land off its page), a result for
    each in reading order, no OCR. Two to a sheet were read on the image path before."""
    sheet, pdfs, cells = merged_sheet(per_sheet)
    results = Extractor(fallback="never").extract(sheet, "vat_invoice_digital").pages
    assert [(r.page, r.form, r.status) for r in results] == [
        (1, n, "ok") for n in range(1, per_sheet + 1)
    ]
    scale = 200 / 72  # the page's rendering, px a point
    for result, path, cell in zip(results, pdfs, cells, strict=True):
        expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        assert {k: f.value for k, f in result.fields.items()} == expected["pages"][0]["fields"]
        assert result.registration == "text_layer"
        for field in result.fields.values():
            assert field.valid and field.source == "text_layer" and field.box is not None
            x, y, w, h = field.box  # where the words are: inside this form's cell
            assert cell.x0 * scale <= x and x + w <= cell.x1 * scale
            assert cell.y0 * scale <= y and y + h <= cell.y1 * scale
