"""OFD documents (the 数电票's other format): drawn as PDF, read from the text they hold."""

import io
import json
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from extractor.errors import CorruptInputError, TooLargeInputError
from extractor.loading import iter_pages, sniff
from extractor.ofd import MAX_ENTRY_BYTES, _deltas, _objects, _resolve, _segments, ofd_to_pdf
from extractor.pipeline import Extractor
from extractor.registration import register
from extractor.synth.ofd import ofd_from_pdf
from extractor.templates import TemplateStore

PDFS = sorted((Path(__file__).resolve().parent.parent / "fixtures/digital/pdf").glob("*.pdf"))


def _truth(pdf: Path) -> list[dict[str, str]]:
    truth = json.loads(pdf.with_suffix(".json").read_text(encoding="utf-8"))
    return [page["fields"] for page in truth["pages"]]


@pytest.mark.parametrize("ctm", [False, True])
@pytest.mark.parametrize("pdf", PDFS, ids=lambda p: p.stem)
def test_an_ofd_invoice_reads_as_its_pdf_twin(pdf: Path, ctm: bool) -> None:
    """Each 数电票 fixture written as the OFD the tax platform issues beside the PDF (the form on
    a template page, the data on the page, characters placed by DeltaX; with ``ctm``, sizes
    halved and scaled back by each text object's CTM): every page reads every field as its
    PDF does, from the text, no OCR."""
    ofd = ofd_from_pdf(pdf.read_bytes(), ctm=ctm)
    assert sniff(ofd) == "ofd"
    pages = Extractor(fallback="never").extract(ofd, "auto").pages
    assert [{k: f.value for k, f in p.fields.items()} for p in pages] == _truth(pdf)
    for page in pages:
        assert page.template == "vat_invoice_digital" and page.registration == "text_layer"
        assert all(f.valid and f.source == "text_layer" for f in page.fields.values())


def test_an_ofd_page_is_drawn_where_its_objects_lie() -> None:
    """The drawn page is the form: its ruling registers on the template's frame, and read as an
    image (the text layer off) its fields read right by OCR."""
    pdf = PDFS[0]
    (page,) = iter_pages(ofd_to_pdf(ofd_from_pdf(pdf.read_bytes()), max_pages=5))
    assert page.size_mm is not None and abs(page.size_mm[0] - 210) < 0.5
    template = TemplateStore().get("vat_invoice_digital")
    assert register(page.image, template).score > 0.95
    (result,) = (
        Extractor(fallback="never", text_layer=False)
        .extract(ofd_to_pdf(ofd_from_pdf(pdf.read_bytes()), max_pages=5), "vat_invoice_digital")
        .pages
    )
    assert result.registration == "frame"
    assert {k: f.value for k, f in result.fields.items()} == _truth(pdf)[0]


def test_deltas_expand_their_runs() -> None:
    assert _deltas("g 3 2.5 1 g 2 0.5") == [2.5, 2.5, 2.5, 1.0, 0.5, 0.5]
    assert _deltas(None) == [] and _deltas("1.2 3") == [1.2, 3.0]


def test_paths_and_locations() -> None:
    """AbbreviatedData's subpaths (curves to their ends, C back to the start) and BaseLocs
    relative to their file or from the package's root."""
    assert list(_segments("M 0 0 L 10 0 L 10 5 C M 1 1 B 2 2 3 3 4 4")) == [
        ((0.0, 0.0), [(10.0, 0.0), (10.0, 5.0), (0.0, 0.0)]),
        ((1.0, 1.0), [(4.0, 4.0)]),
    ]
    assert _resolve("Doc_0", "Pages/Page_0/Content.xml") == "Doc_0/Pages/Page_0/Content.xml"
    assert _resolve("Doc_0/Pages", "/Doc_0/Res/a.png") == "Doc_0/Res/a.png"
    assert _resolve("Doc_0/Pages/Page_0", "../../Res/a.png") == "Doc_0/Res/a.png"


def test_objects_are_drawn_in_order_through_nested_blocks() -> None:
    """Layers and page blocks open in document order, nested however deep (a hostile package
    nests thousands: no recursion)."""
    content = ElementTree.fromstring(
        '<C><Layer><T n="1"/><PageBlock><T n="2"/><PageBlock><T n="3"/></PageBlock></PageBlock>'
        '<T n="4"/></Layer><T n="5"/></C>'
    )
    assert [e.get("n") for e in _objects(content)] == ["1", "2", "3", "4", "5"]
    deep = "<C>" + "<PageBlock>" * 5000 + '<T n="x"/>' + "</PageBlock>" * 5000 + "</C>"
    assert [e.get("n") for e in _objects(ElementTree.fromstring(deep))] == ["x"]


