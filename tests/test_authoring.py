"""Template authoring: ``roi template init`` on a fixture proposes fields that extract correctly,
``preview`` draws boxes where the template says, ``check`` fails on broken templates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.authoring.check import check_template, overlaps
from extractor.authoring.labels import match_label, value_shape
from extractor.authoring.preview import INVALID, LOW, NEUTRAL, VALID, box_px, preview
from extractor.authoring.propose import InitResult, init_template, skew_angle
from extractor.authoring.yamlio import dump_template, template_data
from extractor.cli import main
from extractor.fullpage import TextLine
from extractor.pipeline import Extractor
from extractor.templates import FieldKind, TemplateStore, load_template_file

ROOT = Path(__file__).resolve().parent.parent
CLEAN = ROOT / "fixtures" / "clean"
SAMPLE = CLEAN / "vat_invoice_0001.jpg"


def _truth(path: Path) -> dict[str, str]:
    return json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]["fields"]


@pytest.fixture(scope="module")
def extractor() -> Extractor:
    return Extractor(fallback="never")


@pytest.fixture(scope="module")
def proposed(tmp_path_factory: pytest.TempPathFactory) -> InitResult:
    """``init`` on a clean fixture, with the real full-page OCR (a few seconds)."""
    return init_template(SAMPLE, "proposed", tmp_path_factory.mktemp("templates"))


@pytest.fixture()
def store(tmp_path: Path) -> TemplateStore:
    for name in ("vat_invoice.yaml", "vat_invoice.png"):
        shutil.copy(ROOT / "templates" / name, tmp_path / name)
    return TemplateStore(tmp_path)


# -- init --------------------------------------------------------------------------------------


def test_init_writes_a_valid_template_and_its_reference(proposed: InitResult) -> None:
    template = load_template_file(proposed.yaml_path)
    assert template.name == "proposed"
    assert template.reference_image == "proposed.png"
    assert (template.page.width_mm, template.page.height_mm) == pytest.approx((241, 140), abs=0.1)
    image = cv2.imread(str(proposed.image_path))
    assert (image.shape[1], image.shape[0]) == template.reference_size_px
    assert proposed.has_frame and not proposed.notes
    text = proposed.yaml_path.read_text(encoding="utf-8")
    assert "# Proposed by `roi template init`" in text
    assert "# 开票日期 -> '2022年12月25日' right of the label" in text
    assert not overlaps(template)


def test_init_proposes_the_key_fields_with_kinds(proposed: InitResult) -> None:
    template = proposed.template
    names = {f.name for f in template.fields}
    assert {"invoice_number", "issue_date", "total"} <= names
    assert template.field("invoice_number").kind is FieldKind.code
    assert template.field("invoice_number").regex == r"^\d{8}$"
    assert template.field("invoice_code").check == "invoice_code"  # its region checked
    assert template.field("invoice_number").check == "invoice_number"  # a 20-digit one's
    assert template.field("issue_date").kind is FieldKind.date
    assert template.field("total").kind is FieldKind.amount
    assert template.field("total").allowlist == "amount"
    assert template.field("total").decimals == 2  # as the sample prints it
    # the sum and same rules are proposed when their fields are, and so are the parties
    assert [r.rule for r in template.rules] == ["sum", "same"]
    assert [(p.name, p.tax_id) for p in template.parties] == [
        ("buyer_name", "buyer_tax_id"),
        ("seller_name", "seller_tax_id"),
    ]
    assert "parties:\n  - {name: buyer_name, tax_id: buyer_tax_id}" in proposed.yaml_path.read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize("scan", ["vat_invoice_0001.jpg", "vat_invoice_0002.jpg"])
def test_init_boxes_extract_correctly(
    proposed: InitResult, extractor: Extractor, scan: str
) -> None:
    """The proposed template reads the sample it was made from, and another scan of the form
    (its data printed elsewhere in the cells), on the template path alone (no fallback)."""
    path = CLEAN / scan
    truth = _truth(path)
    page = extractor.extract(path, proposed.template).pages[0]
    assert page.matched
    for name in ("invoice_number", "issue_date", "total"):
        assert page.fields[name].value == truth[name], name
        assert page.fields[name].valid, (name, page.fields[name].errors)
    wrong = {n: (f.value, truth.get(n)) for n, f in page.fields.items() if f.value != truth.get(n)}
    assert not wrong


def test_init_refuses_to_overwrite(proposed: InitResult) -> None:
    code = main(
        [
            "template",
            "init",
            str(SAMPLE),
            "--name",
            "proposed",
            "--out",
            str(proposed.yaml_path.parent),
        ]
    )
    assert code == 2


def test_labels_and_value_shapes() -> None:
    assert match_label("开票日期：2022年12月25日")[0] == "开票日期"  # type: ignore[index]
    assert match_label("开票日期：2022年12月25日")[2] == "2022年12月25日"  # type: ignore[index]
    assert match_label("价税合计（大写）")[1].names == ("total_in_words",)  # type: ignore[index]
    assert match_label("Invoice No.:")[1].names == ("invoice_number",)  # type: ignore[index]
    assert match_label("No12345678") is not None
    assert match_label("Nothing here") is None
    assert value_shape("2022年12月25日") is FieldKind.date
    assert value_shape("¥1,395.05") is FieldKind.amount
    assert value_shape("25446 41505 49747 33188") is FieldKind.code
    assert value_shape("91350102MA01D2W16R") is FieldKind.tax_id
    assert value_shape("⊗壹佰玖拾柒元伍角壹分") is FieldKind.amount_words
    assert value_shape("宁波市北仑区图书馆") is FieldKind.text


def test_skew_angle_of_turned_lines() -> None:
    angle = np.radians(-2.0)  # 2 degrees counter-clockwise on screen (y down)
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    lines = []
    for i in range(6):
        quad = np.array([[100, 50 * i], [500, 50 * i], [500, 50 * i + 30], [100, 50 * i + 30]])
        lines.append(TextLine((quad @ rot.T).astype(np.float32), "x", 1.0))
    assert skew_angle(lines) == pytest.approx(2.0, abs=0.05)


def test_yaml_round_trip_of_the_national_template(tmp_path: Path) -> None:
    original = load_template_file(ROOT / "templates" / "vat_invoice.yaml")
    path = tmp_path / "vat_invoice.yaml"
    path.write_text(dump_template(template_data(original), ["a comment"]), encoding="utf-8")
    again = load_template_file(path)
    assert again.model_dump(exclude={"source_path"}) == original.model_dump(exclude={"source_path"})


# -- preview -----------------------------------------------------------------------------------


def _colour_at(image: np.ndarray, x: int, y: int) -> tuple[int, int, int]:
    b, g, r = image[y, x]
    return int(b), int(g), int(r)


def _close(a: tuple[int, int, int], b: tuple[int, int, int], tol: int = 40) -> bool:
    return all(abs(p - q) <= tol for p, q in zip(a, b, strict=True))


def test_preview_draws_boxes_where_the_template_says(store: TemplateStore, tmp_path: Path) -> None:
    out = tmp_path / "preview.png"
    template_path = store.directory / "vat_invoice.yaml"
    assert main(["template", "preview", str(template_path), "-o", str(out)]) == 0
    image = cv2.imread(str(out))
    template = load_template_file(template_path)
    assert (image.shape[1], image.shape[0]) == template.reference_size_px
    for spec in template.fields:
        x0, y0, x1, y1 = box_px(template, spec.name)
        for x, y in ((x0, y0), (x1, y0), (x0, y1), (x1, y1)):
            assert _close(_colour_at(image, x, y), NEUTRAL), (spec.name, x, y)
        # the middle of the box is the reference, not box colour
        assert not _close(_colour_at(image, (x0 + x1) // 2, (y0 + y1) // 2), NEUTRAL, 10)


def test_preview_on_a_scan_colours_boxes_by_validity(store: TemplateStore) -> None:
    template = store.get("vat_invoice")
    scan = CLEAN / "vat_invoice_0003.jpg"
    shot = preview(template, scan)
    assert shot.aligned and shot.page is not None
    image = shot.image
    assert (image.shape[1], image.shape[0]) == template.reference_size_px
    colours = {"valid": VALID, "low": LOW, "invalid": INVALID}
    for spec in template.fields:
        field = shot.page.fields[spec.name]
        x0, y0, _, _ = box_px(template, spec.name)
        got = _colour_at(image, x0, y0)
        if field.valid:
            assert _close(got, colours["valid"]), spec.name
        else:
            assert _close(got, colours["low"]) or _close(got, colours["invalid"]), spec.name
    assert sum(f.valid for f in shot.page.fields.values()) >= len(template.fields) - 1
    wide = preview(template, scan, side_by_side=True).image
    assert wide.shape[1] > 1.8 * image.shape[1] * wide.shape[0] / image.shape[0] * 0.9


# -- check -------------------------------------------------------------------------------------


def _write_variant(store: TemplateStore, name: str, edit: object) -> Path:
    text = (store.directory / "vat_invoice.yaml").read_text(encoding="utf-8")
    assert callable(edit)
    path = store.directory / f"{name}.yaml"
    path.write_text(edit(text.replace("name: vat_invoice", f"name: {name}")), encoding="utf-8")
    return path


def test_check_passes_a_good_template(store: TemplateStore, extractor: Extractor) -> None:
    report = check_template(
        str(store.directory / "vat_invoice.yaml"),
        [str(CLEAN / "vat_invoice_0001.jpg")],
        extractor=extractor,
    )
    assert report.ok, [str(p) for p in report.problems]
    assert len(report.pages) == 1


def test_check_fails_on_broken_templates(
    store: TemplateStore, capsys: pytest.CaptureFixture[str]
) -> None:
    overlap = _write_variant(
        store, "overlap", lambda t: t.replace("box: [171, 8, 36, 10]", "box: [40, 8, 36, 10]")
    )
    off_page = _write_variant(
        store, "off_page", lambda t: t.replace("box: [171, 8, 36, 10]", "box: [230, 8, 36, 10]")
    )
    bad_yaml = _write_variant(store, "bad_yaml", lambda t: t.replace("fields:", "fields: [", 1))
    bad_charset = _write_variant(
        store, "bad_charset", lambda t: t.replace("allowlist: digits", "allowlist: digitz", 1)
    )
    for path, words in [
        (overlap, "boxes overlap"),
        (off_page, "outside"),
        (bad_yaml, "not valid YAML"),
        (bad_charset, "unknown charset"),
    ]:
        assert main(["template", "check", str(path)]) == 1, path.name
        assert words in capsys.readouterr().out, path.name


def test_check_fails_when_a_required_field_reads_empty(
    store: TemplateStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # a required box moved onto blank paper below the form
    def moved(text: str) -> str:  # the number's box and its second print's
        text = text.replace("box: [171, 8, 36, 10]", "box: [150, 126, 36, 8]")
        return text.replace("printed_again: [211, 12, 22, 4]", "printed_again: [150, 134, 22, 4]")

    empty = _write_variant(store, "empty_box", moved)
    code = main(
        [
            "template",
            "check",
            str(empty),
            str(CLEAN / "vat_invoice_0001.jpg"),
            "--fallback",
            "never",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "invoice_number: required field reads empty" in out
    assert "FAILED" in out
