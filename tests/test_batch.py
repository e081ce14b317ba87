"""`roi batch` end to end with the real engine, on a handful of fixture scans.

Slow-ish (each run spawns workers that load the model): the folders are kept to 4-5 documents.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pymupdf
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("ROI_BATCH_FIXTURES") or ROOT / "fixtures")


def roi_batch(*args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "extractor.cli", "batch", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def _pick(level: str, suffix: str, n: int) -> list[Path]:
    docs = sorted(
        p for p in (FIXTURES / level).glob(f"*{suffix}") if p.with_suffix(".json").is_file()
    )
    return docs[:n]


def _copy(docs: list[Path], dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        shutil.copy(doc, dest / doc.name)
        shutil.copy(doc.with_suffix(".json"), dest / doc.with_suffix(".json").name)
    return dest


@pytest.fixture(scope="module")
def good_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 clean single-page scans and 1 multi-page PDF, with their truth JSON beside them."""
    images = _pick("clean", ".jpg", 3) or _pick("clean", ".png", 3)
    pdfs = _pick("multipage", ".pdf", 1)
    if len(images) < 3 or not pdfs:
        pytest.skip("fixtures/clean and fixtures/multipage are not generated")
    return _copy(images + pdfs, tmp_path_factory.mktemp("batch") / "in")


@pytest.fixture(scope="module")
def local_run(good_folder: Path) -> Path:
    out = good_folder.parent / "out-local"
    proc = roi_batch(good_folder, "--template", "vat_invoice", "--out", out, "--workers", "2")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    return out


def _results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "fields.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _values(out: Path) -> dict[tuple[str, int], dict[str, str | None]]:
    return {
        (Path(r["file"]).name, p["page"]): {k: f["value"] for k, f in p["fields"].items()}
        for r in _results(out)
        for p in r["pages"]
    }


def test_outputs_match_truth(good_folder: Path, local_run: Path) -> None:
    results = _results(local_run)
    docs = sorted(p.name for p in good_folder.iterdir() if p.suffix != ".json")
    assert sorted(Path(r["file"]).name for r in results) == docs
    assert (local_run / "errors.jsonl").read_text() == ""

    # The batch writes exactly what the pipeline returns for each document ...
    from extractor.pipeline import Extractor

    extractor = Extractor()
    direct = {
        (doc, p.page): {k: f.value for k, f in p.fields.items()}
        for doc in docs
        for p in extractor.extract(good_folder / doc, "vat_invoice").pages
    }
    got = _values(local_run)
    assert got == direct

    # ... and those values are right: compared with the truth on the pages the form matched
    # (registration misses are the core's business, and are reported as unmatched pages).
    fields = exact = 0
    key_fields = Counter()
    for doc in docs:
        truth = json.loads((good_folder / doc).with_suffix(".json").read_text())
        for page in truth["pages"]:
            values = got[(doc, page["page"] + 1)]
            if page.get("template") is None or not values:
                continue
            for name, expected in page["fields"].items():
                fields += 1
                exact += values.get(name) == expected
                if name in ("invoice_number", "total"):
                    key_fields[values.get(name) == expected] += 1
    assert fields >= 36, "too few matched pages to judge"
    assert exact / fields >= 0.9, f"{exact}/{fields} fields match the truth"
    assert key_fields[True] / sum(key_fields.values()) >= 0.9, key_fields

    # fields.csv: one row per page, the same values as results.jsonl.
    rows = _rows(local_run)
    assert len(rows) == sum(len(r["pages"]) for r in results)
    results_by_file = {r["file"]: r for r in results}
    for row in rows:
        values = got[(Path(row["file"]).name, int(row["page"]))]
        for name, value in values.items():
            assert row[name] == (value or "")
            assert row[f"{name}_valid"] in {"true", "false"}
            source = results_by_file[row["file"]]["pages"][int(row["page"]) - 1]
            assert row[f"{name}_source"] == source["fields"][name]["source"]