def _package(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _unpacked(ofd: bytes) -> dict[str, bytes | str]:
    with zipfile.ZipFile(io.BytesIO(ofd)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_broken_package_says_what_is_wrong() -> None:
    files = _unpacked(ofd_from_pdf(PDFS[0].read_bytes()))
    no_page = {k: v for k, v in files.items() if not k.startswith("Doc_0/Pages/")}
    with pytest.raises(CorruptInputError, match=r"has no Doc_0/Pages/Page_0/Content\.xml"):
        list(iter_pages(_package(no_page)))
    with pytest.raises(CorruptInputError, match="is not XML"):
        list(iter_pages(_package({**files, "Doc_0/Document.xml": "<ofd:Document"})))
    with pytest.raises(CorruptInputError, match="names no document"):
        list(iter_pages(_package({**files, "OFD.xml": "<OFD><DocBody/></OFD>"})))
    document = files["Doc_0/Document.xml"].replace(b"0 0 210 140", b"0 0 0 140")
    with pytest.raises(CorruptInputError, match=r"page 1 is 0\.0 x 140\.0 mm"):
        list(iter_pages(_package({**files, "Doc_0/Document.xml": document})))
    four = _unpacked(ofd_from_pdf(PDFS[-1].read_bytes()))  # a two-page PDF
    with pytest.raises(TooLargeInputError, match="2 pages, over the limit of 1"):
        list(iter_pages(_package(four), max_pages=1))
    unknown = bytearray(_package({"OFD.xml": "<x/>"}))  # compressed by a method zipfile lacks
    for header, at in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        i = unknown.find(header) + at
        unknown[i : i + 2] = (99).to_bytes(2, "little")
    with pytest.raises(CorruptInputError, match=r"OFD\.xml cannot be read"):
        list(iter_pages(bytes(unknown)))
    bomb = {**files, "Doc_0/Res/image_0.png": b"\0" * (MAX_ENTRY_BYTES + 1)}
    with pytest.raises(TooLargeInputError, match="inflated"):
        ofd_to_pdf(_package(bomb), max_pages=5)


@pytest.mark.parametrize(("order", "covered"), [("Background", False), ("Foreground", True)])
def test_a_template_page_is_drawn_behind_or_over_the_page_as_its_z_order_says(
    order: str, covered: bool
) -> None:
    """A template page the page names with ZOrder Foreground is drawn over the page's content,
    Background (the default) under it: here a white sheet the size of the page."""
    files = _unpacked(ofd_from_pdf(PDFS[0].read_bytes()))
    files["Doc_0/Tpls/White/Content.xml"] = (
        '<ofd:Page xmlns:ofd="http://www.ofdspec.org/2016"><ofd:Content><ofd:Layer ID="900">'
        '<ofd:PathObject ID="901" Boundary="0 0 210 140" Fill="true" Stroke="false">'
        '<ofd:FillColor Value="255 255 255"/>'
        "<ofd:AbbreviatedData>M 0 0 L 210 0 L 210 140 L 0 140 C</ofd:AbbreviatedData>"
        "</ofd:PathObject></ofd:Layer></ofd:Content></ofd:Page>"
    )
    document = files["Doc_0/Document.xml"].decode()
    files["Doc_0/Document.xml"] = document.replace(
        "</ofd:CommonData>",
        '<ofd:TemplatePage ID="999" BaseLoc="Tpls/White/Content.xml"/></ofd:CommonData>',
    )
    page = files["Doc_0/Pages/Page_0/Content.xml"].decode()
    files["Doc_0/Pages/Page_0/Content.xml"] = page.replace(
        "<ofd:Content>", f'<ofd:Template TemplateID="999" ZOrder="{order}"/><ofd:Content>'
    )
    (drawn,) = iter_pages(ofd_to_pdf(_package(files), max_pages=5))
    dark = int((drawn.image < 128).sum())
    assert (dark == 0) == covered


def test_pages_asked_for_are_the_pages_drawn() -> None:
    """``pages`` picks pages of an OFD as of a PDF; the others are not drawn (left blank)."""
    pdf = PDFS[-1]  # two invoices, a page each
    ofd = ofd_from_pdf(pdf.read_bytes())
    (second,) = Extractor(fallback="never").extract(ofd, "auto", pages=[2]).pages
    assert second.page == 2 and second.registration == "text_layer"
    assert {k: f.value for k, f in second.fields.items()} == _truth(pdf)[1]
    first_blank = ofd_to_pdf(ofd, max_pages=5, pages={1})
    (blank, drawn) = iter_pages(first_blank)
    assert blank.words is None and drawn.words is not None
