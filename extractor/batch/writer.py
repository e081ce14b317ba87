"""The batch outputs, written only by the parent process: results.jsonl, fields.csv, errors.jsonl.

Exactly-once: a document's lines are appended and fsynced *before* the manifest marks it done
(or failed); on start, :meth:`BatchWriter.reconcile` rewrites each file keeping only the lines of
documents the manifest holds as done (failed, for errors.jsonl), each document once. A run killed
at any moment therefore leaves at worst lines that the next run drops, never a document missing
from the outputs while the manifest says it is finished.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from extractor.batch.inputs import Document
from extractor.batch.manifest import DONE, FAILED
from extractor.errors import RoiError

RESULTS_NAME, FIELDS_NAME, ERRORS_NAME = "results.jsonl", "fields.csv", "errors.jsonl"
PAGE_COLUMNS = ["file", "page", "form", "status", "template", "match_score", "message"]
TAIL_COLUMNS = ["sha256", "abspath"]

Key = tuple[str, str]  # (absolute path, sha256)


def csv_columns(field_names: Sequence[str]) -> list[str]:
    columns = list(PAGE_COLUMNS)
    for name in field_names:
        columns += [name, f"{name}_valid", f"{name}_source"]
    return columns + TAIL_COLUMNS


def _fsync_append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _replace(path: Path, text: str) -> None:
    """Atomically replace ``path`` with ``text`` (write, fsync, rename, fsync the folder)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _complete_text(path: Path) -> str:
    """The file's text up to its last newline (a line cut short by a kill is dropped)."""
    if not path.exists():
        return ""
    text = path.read_bytes().decode("utf-8", errors="replace")
    return text[: text.rfind("\n") + 1]


def _json_lines(path: Path) -> list[tuple[Key | None, str]]:
    out: list[tuple[Key | None, str]] = []
    for line in _complete_text(path).splitlines(keepends=True):
        try:
            obj = json.loads(line)
            key: Key | None = (obj["abspath"], obj["sha256"])
        except (ValueError, KeyError, TypeError):
            key = None
        out.append((key, line))
    return out


class BatchWriter:
    """Appends each document's outputs durably; reconciles the files with the manifest."""

    def __init__(self, out_dir: Path, field_names: Sequence[str]) -> None:
        self.out_dir = out_dir
        self.results = out_dir / RESULTS_NAME
        self.fields = out_dir / FIELDS_NAME
        self.errors = out_dir / ERRORS_NAME
        self.field_names = list(field_names)
        self.columns = csv_columns(self.field_names)

    # -- start of a run ------------------------------------------------------------------------

    def keys_present(self) -> tuple[set[Key], set[Key]]:
        """Documents with a line in results.jsonl, and with one in errors.jsonl."""
        results = {k for k, _ in _json_lines(self.results) if k is not None}
        errors = {k for k, _ in _json_lines(self.errors) if k is not None}
        return results, errors

    def reconcile(self, states: dict[Key, str]) -> int:
        """Keep only lines of documents in the state the file is for, each document once.

        Returns how many lines (or CSV rows) were dropped.
        """
        dropped = 0
        for path, wanted in ((self.results, DONE), (self.errors, FAILED)):
            dropped += self._reconcile_jsonl(path, lambda k, w=wanted: states.get(k) == w)
        dropped += self._reconcile_csv(lambda k: states.get(k) == DONE)
        return dropped

    def _reconcile_jsonl(self, path: Path, keep: Callable[[Key], bool]) -> int:
        if not path.exists():
            path.touch()
            return 0
        raw = path.read_bytes()
        lines = _json_lines(path)
        seen: set[Key] = set()
        kept: list[str] = []
        for key, line in lines:
            if key is not None and keep(key) and key not in seen:
                seen.add(key)
                kept.append(line)
        text = "".join(kept)
        if text.encode("utf-8") != raw:
            _replace(path, text)
        return len(lines) - len(kept)

    def _reconcile_csv(self, keep: Callable[[Key], bool]) -> int:
        header_line = self._csv_text([self.columns])
        if not self.fields.exists() or self.fields.stat().st_size == 0:
            _replace(self.fields, header_line)
            return 0
        raw = self.fields.read_bytes().decode("utf-8", errors="replace")
        rows = list(csv.reader(io.StringIO(_complete_text(self.fields))))
        if not rows or rows[0] != self.columns:
            raise RoiError(
                f"{self.fields} has other columns than this run writes (another template?): "
                "use another --out folder"
            )
        at_sha, at_path = self.columns.index("sha256"), self.columns.index("abspath")
        page_at, form_at = self.columns.index("page"), self.columns.index("form")
        seen: set[tuple[str, str, str, str]] = set()
        kept = [rows[0]]
        for row in rows[1:]:
            if len(row) != len(self.columns):
                continue
            key = (row[at_path], row[at_sha])
            page_key = (*key, row[page_at], row[form_at])
            if keep(key) and page_key not in seen:
                seen.add(page_key)
                kept.append(row)
        text = self._csv_text(kept)
        if text != raw:
            _replace(self.fields, text)
            return len(rows) - len(kept)
        return 0

    # -- during a run --------------------------------------------------------------------------

    def write_result(self, doc: Document, result: dict[str, Any]) -> None:
        """Append one document's result line and its page rows, durably."""
        line = {**result, "sha256": doc.sha256, "abspath": doc.key}
        _fsync_append(self.results, json.dumps(line, ensure_ascii=False) + "\n")
        rows = [self._page_row(doc, result, page) for page in result.get("pages", [])]
        if rows:
            _fsync_append(self.fields, self._csv_text(rows))

    def write_error(self, doc: Document, error: str, reason: str) -> None:
        line = {
            "file": doc.path,
            "error": error,
            "reason": reason,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "sha256": doc.sha256,
            "abspath": doc.key,
        }
        _fsync_append(self.errors, json.dumps(line, ensure_ascii=False) + "\n")

    def _page_row(self, doc: Document, result: dict[str, Any], page: dict[str, Any]) -> list[str]:
        row: list[Any] = [
            result.get("file", doc.path),
            page.get("page"),
            page.get("form", 1),
            page.get("status"),
            page.get("template") or "",
            page.get("match_score"),
            page.get("message") or "",
        ]
        fields = page.get("fields") or {}
        for name in self.field_names:
            f = fields.get(name)
            if f is None:
                row += ["", "", ""]
            else:
                row += [f.get("value") or "", str(bool(f.get("valid"))).lower(), f.get("source")]
        row += [doc.sha256, doc.key]
        return ["" if v is None else str(v) for v in row]

    @staticmethod
    def _csv_text(rows: Sequence[Sequence[str]]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        return buf.getvalue()
