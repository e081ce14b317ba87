"""`roi eval` on a small folder: real extraction, scored against the truth beside each file."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import pytest

from extractor.errors import InputError
from extractor.evaluate import edit_distance, evaluate
from extractor.pipeline import Extractor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_edit_distance() -> None:
    assert edit_distance("91350100M000100Y43", "91350100M000100Y43") == 0
    assert edit_distance("1234.56", "1234.5") == 1
    assert edit_distance("技术", "技不") == 1
    assert edit_distance("", "abc") == 3


def test_scores_right_wrong_and_dangerous(tmp_path: Path) -> None:
    right = FIXTURES / "clean/vat_invoice_0004.jpg"
    shutil.copy(right, tmp_path / "a.jpg")
    shutil.copy(right.with_suffix(".json"), tmp_path / "a.json")
    # the same scan with a truth that disagrees on one field: the extractor's (correct, valid)
    # reading now counts as a wrong value passed as valid
    shutil.copy(right, tmp_path / "b.jpg")
    truth = json.loads(right.with_suffix(".json").read_text(encoding="utf-8"))
    truth["pages"][0]["fields"]["buyer_name"] = "不是这家公司"
    (tmp_path / "b.json").write_text(json.dumps(truth, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("no truth, not scored")

    report = evaluate(tmp_path, extractor=Extractor(fallback="never"))
    assert report.documents == 2 and report.pages == 2
    assert report.overall.fields == 24 and report.overall.exact == 23
    assert report.overall.wrong_valid == 1 and report.overall.wrong_flagged == 0
    assert report.overall.right_flagged == 0  # a clean scan: nothing right needs a look
    assert report.by_field["buyer_name"].exact == 1
    (miss,) = report.misses
    assert (miss.file, miss.field, miss.expected, miss.valid) == (
        "b.jpg",
        "buyer_name",
        "不是这家公司",
        True,
    )
    assert 0 < report.overall.cer < 0.05


def test_cli_json(tmp_path: Path) -> None:
    src = FIXTURES / "clean/vat_invoice_0005.jpg"
    shutil.copy(src, tmp_path / "x.jpg")
    shutil.copy(src.with_suffix(".json"), tmp_path / "x.json")
    proc = subprocess.run(
        [sys.executable, "-m", "extractor.cli", "eval", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    report = json.loads(proc.stdout)
    assert report["overall"]["fields"] == 12 and report["overall"]["exact"] == 12
    assert list(report["by_level"]) == ["vat_invoice clean"]


def test_scores_photos_as_phones_save_them(tmp_path: Path) -> None:
    """A folder of phone photos saved as WebP (or HEIC, AVIF) with their truth beside them is
    scored as a batch would read it: eval once took only PDF, PNG, JPEG and TIFF files."""
    src = FIXTURES / "clean/vat_invoice_0005.jpg"
    ok, webp = cv2.imencode(".webp", cv2.imread(str(src)), [cv2.IMWRITE_WEBP_QUALITY, 95])
    assert ok
    (tmp_path / "photo.webp").write_bytes(webp.tobytes())
    shutil.copy(src.with_suffix(".json"), tmp_path / "photo.json")
    report = evaluate(tmp_path, extractor=Extractor(fallback="never"))
    assert report.documents == 1 and report.overall.fields == 12
    assert report.overall.exact >= 11


def test_truth_as_a_person_writes_it(tmp_path: Path) -> None:
    """A truth file written by hand: a page without its own template is a form of the file's;
    a value given as a number, or a file that is not JSON, is that document's error (named,
    with what is wrong), not a traceback ending the run; a folder without truth is an error."""
    src = FIXTURES / "clean/vat_invoice_0005.jpg"
    truth = json.loads(src.with_suffix(".json").read_text(encoding="utf-8"))
    fields = truth["pages"][0]["fields"]
    shutil.copy(src, tmp_path / "a.jpg")
    by_hand = {"template": "vat_invoice", "pages": [{"page": 0, "fields": fields}]}
    (tmp_path / "a.json").write_text(json.dumps(by_hand, ensure_ascii=False), encoding="utf-8")
    shutil.copy(src, tmp_path / "b.jpg")
    as_number = {"template": "vat_invoice", "pages": [{"fields": {"total": 106.0}}]}
    (tmp_path / "b.json").write_text(json.dumps(as_number), encoding="utf-8")
    shutil.copy(src, tmp_path / "c.jpg")
    (tmp_path / "c.json").write_text("{not json", encoding="utf-8")

    report = evaluate(tmp_path, extractor=Extractor(fallback="never"))
    assert report.documents == 3 and report.pages == 1
    assert report.overall.fields == 12 and report.overall.exact == 12
    assert list(report.by_level) == ["vat_invoice " + tmp_path.name]
    b_error, c_error = report.errors
    assert b_error.startswith("b.jpg: b.json: not a truth file: pages.0.fields.total: ")
    assert "string" in b_error
    assert c_error.startswith("c.jpg: c.json: not a truth file: ")

    with pytest.raises(InputError, match="no such folder"):
        evaluate(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no document with its truth beside it"):
        evaluate(tmp_path / "empty")


def test_counts_right_values_that_are_flagged(tmp_path: Path) -> None:
    """A clean scan read right, its seller registered under another name in the party registry
    (an ERP whose vendor master is out of date): the seller's name, read right, is flagged
    (the registry names another party for that tax id), which a person has to look at (the
    review load): right but flagged, not exact-and-valid, nor wrong."""
    src = FIXTURES / "clean/vat_invoice_0004.jpg"
    shutil.copy(src, tmp_path / "x.jpg")
    shutil.copy(src.with_suffix(".json"), tmp_path / "x.json")
    seller_tax_id = json.loads(src.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0][
        "fields"
    ]["seller_tax_id"]
    registry = tmp_path / "parties" / "vendors.csv"
    registry.parent.mkdir()
    registry.write_text(f"tax_id,name\n{seller_tax_id},北京远方科技有限公司\n", encoding="utf-8")
    report = evaluate(tmp_path, extractor=Extractor(fallback="never", parties=registry))
    seller = report.by_field["seller_name"]
    assert (seller.exact, seller.right_flagged, seller.wrong_flagged) == (1, 1, 0)
    assert report.overall.right_flagged == 1 and report.overall.exact == 12
