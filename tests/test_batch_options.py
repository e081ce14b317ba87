"""`roi batch --fallback` and `--template auto` end to end with the real engine.

Two documents: a clean scan, and a heavy one whose buyer's name the ROI pass flags and the
full-page fallback mends, so the fallback setting shows in the outputs.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from test_batch import FIXTURES, roi_batch
from test_parties import recurring_invoices

CLEAN, HEAVY = "clean/vat_invoice_0001.jpg", "heavy/vat_invoice_0042.jpg"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = [FIXTURES / CLEAN, FIXTURES / HEAVY]
    if not all(d.is_file() for d in docs):
        pytest.skip("fixtures/clean and fixtures/heavy are not generated")
    dest = tmp_path_factory.mktemp("batch-options") / "in"
    dest.mkdir()
    for doc in docs:
        shutil.copy(doc, dest / doc.name)
    return dest


def _pages(out: Path) -> dict[str, dict]:
    """Each document's single page, by file name."""
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert all(len(r["pages"]) == 1 for r in results)
    return {Path(r["file"]).name: r["pages"][0] for r in results}


def _sources(page: dict) -> dict[str, str]:
    return {name: f["source"] for name, f in page["fields"].items()}


def _truth(name: str) -> dict[str, str]:
    """The fixture's ground truth (beside the original, not copied into the batch's folder)."""
    doc = next(FIXTURES / d for d in (CLEAN, HEAVY) if Path(d).name == name)
    return json.loads(doc.with_suffix(".json").read_text())["pages"][0]["fields"]


@pytest.fixture(scope="module")
def never_run(folder: Path) -> Path:
    out = folder.parent / "out-never"
    proc = roi_batch(folder, "-t", "vat_invoice", "--out", out, "-w", "1", "--fallback", "never")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_fallback_never_reads_only_the_regions(never_run: Path) -> None:
    pages = _pages(never_run)
    assert len(pages) == 2
    for page in pages.values():
        assert "fallback" not in _sources(page).values()
    assert _sources(pages[Path(CLEAN).name])["invoice_code"] == "qr"  # no --check-print
    heavy = pages[Path(HEAVY).name]
    assert heavy["status"] == "needs_review"  # what is flagged stays flagged
    assert not heavy["fields"]["buyer_name"]["valid"]


