from pathlib import Path

import pytest

from extractor.errors import TemplateError, TemplateNotFoundError
from extractor.templates import FieldKind, TemplateStore, load_template_file


def test_vat_invoice_template_loads() -> None:
    t = TemplateStore().get("vat_invoice")
    assert t.page.width_mm == 241 and t.page.height_mm == 140
    names = [f.name for f in t.fields]
    for required in ("invoice_code", "invoice_number", "issue_date", "buyer_tax_id", "total"):
        assert required in names
    assert t.field("total_in_words").kind is FieldKind.amount_words
    assert t.reference_size_px == (1898, 1102)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    return path


BASE = """
name: bad
page: {width_mm: 100, height_mm: 50}
fields:
"""


def test_error_names_file_field_and_problem(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE + "  - {name: total, box: [1, 2, 3], kind: amount}\n")
    with pytest.raises(TemplateError) as err:
        load_template_file(path)
    msg = str(err.value)
    assert str(path) in msg and "'total'" in msg and "box" in msg


def test_unknown_kind_and_box_off_page(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="kind"):
        load_template_file(
            _write(tmp_path, BASE + "  - {name: a, box: [1, 2, 3, 4], kind: money}\n")
        )
    with pytest.raises(TemplateError, match="outside"):
        load_template_file(_write(tmp_path, BASE + "  - {name: a, box: [90, 2, 30, 4]}\n"))
    with pytest.raises(TemplateError, match="decimals applies to amounts"):
        load_template_file(
            _write(tmp_path, BASE + "  - {name: a, box: [1, 2, 3, 4], kind: code, decimals: 2}\n")
        )
    amount = "  - {name: a, box: [1, 2, 3, 4], kind: amount, decimals: 2}\n"
    assert load_template_file(_write(tmp_path, BASE + amount)).field("a").decimals == 2


def test_rules_must_name_known_fields(tmp_path: Path) -> None:
    text = (
        BASE
        + "  - {name: a, box: [1, 2, 3, 4]}\nrules:\n  - {rule: sum, terms: [a, b], equals: a}\n"
    )
    with pytest.raises(TemplateError, match="unknown fields: b"):
        load_template_file(_write(tmp_path, text))


def test_starts_with_must_name_another_field(tmp_path: Path) -> None:
    name = "  - {name: a, box: [1, 2, 30, 4], kind: name, starts_with: %s}\n"
    other = "  - {name: b, box: [1, 8, 30, 4], kind: tax_id}\n"
    for bad in ("c", "a"):  # no such field; itself
        with pytest.raises(TemplateError, match="starts_with names no other field"):
            load_template_file(_write(tmp_path, BASE + name % bad + other))
    assert load_template_file(_write(tmp_path, BASE + name % "b" + other)).field("a").starts_with
    code = "  - {name: a, box: [1, 2, 30, 4], kind: code, starts_with: b}\n"
    with pytest.raises(TemplateError, match="starts_with applies to names"):
        load_template_file(_write(tmp_path, BASE + code + other))


def test_a_structure_check_must_be_known(tmp_path: Path) -> None:
    field = "  - {name: a, box: [1, 2, 30, 4], kind: code, check: %s}\n"
    assert load_template_file(_write(tmp_path, BASE + field % "invoice_code")).field("a").check
    with pytest.raises(TemplateError, match=r"field 'a' \(check\): Input should be 'invoice_code'"):
        load_template_file(_write(tmp_path, BASE + field % "iban"))


def test_absent_when_names_another_field_for_a_field_not_required(tmp_path: Path) -> None:
    other = "  - {name: b, box: [1, 8, 30, 4], kind: code}\n"
    field = "  - {name: a, box: [1, 2, 30, 4], kind: code, required: %s, absent_when: {%s: '%s'}}\n"
    good = load_template_file(_write(tmp_path, BASE + field % ("false", "b", "1") + other))
    assert good.field("a").absent_when == {"b": "1"}
    for required, name, pattern, problem in (
        ("true", "b", "1", "absent_when applies to a field not required"),
        ("false", "c", "1", "absent_when names no other field"),
        ("false", "a", "1", "absent_when names no other field"),
        ("false", "b", "(", "absent_when's regex does not compile"),
    ):
        with pytest.raises(TemplateError, match=problem):
            load_template_file(_write(tmp_path, BASE + field % (required, name, pattern) + other))


def test_printed_as_must_compile(tmp_path: Path) -> None:
    field = "  - {name: a, box: [1, 2, 30, 4], kind: code, printed_as: '%s'}\n"
    assert load_template_file(_write(tmp_path, BASE + field % r"^\d{12}$")).field("a").printed_as
    with pytest.raises(TemplateError, match=r"field 'a' \(printed_as\): .*printed_as does not"):
        load_template_file(_write(tmp_path, BASE + field % "(\\d"))


def test_yaml_is_safe_loaded(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="not valid YAML"):
        load_template_file(_write(tmp_path, "!!python/object/apply:os.system ['true']\n"))


def test_lookup_is_by_name_only() -> None:
    store = TemplateStore()
    for name in ("../../etc/passwd", "nope", "", "VAT_INVOICE"):
        with pytest.raises(TemplateNotFoundError):
            store.get(name)
