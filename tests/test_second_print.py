"""The national form prints its invoice code and number twice: in their boxes and small at the
top-right corner. The second prints are read where the QR code does not state the fields and
checked against the first (templates' ``printed_again``)."""

from pathlib import Path

import pytest

from extractor.engines import get_engine
from extractor.errors import TemplateError
from extractor.fields import check_value
from extractor.loading import iter_pages
from extractor.pipeline import Extractor, PreparedPage
from extractor.result import FieldResult, Timings
from extractor.second_prints import check_second_prints
from extractor.templates import TemplateStore, load_template_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TWICE = ("invoice_code", "invoice_number")


def test_a_second_print_is_a_field_of_its_own_within_the_page(tmp_path: Path) -> None:
    template = TemplateStore().get("vat_invoice")
    code = template.field("invoice_code")
    again = code.again()
    assert again is not None and again.name == "invoice_code.again"
    assert again.box == code.printed_again and again.regex == code.regex
    assert again.printed_again is None
    assert template.field("buyer_name").again() is None
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\npage: {width_mm: 100, height_mm: 50}\nfields:\n"
        "  - {name: a, box: [1, 2, 3, 4], printed_again: [95, 2, 10, 4]}\n",
        encoding="utf-8",
    )
    with pytest.raises(TemplateError, match=r"printed_again .* lies outside"):
        load_template_file(path)


def _prepared(name: str, check_print: bool) -> PreparedPage:
    page = next(iter_pages((FIXTURES / name).read_bytes()))
    extractor = Extractor(fallback="never", check_print=check_print)
    prepared = extractor.prepare(page, TemplateStore().get("vat_invoice"), Timings())
    assert isinstance(prepared, PreparedPage)
    return prepared


def test_the_second_prints_are_cut_after_the_fields_and_read_as_the_first() -> None:
    """A clean fixture scan, every field read (as though its QR code stated nothing): the
    second prints follow the fields, and the recogniser reads each as its field's value."""
    import json

    prepared = _prepared("clean/vat_invoice_0001.jpg", check_print=True)
    names = [c.spec.name for c in prepared.crops]
    fields = [spec.name for spec in prepared.template.fields]
    assert names == fields + [f"{name}.again" for name in TWICE]
    truth = json.loads((FIXTURES / "clean/vat_invoice_0001.json").read_text("utf-8"))
    expected = truth["pages"][0]["fields"]
    crops = prepared.crops[len(fields) :]
    reads = get_engine().recognize(prepared.images, prepared.allowlists)[len(fields) :]
    for crop, read in zip(crops, reads, strict=True):
        assert crop.image.shape[0] < 60  # printed small: 2.6 mm at 200 dpi
        assert check_value(crop.spec, read.text).value == expected[crop.spec.name[: -len(".again")]]


def test_no_second_print_is_cut_for_a_field_the_qr_code_states() -> None:
    prepared = _prepared("clean/vat_invoice_0001.jpg", check_print=False)
    assert set(TWICE) <= set(prepared.stated)
    assert not any(c.spec.name.endswith(".again") for c in prepared.crops)


def _read(value: str, valid: bool = True, errors: tuple[str, ...] = ()) -> FieldResult:
    return FieldResult(value=value, raw=value, confidence=0.95, valid=valid, errors=list(errors))


def _checked(
    first: FieldResult,
    second: FieldResult | None,
    source: str = "roi",
    name: str = "invoice_number",
) -> FieldResult:
    first.source = source  # type: ignore[assignment]
    template = TemplateStore().get("vat_invoice")
    found = {name: first}
    if second is not None:
        found[f"{name}.again"] = second
    fields = {name: first}
    check_second_prints(template, found, fields)
    return fields[name]


DOUBT = ("uncertain character '3' at 5 (confidence 0.41)",)


def test_a_second_print_confirms_mends_or_flags_the_first() -> None:
    # the same value: a doubt is lifted, and the note says by what
    same = _checked(_read("50837780", False, DOUBT), _read("50837780"))
    assert same.valid and not same.errors and same.note == "confirmed by its second print"
    # the first print in doubt, or cut at the page's edge: the second print's value
    doubted = _checked(_read("50837730", False, DOUBT), _read("50837780"))
    assert (doubted.value, doubted.valid) == ("50837780", True)
    assert doubted.note == "read from its second print: its box read '50837730'"
    cut = _checked(_read("508377", False, ("does not match ^\\d{8}$",)), _read("50837780"))
    assert (cut.value, cut.valid) == ("50837780", True)
    # a 12-digit code whose box, cut at the left, reads a valid 10 digits: its end
    whole = _read("144031900111")
    left_cut = _checked(_read("4031900111"), whole, name="invoice_code")
    assert (left_cut.value, left_cut.valid) == ("144031900111", True)
    assert left_cut.note == "read from its second print: its box read '4031900111'"
    # two valid prints that disagree: a person looks
    other = _checked(_read("50837780"), _read("50837730"))
    assert other.value == "50837780" and not other.valid
    assert other.errors == ["its second print reads 50837730"]


def test_a_second_print_that_is_not_sure_changes_nothing() -> None:
    # in doubt, shorter (cut itself), absent, or a field the QR code states
    for second, source in (
        (_read("50837730", False, DOUBT), "roi"),
        (None, "roi"),
        (_read("50837730"), "qr"),
    ):
        first = _checked(_read("50837780", False, DOUBT), second, source)
        assert (first.value, first.valid, first.errors) == ("50837780", False, list(DOUBT))
    # a 12-digit code whose second print, cut at the page's edge, reads a valid 10 digits
    code = _checked(_read("144031900111", False, DOUBT), _read("1440319001"), name="invoice_code")
    assert (code.value, code.valid) == ("144031900111", False)


def test_a_code_cut_at_a_photos_edge_is_read_from_its_second_print() -> None:
    """A phone photo whose left edge runs through the invoice code (synthetic geometry-level
    page 20269508, not a fixture; its QR code is not decoded): the code's box holds its last
    digits only; the corner's second print holds all of them."""
    from extractor.synth.generate import make_document

    document = make_document(20269508, "geometry")
    (page,) = Extractor(fallback="never").extract(document.jpeg, "vat_invoice").pages
    assert page.qr is None
    expected = document.truth["pages"][0]["fields"]["invoice_code"]
    code = page.fields["invoice_code"]
    assert (code.value, code.valid) == (expected, True)
    assert code.note is not None and code.note.startswith("read from its second print")