def test_ray_passes_the_fallback_to_its_actors(folder: Path, never_run: Path) -> None:
    pytest.importorskip("ray.data")
    out = folder.parent / "out-never-ray"
    args = ("-t", "vat_invoice", "--out", out, "-w", "1", "--fallback", "never", "--ray")
    proc = roi_batch(folder, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {n: _sources(p) for n, p in _pages(out).items()} == {
        n: _sources(p) for n, p in _pages(never_run).items()
    }


def test_resuming_with_another_fallback_is_refused(folder: Path, never_run: Path) -> None:
    before = (never_run / "results.jsonl").read_text()
    for args in ((), ("--fallback", "auto")):  # auto is also the default
        proc = roi_batch(folder, "-t", "vat_invoice", "--out", never_run, "-w", "1", *args)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr
        assert "fallback 'never', not 'auto'" in proc.stderr
        assert "use another --out folder" in proc.stderr
    assert (never_run / "results.jsonl").read_text() == before
    proc = roi_batch(folder, "-t", "vat_invoice", "--out", never_run, "--fallback", "never")
    assert proc.returncode == 0 and "2 already done" in proc.stdout, proc.stderr


def test_template_auto_with_the_fallback(folder: Path) -> None:
    """``-t auto`` picks the template per page; ``--fallback auto`` mends the heavy page."""
    out = folder.parent / "out-auto"
    proc = roi_batch(folder, "-t", "auto", "--out", out, "-w", "1", "--quiet")
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr[-3000:]

    pages = _pages(out)
    for name, page in pages.items():
        assert page["template"] == "vat_invoice"
        assert set(page["template_scores"]) == {"vat_invoice", "vat_invoice_digital"}
        for field in ("invoice_number", "total", "buyer_name"):
            assert page["fields"][field]["value"] == _truth(name)[field], (name, field)
    heavy = pages[Path(HEAVY).name]
    assert _sources(heavy)["buyer_name"] == "fallback" and heavy["fields"]["buyer_name"]["valid"]

    # fields.csv: every template's fields as columns, blank where the page's template has none.
    with (out / "fields.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    from extractor.templates import TemplateStore

    columns = reader.fieldnames or []
    for template in TemplateStore().all():
        assert {f.name for f in template.fields} <= set(columns)
    assert len(rows) == 2 and all(r["template"] == "vat_invoice" for r in rows)
    assert {r["buyer_name_source"] for r in rows} == {"roi", "fallback"}

    proc = roi_batch(folder, "-t", "vat_invoice", "--out", out, "-w", "1")
    assert proc.returncode == 2 and "template 'auto', not 'vat_invoice'" in proc.stderr


def test_a_page_of_another_form_keeps_its_fields_in_the_csv(folder: Path) -> None:
    """A national invoice in a run asked for ``vat_invoice_digital`` is read as the national
    form; fields.csv has columns for the fields the asked template lacks (its code and check
    code), so the row holds all the page's values, as results.jsonl does."""
    clean = folder.parent / "in-national"
    clean.mkdir()
    shutil.copy(FIXTURES / CLEAN, clean)
    out = folder.parent / "out-asked-digital"
    proc = roi_batch(clean, "-t", "vat_invoice_digital", "--out", out, "-w", "1", "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]

    page = _pages(out)[Path(CLEAN).name]
    assert page["template"] == "vat_invoice" and "asked for" in page["message"]
    with (out / "fields.csv").open(newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["template"] == "vat_invoice"
    truth = _truth(Path(CLEAN).name)
    for name in ("invoice_code", "check_code", "invoice_number", "total"):
        assert row[name] == page["fields"][name]["value"] == truth[name], name


def test_device_reaches_the_workers(folder: Path) -> None:
    """``--device cuda`` where ONNX Runtime has no CUDA provider: the workers' engine cannot
    start, and the run says so once, naming the extra to install; nothing is recorded."""
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider: the error path is not reachable")
    out = folder.parent / "out-cuda"
    proc = roi_batch(folder, "-t", "vat_invoice", "--out", out, "-w", "1", "--device", "cuda")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "CUDAExecutionProvider is not available" in proc.stderr
    assert "roi[gpu]" in proc.stderr
    results = out / "results.jsonl"
    assert not results.exists() or results.read_text() == ""

    proc = roi_batch(
        folder, "-t", "vat_invoice", "--out", out, "--device", "cuda", "--engine", "easyocr"
    )
    assert proc.returncode == 2 and "--device cuda needs the ppocr engine" in proc.stderr


def test_a_party_registry_and_check_print_reach_the_workers(folder: Path) -> None:
    """``--parties``: a registry naming the clean page's buyer one character off its print; the
    workers give the registered name, saying how the print read. ``--check-print``: they read
    the print of the fields the QR code states too (taken from the code unread otherwise)."""
    truth = _truth(Path(CLEAN).name)
    registered = truth["buyer_name"][:-1] + "赟"
    registry = folder.parent / "parties.csv"
    registry.write_text(f"tax_id,name\n{truth['buyer_tax_id']},{registered}\n", encoding="utf-8")
    out = folder.parent / "out-parties"
    args = ("-t", "vat_invoice", "--out", out, "-w", "1", "--fallback", "never")
    proc = roi_batch(folder, *args, "--parties", registry, "--check-print")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _pages(out)[Path(CLEAN).name]["fields"]["invoice_code"]["source"] == "roi"
    buyer = _pages(out)[Path(CLEAN).name]["fields"]["buyer_name"]
    assert buyer["value"] == registered and buyer["valid"]
    assert buyer["note"].endswith(f"read as {truth['buyer_name']!r}")
    proc = roi_batch(folder, *args, "--parties", folder.parent / "none.csv")
    assert proc.returncode == 2 and "cannot read the party registry" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ray_passes_the_party_registry_and_check_print_to_its_actors(folder: Path) -> None:
    pytest.importorskip("ray.data")
    truth = _truth(Path(CLEAN).name)
    registered = truth["buyer_name"][:-1] + "赟"
    registry = folder.parent / "parties-ray.csv"
    registry.write_text(f"tax_id,name\n{truth['buyer_tax_id']},{registered}\n", encoding="utf-8")
    out = folder.parent / "out-parties-ray"
    args = ("-t", "vat_invoice", "--out", out, "-w", "1", "--fallback", "never", "--ray")
    proc = roi_batch(folder, *args, "--parties", registry, "--check-print")
    assert proc.returncode == 0, proc.stderr[-3000:]
    fields = _pages(out)[Path(CLEAN).name]["fields"]
    assert fields["buyer_name"]["value"] == registered
    assert fields["invoice_code"]["source"] == "roi"


@pytest.fixture(scope="module")
def recurring(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Three clean invoices between the same two parties, as a night's batch holds them; the
    last prints the seller's name with one character changed. Returns the folder, the seller's
    name and the altered one."""
    docs, seller, altered = recurring_invoices("batch: recurring parties", 20261202, (2, 3), True)
    folder = tmp_path_factory.mktemp("recurring") / "in"
    folder.mkdir()
    for doc, name in zip(docs, "abc", strict=True):
        (folder / f"{name}.jpg").write_bytes(doc.jpeg)
    return folder, seller, altered


def test_a_batch_learns_the_parties_it_reads_in_two_documents(
    recurring: tuple[Path, str, str],
) -> None:
    """By default each worker registers the parties read valid in two documents: the third
    document's seller, printed one character off, is given the learned name, with a note
    saying so; ``--no-learn-parties`` leaves it as printed."""
    folder, seller, altered = recurring
    args = ("-t", "vat_invoice", "-w", "1", "--fallback", "never")
    learned, plain = folder.parent / "out-learned", folder.parent / "out-plain"
    for out, extra in ((learned, ()), (plain, ("--no-learn-parties",))):
        proc = roi_batch(folder, *args, "--out", out, *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
    first = _pages(learned)["a.jpg"]["fields"]["seller_name"]
    assert first["value"] == seller and first["note"] is None
    name = _pages(learned)["c.jpg"]["fields"]["seller_name"]
    assert name["value"] == seller and name["valid"]
    assert name["note"].startswith("the learned party registry's name for tax id")
    assert name["note"].endswith(f"read as {altered!r}")
    name = _pages(plain)["c.jpg"]["fields"]["seller_name"]
    assert name["value"] == altered and name["note"] is None
