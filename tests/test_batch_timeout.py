"""`roi batch --doc-timeout`: a PDF page that takes MuPDF many seconds to render has its worker
killed; the other documents are extracted, each once, by the real engine.

The slow PDF is made here: one small page whose (Flate-compressed, a few KB) content stream
fills the whole page tens of thousands of times. Rendering it at 200 dpi takes about 8 s on a
2-vCPU VM; the run stops it after 2 s, so the test does not wait for the render either way.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pymupdf
import pytest
from test_batch import FIXTURES, roi_batch

SCANS = ["clean/vat_invoice_0001.jpg", "clean/vat_invoice_0002.jpg"]
FILLS = 60_000  # full-page fills; MuPDF paints each one (~0.13 ms each at 200 dpi here)


def make_slow_pdf(path: Path, fills: int = FILLS) -> None:
    """A 200 x 200 pt page whose content stream is ``fills`` times ``0 0 200 200 re f``."""
    doc = pymupdf.open()
    page = doc.new_page(width=200, height=200)
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, b"0 0 200 200 re f\n" * fills, compress=True)
    doc.xref_set_key(page.xref, "Contents", f"{xref} 0 R")
    doc.save(path, garbage=3, deflate=True)
    doc.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scans = [FIXTURES / s for s in SCANS]
    if not all(s.is_file() for s in scans):
        pytest.skip("fixtures/clean is not generated")
    dest = tmp_path_factory.mktemp("batch-timeout") / "in"
    dest.mkdir()
    # Named to sort first: it is submitted first, and the next scan waits queued behind it
    # (2 x workers in flight), so the kill must put that scan back, not count it as failed.
    make_slow_pdf(dest / "a_slow.pdf")
    assert (dest / "a_slow.pdf").stat().st_size < 50_000
    for scan in scans:
        shutil.copy(scan, dest / scan.name)
    return dest


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _states(out: Path) -> dict[str, str]:
    db = sqlite3.connect(out / "manifest.sqlite")
    try:
        return {Path(p).name: s for p, s in db.execute("SELECT path, state FROM documents")}
    finally:
        db.close()


def test_slow_pdf_times_out_and_the_rest_is_extracted(folder: Path) -> None:
    out = folder.parent / "out"
    start = time.monotonic()
    proc = roi_batch(folder, "-t", "vat_invoice", "--out", out, "-w", "1", "--doc-timeout", "2")
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr[-3000:] + proc.stdout
    assert "Traceback" not in proc.stderr

    errors = _lines(out / "errors.jsonl")
    assert [(Path(e["file"]).name, e["error"]) for e in errors] == [
        ("a_slow.pdf", "DocumentTimeout")
    ]
    assert errors[0]["reason"].startswith("took longer than 2 s (--doc-timeout)")

    results = {Path(r["file"]).name: r for r in _lines(out / "results.jsonl")}
    assert sorted(results) == [Path(s).name for s in SCANS]  # each scan once
    for scan in SCANS:
        truth = json.loads((FIXTURES / scan).with_suffix(".json").read_text())
        expected = truth["pages"][0]["fields"]["invoice_number"]
        page = results[Path(scan).name]["pages"][0]
        assert page["fields"]["invoice_number"]["value"] == expected

    assert "3 documents: 2 extracted, 1 failed, 0 already done" in proc.stdout
    assert "a_slow.pdf: took longer than 2 s (--doc-timeout)" in proc.stdout
    assert _states(out) == {"a_slow.pdf": "failed", **{Path(s).name: "done" for s in SCANS}}
    print(f"run with a timed-out document: {took:.1f} s")

    # The convention for failed documents: tried again (once) on the next run, done ones kept.
    proc = roi_batch(folder, "-t", "vat_invoice", "--out", out, "-w", "1", "--doc-timeout", "2")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "3 documents: 0 extracted, 1 failed, 2 already done" in proc.stdout
    assert [Path(e["file"]).name for e in _lines(out / "errors.jsonl")] == ["a_slow.pdf"]
    assert len(_lines(out / "results.jsonl")) == 2


def test_doc_timeout_must_be_a_number_of_seconds(tmp_path: Path) -> None:
    proc = roi_batch(tmp_path, "-t", "vat_invoice", "--out", tmp_path / "o", "--doc-timeout", "-1")
    assert proc.returncode == 2
    assert "--doc-timeout must be" in proc.stderr
