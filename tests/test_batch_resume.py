"""roi batch bookkeeping without an engine: inputs, manifest plan, reconcile after a crash."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from extractor.batch.inputs import describe, find_paths
from extractor.batch.manifest import DONE, FAILED, PENDING, Manifest
from extractor.batch.writer import BatchWriter
from extractor.errors import InputError, RoiError

FIELDS = ["invoice_number", "total"]


def _result(doc_path: str, pages: int = 1) -> dict:
    return {
        "file": doc_path,
        "template": "vat_invoice",
        "engine": "ppocr",
        "pages": [
            {
                "page": i + 1,
                "template": "vat_invoice",
                "status": "ok",
                "matched": True,
                "match_score": 0.9,
                "fields": {
                    "invoice_number": {"value": "1234567" + str(i), "valid": True, "source": "roi"},
                    "total": {"value": "10.00", "valid": False, "source": "roi"},
                },
            }
            for i in range(pages)
        ],
    }


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "a.png").write_bytes(b"a")
    (root / "sub" / "b.PDF").write_bytes(b"b")
    (root / "c.jpg").write_bytes(b"c")
    (root / "notes.txt").write_text("not a document")
    return root


def test_find_paths_folders_globs_files(folder: Path) -> None:
    names = [p.name for p in find_paths([str(folder)])]
    assert names == ["a.png", "c.jpg", "b.PDF"]  # recursive, by suffix, sorted per level
    assert [p.name for p in find_paths([str(folder / "*.jpg"), str(folder / "c.jpg")])] == [
        "c.jpg"
    ]  # the same file twice is one document
    assert [p.name for p in find_paths([str(folder / "notes.txt")])] == ["notes.txt"]
    with pytest.raises(InputError, match="no such file"):
        find_paths([str(folder / "missing.pdf")])
    with pytest.raises(InputError, match="matches no files"):
        find_paths([str(folder / "*.tiff")])


def test_plan_skips_done_retries_failed_and_force(folder: Path, tmp_path: Path) -> None:
    docs = [describe(p) for p in find_paths([str(folder)])]
    with Manifest(tmp_path) as m:
        assert m.plan(docs, force=False) == docs
        m.mark(docs[0], DONE, pages=1)
        m.mark(docs[1], FAILED, error="x")
        assert m.plan(docs, force=False) == docs[1:]  # done skipped, failed tried again
        assert m.plan(docs, force=True) == docs
        assert set(m.states().values()) == {PENDING}


def test_changed_file_replaces_its_old_version(folder: Path, tmp_path: Path) -> None:
    path = folder / "a.png"
    old = describe(path)
    with Manifest(tmp_path) as m:
        m.plan([old], force=False)
        m.mark(old, DONE, pages=1)
        path.write_bytes(b"new content")
        new = describe(path)
        assert m.plan([new], force=False) == [new]
        assert m.states() == {(new.key, new.sha256): PENDING}


def test_bind_refuses_another_template(tmp_path: Path) -> None:
    with Manifest(tmp_path) as m:
        m.bind(template="vat_invoice")
        m.bind(template="vat_invoice")
        with pytest.raises(Exception, match="use another --out"):
            m.bind(template="receipt")


def test_bind_refuses_another_fallback_and_reads_old_folders(tmp_path: Path) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    new.mkdir()
    old.mkdir()
    with Manifest(new) as m:
        m.bind(template="vat_invoice", engine="ppocr", fallback="never")
        m.bind(template="vat_invoice", engine="ppocr", fallback="never")
        with pytest.raises(RoiError, match="fallback 'never', not 'auto'"):
            m.bind(template="vat_invoice", engine="ppocr", fallback="auto")
    # A folder made before the fallback was bound: its runs all used the default, auto.
    with Manifest(old) as m:
        m.bind(template="vat_invoice", engine="ppocr")
    with Manifest(old) as m:
        with pytest.raises(RoiError, match="fallback 'auto', not 'never'"):
            m.bind(template="vat_invoice", engine="ppocr", fallback="never")
        m.bind(template="vat_invoice", engine="ppocr", fallback="auto")


def test_bind_reads_folders_made_before_check_print_as_reading_the_print(tmp_path: Path) -> None:
    """Every run before ``--check-print`` read the print of the fields the QR code states: such
    a folder resumes only with it, and a new one keeps the setting of its first run."""
    with Manifest(tmp_path) as m:
        m.bind(template="vat_invoice", engine="ppocr", fallback="auto")
    with Manifest(tmp_path) as m:
        with pytest.raises(RoiError, match="check_print 'true', not 'false'"):
            m.bind(template="vat_invoice", engine="ppocr", fallback="auto", check_print="false")
        m.bind(template="vat_invoice", engine="ppocr", fallback="auto", check_print="true")
    new = tmp_path / "new"
    new.mkdir()
    with Manifest(new) as m:
        m.bind(template="vat_invoice", check_print="false")
        with pytest.raises(RoiError, match="check_print 'false', not 'true'"):
            m.bind(template="vat_invoice", check_print="true")


def test_reconcile_drops_uncommitted_partial_and_duplicate_lines(
    folder: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    a, b, c = (describe(p) for p in find_paths([str(folder)]))
    writer = BatchWriter(out, FIELDS)
    with Manifest(out) as m:
        m.plan([a, b, c], force=False)
        writer.reconcile(m.states())
        writer.write_result(a, _result(a.path, pages=2))
        m.mark(a, DONE, pages=2)
        writer.write_result(a, _result(a.path, pages=2))  # a duplicate, e.g. from a bug
        writer.write_result(b, _result(b.path))  # killed before the manifest commit
        writer.write_error(c, "CorruptInputError", "bad")
        m.mark(c, FAILED, error="bad")
        with open(writer.results, "a") as fh:  # killed in the middle of a line
            fh.write('{"file": "x", "pag')
        with open(writer.fields, "a") as fh:
            fh.write("x,1,ok")

        writer.reconcile(m.states())

    lines = [json.loads(x) for x in writer.results.read_text().splitlines()]
    assert [x["abspath"] for x in lines] == [a.key]
    rows = list(csv.DictReader(writer.fields.open()))
    assert [(r["abspath"], r["page"]) for r in rows] == [(a.key, "1"), (a.key, "2")]
    assert rows[0]["invoice_number"] == "12345670" and rows[0]["total_valid"] == "false"
    errors = [json.loads(x) for x in writer.errors.read_text().splitlines()]
    assert [(e["abspath"], e["reason"]) for e in errors] == [(c.key, "bad")]


def test_a_pages_forms_are_rows_of_their_own_and_kept_on_reconcile(
    folder: Path, tmp_path: Path
) -> None:
    """Two invoices on one page (``form`` 1 and 2): two rows of page 1, both kept by reconcile
    (a row is a document's page and form)."""
    out = tmp_path / "out"
    out.mkdir()
    a = describe(find_paths([str(folder)])[0])
    result = _result(a.path, pages=2)
    second = {**result["pages"][0], "form": 2}
    result["pages"].insert(1, second)
    writer = BatchWriter(out, FIELDS)
    with Manifest(out) as m:
        m.plan([a], force=False)
        writer.reconcile(m.states())
        writer.write_result(a, result)
        m.mark(a, DONE, pages=2)
        writer.reconcile(m.states())
    rows = list(csv.DictReader(writer.fields.open()))
    assert [(r["page"], r["form"]) for r in rows] == [("1", "1"), ("1", "2"), ("2", "1")]


def test_done_document_with_lost_output_is_redone(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    a, *_ = (describe(p) for p in find_paths([str(folder)]))
    writer = BatchWriter(out, FIELDS)
    with Manifest(out) as m:
        m.plan([a], force=False)
        writer.reconcile(m.states())
        writer.write_result(a, _result(a.path))
        m.mark(a, DONE, pages=1)
        assert writer.keys_present()[0] == {(a.key, a.sha256)}
        writer.results.unlink()
        assert writer.keys_present()[0] == set()


class _Crash(Exception):
    pass


def test_run_crashing_between_write_and_commit_resumes_exactly_once(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner with a fake engine: a crash after a document's lines are written but before
    the manifest commit, then a lost results file: each re-run ends with each document once."""
    from extractor.batch import runner
    from extractor.batch.runner import BatchOptions, run_batch

    calls: list[str] = []

    def fake_outcomes(opts: BatchOptions, todo, parties):  # type: ignore[no-untyped-def]
        for doc in todo:
            calls.append(doc.path)
            yield doc, {"ok": True, "result": json.dumps(_result(doc.path)), "pages": 1}

    monkeypatch.setattr(runner, "_outcomes", fake_outcomes)
    out = tmp_path / "out"
    opts = BatchOptions(inputs=[str(folder)], template="vat_invoice", out_dir=out, quiet=True)

    real_mark = Manifest.mark

    def crashing_mark(self: Manifest, doc, state, pages=None, error=None):  # type: ignore[no-untyped-def]
        if len(calls) == 2:
            raise _Crash  # the second document is on disk but not committed
        real_mark(self, doc, state, pages, error)

    monkeypatch.setattr(Manifest, "mark", crashing_mark)
    with pytest.raises(_Crash):
        run_batch(opts)
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    monkeypatch.setattr(Manifest, "mark", real_mark)

    def once(expected: int) -> None:
        lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        assert sorted(x["abspath"] for x in lines) == sorted({x["abspath"] for x in lines})
        assert len(lines) == expected
        rows = list(csv.DictReader((out / "fields.csv").open()))
        assert len(rows) == expected == len({r["abspath"] for r in rows})

    calls.clear()
    summary = run_batch(opts)
    assert (summary.skipped, summary.done, len(calls)) == (1, 2, 2)
    once(3)

    (out / "results.jsonl").unlink()  # lost outputs: the documents are redone
    calls.clear()
    assert run_batch(opts).done == 3
    once(3)

    calls.clear()
    assert run_batch(opts).skipped == 3 and calls == []
    once(3)
