"""Batch durability: a full disk and a read-only output folder give a clear error and a state the
next run completes, each document in the outputs exactly once; the manifest never says done for a
result that is not on disk.

The extraction itself is replaced by canned outcomes (no engine): what is under test is the
writer and the manifest. The disk is really full (a tiny tmpfs) and really read-only (a read-only
remount) when the tests run as root and may mount; otherwise ENOSPC is injected and the folder is
made read-only with its mode bits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from extractor.batch import runner, writer
from extractor.batch.inputs import Document
from extractor.batch.runner import BatchOptions, run_batch
from extractor.errors import RoiError

DOCS = 6
PADDING = 6000  # bytes of message per result line, so a 160 KiB disk fills in a few documents


def _fake_result(doc: Document) -> dict[str, Any]:
    return {
        "file": doc.path,
        "template": "vat_invoice",
        "engine": "fake",
        "pages": [
            {
                "page": 1,
                "template": "vat_invoice",
                "status": "ok",
                "matched": True,
                "match_score": 0.9,
                "message": "x" * PADDING,
                "fields": {
                    "invoice_number": {"value": doc.sha256[:8], "valid": True, "source": "roi"}
                },
            }
        ],
    }


def _fake_outcomes(
    opts: BatchOptions, todo: Sequence[Document], parties: object
) -> Iterator[tuple[Document, dict[str, Any]]]:
    for doc in todo:
        result = _fake_result(doc)
        yield doc, {"ok": True, "result": json.dumps(result), "pages": 1, "seconds": 0.0}


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(runner, "_outcomes", _fake_outcomes)
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(DOCS):
        (folder / f"scan_{i}.png").write_bytes(f"document {i}".encode())
    return folder


def _opts(inputs: Path, out: Path) -> BatchOptions:
    return BatchOptions(inputs=[str(inputs)], template="vat_invoice", out_dir=out, quiet=True)


def _check_complete(out: Path) -> None:
    """Every document done in the manifest and exactly once in results.jsonl and fields.csv."""
    db = sqlite3.connect(out / "manifest.sqlite")
    try:
        states = dict(db.execute("SELECT path, state FROM documents"))
    finally:
        db.close()
    assert len(states) == DOCS and set(states.values()) == {"done"}, states
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    keys = [json.loads(line)["abspath"] for line in lines]
    assert len(keys) == DOCS == len(set(keys)), keys
    rows = (out / "fields.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == DOCS + 1, len(rows)


def _done_are_on_disk(out: Path) -> tuple[int, int]:
    """(documents the manifest holds done, of which have a complete line in results.jsonl)."""
    db = sqlite3.connect(out / "manifest.sqlite")
    try:
        done = {k for (k,) in db.execute("SELECT key FROM documents WHERE state = 'done'")}
    finally:
        db.close()
    results = out / "results.jsonl"
    text = results.read_text(encoding="utf-8", errors="replace") if results.exists() else ""
    written = set()
    for line in text.splitlines(keepends=True):
        with contextlib.suppress(ValueError, KeyError):
            if line.endswith("\n"):
                written.add(json.loads(line)["abspath"])
    return len(done), len(done & written)


# -- injected faults (any user) --------------------------------------------------------------


def test_disk_full_injected_is_clear_and_resumable(
    inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    real = writer._fsync_append
    calls = {"n": 0}

    def full_after_five(path: Path, text: str) -> None:
        calls["n"] += 1
        if calls["n"] == 6:  # document 3's results line: half of it reaches the disk
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text[: len(text) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, text)

    monkeypatch.setattr(writer, "_fsync_append", full_after_five)
    with pytest.raises(RoiError, match=r"No space left on device.*run the same command again"):
        run_batch(_opts(inputs, out))
    done, on_disk = _done_are_on_disk(out)
    assert done == 2 and on_disk == 2  # two documents complete, the third not marked done

    monkeypatch.setattr(writer, "_fsync_append", real)
    summary = run_batch(_opts(inputs, out))
    assert summary.skipped == 2 and summary.done == DOCS - 2 and summary.failed == 0
    _check_complete(out)


def test_manifest_commit_failing_after_write_is_redone_once(
    inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result line is on disk but the manifest commit fails: the next run drops the line
    and redoes the document, so it still appears exactly once."""
    out = tmp_path / "out"
    from extractor.batch.manifest import Manifest

    real_mark = Manifest.mark
    calls = {"n": 0}

    def failing_mark(self: Manifest, *args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise sqlite3.OperationalError("database or disk is full")
        real_mark(self, *args, **kwargs)

    monkeypatch.setattr(Manifest, "mark", failing_mark)
    with pytest.raises(RoiError, match="disk is full"):
        run_batch(_opts(inputs, out))
    monkeypatch.setattr(Manifest, "mark", real_mark)
    summary = run_batch(_opts(inputs, out))
    assert summary.skipped == 2 and summary.done == DOCS - 2
    _check_complete(out)


# -- real full and read-only file systems (root) ---------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        timeout=10,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=10)


def _remount(mount_point: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mount_point)], check=True, timeout=10)


def test_real_full_disk_then_room_again(inputs: Path, tiny_fs: Path) -> None:
    out = tiny_fs / "out"
    with pytest.raises(RoiError, match=r"(No space left|disk is full).*run the same"):
        run_batch(_opts(inputs, out))
    done, on_disk = _done_are_on_disk(out)
    print(f"full disk after {done} documents")
    assert done < DOCS and done == on_disk  # nothing marked done that is not fully written
    _remount(tiny_fs, "size=8m")
    summary = run_batch(_opts(inputs, out))
    assert summary.failed == 0 and summary.skipped == done
    _check_complete(out)


def test_read_only_output_folder(inputs: Path, tmp_path: Path) -> None:
    """A read-only folder: a clear error before any work; once writable, the run completes."""
    if os.geteuid() == 0:
        mount_point = tmp_path / "ro"
        mount_point.mkdir()
        made = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)],
            capture_output=True,
            timeout=10,
        )
        if made.returncode != 0:
            pytest.skip("root without mount: the mode bits would not stop root")
        try:
            out = mount_point / "out"
            first = run_batch(_opts(inputs, out))  # a run that completes ...
            assert first.done == DOCS
            (inputs / "scan_new.png").write_bytes(b"a new scan")  # ... then a new document
            _remount(mount_point, "ro")
            with pytest.raises(RoiError, match="Read-only file system"):
                run_batch(_opts(inputs, out))
            _remount(mount_point, "rw")
            again = run_batch(_opts(inputs, out))
            assert again.skipped == DOCS and again.done == 1
        finally:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=10)
    else:
        out = tmp_path / "out"
        out.mkdir()
        out.chmod(0o555)
        try:
            with pytest.raises(RoiError, match="Permission denied"):
                run_batch(_opts(inputs, out))
        finally:
            out.chmod(0o755)
        _check_complete_after(inputs, out)


def _check_complete_after(inputs: Path, out: Path) -> None:
    run_batch(_opts(inputs, out))
    _check_complete(out)
