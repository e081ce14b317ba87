"""`roi extract` on bad input: a clear one-line error and a non-zero exit, never a traceback."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest
from test_hostile import zipped


def roi(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "extractor.cli", *args], capture_output=True, text=True, timeout=120
    )


def _truncated_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 50), "hello")
    path.write_bytes(doc.tobytes()[:150])
    return path


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.png", b"", "empty"),
        ("notes.png", b"this is a text file, not an image\n", "unsupported file type"),
        ("scan.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 64, "corrupt"),
        ("invoice.ofd", zipped("OFD.xml", "Doc_0/Document.xml"), "names no document"),
        ("scans.zip", zipped("scan.jpg"), "unsupported file type"),
    ],
)
def test_bad_files(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    proc = roi("extract", str(path), "--template", "vat_invoice")
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_truncated_pdf(tmp_path: Path) -> None:
    proc = roi("extract", str(_truncated_pdf(tmp_path / "t.pdf")), "--template", "vat_invoice")
    assert proc.returncode == 2
    assert "PDF" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_template_and_missing_file(tmp_path: Path) -> None:
    proc = roi("extract", str(tmp_path / "x.png"), "--template", "no_such_template")
    assert proc.returncode == 2
    assert "unknown template 'no_such_template'" in proc.stderr and "Traceback" not in proc.stderr
    missing = tmp_path / "missing.pdf"
    proc = roi("extract", str(missing), "--template", "vat_invoice")
    assert proc.returncode == 2 and proc.stderr.strip() == f"roi: {missing}: no such file"


def test_device_without_its_provider() -> None:
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider: the error path is not reachable")
    clean = Path(__file__).resolve().parent.parent / "fixtures/clean/vat_invoice_0001.jpg"
    proc = roi("extract", str(clean), "--template", "vat_invoice", "--device", "cuda")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "CUDAExecutionProvider is not available" in proc.stderr and "roi[gpu]" in proc.stderr


def test_a_document_piped_in() -> None:
    """`-` reads one document from standard input (reported as <stdin>); nothing piped in is
    an empty file, said so."""
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "clean" / "vat_invoice_0004.jpg"
    args = [sys.executable, "-m", "extractor.cli", "extract", "-", "-t", "vat_invoice", "--json"]
    proc = subprocess.run(
        [*args, "--fallback", "never"], input=fixture.read_bytes(), capture_output=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    truth = json.loads(fixture.with_suffix(".json").read_text(encoding="utf-8"))
    assert result["file"] == "<stdin>"
    fields, expected = result["pages"][0]["fields"], truth["pages"][0]["fields"]
    assert {k: fields[k]["value"] for k in expected} == expected
    proc = subprocess.run(args, input=b"", capture_output=True, timeout=120)
    assert proc.returncode == 2 and b"empty" in proc.stderr and b"Traceback" not in proc.stderr


def test_a_folder_stands_for_its_documents(tmp_path: Path) -> None:
    """A folder named to `roi extract` is read as the documents in it, as `roi batch` finds
    them (recursively, by suffix); one holding none is an error naming it."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "clean"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jpg").write_bytes((fixtures / "vat_invoice_0004.jpg").read_bytes())
    (tmp_path / "a.jpg").write_bytes((fixtures / "vat_invoice_0005.jpg").read_bytes())
    (tmp_path / "a.json").write_text("{}")  # not a document: left out
    proc = roi("extract", str(tmp_path), "-t", "vat_invoice", "--json", "--fallback", "never")
    assert proc.returncode == 0, proc.stderr
    files = [json.loads(chunk)["file"] for chunk in re.split(r"(?m)^(?=\{)", proc.stdout) if chunk]
    assert files == [str(tmp_path / "a.jpg"), str(tmp_path / "sub" / "b.jpg")]
    (tmp_path / "empty").mkdir()
    proc = roi("extract", str(tmp_path / "empty"), "-t", "auto")
    assert (
        proc.returncode == 2
        and "no PDF, OFD, PNG" in proc.stderr
        and "Traceback" not in proc.stderr
    )