def test_rerun_skips_done_and_force_redoes(good_folder: Path, local_run: Path) -> None:
    before = (local_run / "results.jsonl").read_text()
    proc = roi_batch(good_folder, "-t", "vat_invoice", "--out", local_run, "-w", "1", "--quiet")
    assert proc.returncode == 0 and proc.stdout == ""
    assert (local_run / "results.jsonl").read_text() == before

    proc = roi_batch(good_folder / "*.pdf", "-t", "vat_invoice", "--out", local_run, "--force")
    assert proc.returncode == 0, proc.stderr
    assert "1 extracted" in proc.stdout and "already done" in proc.stdout
    names = Counter(Path(r["file"]).name for r in _results(local_run))
    assert len(names) == len(before.splitlines()) and set(names.values()) == {1}


def test_killed_run_resumes_exactly_once(good_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "extractor.cli", "batch", str(good_folder), "-t", "vat_invoice",
           "--out", str(out), "--workers", "1", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stderr=subprocess.DEVNULL)
    done = 0
    try:
        deadline = time.monotonic() + 120
        while done < 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if (out / "manifest.sqlite").exists():
                try:
                    with sqlite3.connect(out / "manifest.sqlite", timeout=1) as db:
                        done = db.execute(
                            "SELECT COUNT(*) FROM documents WHERE state = 'done'"
                        ).fetchone()[0]
                except sqlite3.OperationalError:
                    pass
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert done >= 1, "the batch never finished a document"
    docs = sorted(p.name for p in good_folder.iterdir() if p.suffix != ".json")
    assert len(_results(out)) < len(docs) or proc.returncode == 0  # killed part-way

    proc2 = roi_batch(good_folder, "-t", "vat_invoice", "--out", out, "-w", "2")
    assert proc2.returncode == 0, proc2.stderr
    results = _results(out)
    assert sorted(Path(r["file"]).name for r in results) == docs
    rows = _rows(out)
    pages = Counter((Path(r["file"]).name, r["page"]) for r in rows)
    assert set(pages.values()) == {1}
    assert len(rows) == sum(len(r["pages"]) for r in results)
    with sqlite3.connect(out / "manifest.sqlite") as db:
        states = db.execute("SELECT state, COUNT(*) FROM documents GROUP BY state").fetchall()
    assert states == [("done", len(docs))]


def test_corrupt_and_non_image_files_are_recorded(good_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    good = sorted(p for p in good_folder.iterdir() if p.suffix != ".json")[:2]
    for doc in good:
        shutil.copy(doc, folder / doc.name)
    pdf = pymupdf.open()
    pdf.new_page().insert_text((50, 50), "invoice")
    (folder / "truncated.pdf").write_bytes(pdf.tobytes()[:200])
    (folder / "notes.png").write_text("this is a text file, not an image\n")

    out = tmp_path / "out"
    proc = roi_batch(folder, "-t", "vat_invoice", "--out", out, "-w", "2")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "2 failed" in proc.stdout
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert sorted(Path(e["file"]).name for e in errors) == ["notes.png", "truncated.pdf"]
    assert all(e["reason"] for e in errors)
    assert sorted(Path(r["file"]).name for r in _results(out)) == sorted(p.name for p in good)


def test_unknown_template_is_rejected(tmp_path: Path) -> None:
    proc = roi_batch(tmp_path, "-t", "nope", "--out", tmp_path / "o")
    assert proc.returncode == 2 and "nope" in proc.stderr and "Traceback" not in proc.stderr


def test_ray_gives_the_same_fields_as_the_local_pool(good_folder: Path, local_run: Path) -> None:
    pytest.importorskip("ray.data")
    out = good_folder.parent / "out-ray"
    proc = roi_batch(good_folder, "-t", "vat_invoice", "--out", out, "-w", "2", "--ray")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _values(out) == _values(local_run)
    assert len(_rows(out)) == len(_rows(local_run))
