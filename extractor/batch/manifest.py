"""The batch manifest: one SQLite row per document, keyed by absolute path + content hash.

States: ``pending`` (to do), ``done`` (its result is in results.jsonl and fields.csv) and
``failed`` (its reason is in errors.jsonl). A row becomes done or failed only after its output
lines were written and fsynced, so the outputs always hold at least what the manifest says;
:func:`extractor.batch.writer.reconcile` drops whatever they hold beyond it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from extractor.batch.inputs import Document
from extractor.errors import RoiError

MANIFEST_NAME = "manifest.sqlite"
PENDING, DONE, FAILED = "pending", "done", "failed"
SETTINGS_BEFORE_BINDING = {"fallback": "auto", "check_print": "true"}
"""Settings bound since a later version, with the value every run made before then used."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    key TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    path TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
    pages INTEGER,
    error TEXT,
    updated REAL NOT NULL,
    PRIMARY KEY (key, sha256)
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Manifest:
    """The manifest of one output folder. Only the batch's parent process writes to it."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / MANIFEST_NAME
        # Autocommit; every state change is its own durable transaction.
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Manifest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def bind(self, **settings: str) -> None:
        """Record the run's settings (template, engine, fallback, check_print); refuse a folder
        made with others. A folder made before a setting was bound gets the value its runs used
        then, so it is not resumed with another one unnoticed."""
        bound = dict(self.db.execute("SELECT name, value FROM meta").fetchall())
        made_earlier = bool(bound)
        for name, value in settings.items():
            if name not in bound:
                before = SETTINGS_BEFORE_BINDING.get(name, value)
                bound[name] = before if made_earlier else value
                self.db.execute("INSERT INTO meta (name, value) VALUES (?, ?)", (name, bound[name]))
            if bound[name] != value:
                raise RoiError(
                    f"{self.path.parent} holds a batch run with {name} {bound[name]!r}, "
                    f"not {value!r}: use another --out folder"
                )

    def states(self) -> dict[tuple[str, str], str]:
        """State per (key, sha256)."""
        rows = self.db.execute("SELECT key, sha256, state FROM documents")
        return {(key, sha): state for key, sha, state in rows}

    def plan(self, documents: Iterable[Document], force: bool) -> list[Document]:
        """Register ``documents`` and return those to process, all set to pending.

        Done documents are skipped unless ``force``; failed ones are tried again. An older
        version of a file (same path, other hash) is dropped, so its results go too.
        """
        todo = []
        now = time.time()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for doc in documents:
                self.db.execute(
                    "DELETE FROM documents WHERE key = ? AND sha256 != ?", (doc.key, doc.sha256)
                )
                row = self.db.execute(
                    "SELECT state FROM documents WHERE key = ? AND sha256 = ?",
                    (doc.key, doc.sha256),
                ).fetchone()
                if row is not None and row[0] == DONE and not force:
                    continue
                self.db.execute(
                    "INSERT INTO documents (key, sha256, path, state, updated) "
                    "VALUES (?, ?, ?, 'pending', ?) ON CONFLICT (key, sha256) DO UPDATE SET "
                    "state = 'pending', path = excluded.path, pages = NULL, error = NULL, "
                    "updated = excluded.updated",
                    (doc.key, doc.sha256, doc.path, now),
                )
                todo.append(doc)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return todo

    def mark(self, doc: Document, state: str, pages: int | None = None, error: str | None = None):
        """Commit a document's outcome (call only after its output lines are on disk)."""
        self.db.execute(
            "UPDATE documents SET state = ?, pages = ?, error = ?, updated = ? "
            "WHERE key = ? AND sha256 = ?",
            (state, pages, error, time.time(), doc.key, doc.sha256),
        )

    def reset(self, keys: Iterable[tuple[str, str]]) -> None:
        """Set documents back to pending (their outputs went missing)."""
        self.db.executemany(
            "UPDATE documents SET state = 'pending' WHERE key = ? AND sha256 = ?", list(keys)
        )

    def count(self, state: str) -> int:
        return self.db.execute(
            "SELECT COUNT(*) FROM documents WHERE state = ?", (state,)
        ).fetchone()[0]
