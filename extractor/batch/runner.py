"""``roi batch``: find, plan against the manifest, extract (pool or Ray), write, sum up."""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from extractor.batch.inputs import Document, describe, find_paths
from extractor.batch.manifest import DONE, FAILED, Manifest
from extractor.batch.worker import Outcome
from extractor.batch.writer import ERRORS_NAME, BatchWriter
from extractor.errors import InputError, RoiError
from extractor.parties import Parties, load_parties
from extractor.progress import DocumentsProgress

if TYPE_CHECKING:
    from extractor.pipeline import FallbackMode
    from extractor.templates import Template

LOCK_NAME = ".lock"
# Checked up front: the Extractor takes any other value as auto, and the folder would be bound
# to the typo (BatchOptions is built by callers other than the CLI too).
FALLBACK_MODES = ("auto", "never", "always")
DEFAULT_DOC_TIMEOUT = 600.0


@dataclass
class BatchOptions:
    inputs: Sequence[str]
    template: str
    out_dir: Path
    workers: int = 1
    force: bool = False
    quiet: bool = False
    ray: bool = False
    ray_address: str | None = None
    engine: str = "ppocr"
    dpi: int = 200
    fallback: FallbackMode = "auto"
    """Full-page OCR where a page does not match or a required field fails (see Extractor)."""
    doc_timeout: float = DEFAULT_DOC_TIMEOUT
    """Seconds a document may run in its worker before the worker is killed and the document
    recorded as failed (``DocumentTimeout``); 0: no limit. Local pool only (not with Ray)."""
    provider: str | None = None
    """ONNX Runtime provider of the ppocr engine (cpu, cuda, tensorrt); None: cpu, or cuda on
    a Ray cluster with GPUs."""
    parties: Path | None = None
    """A party registry CSV (:mod:`extractor.parties`) the names and tax ids are checked
    against; read once here, before any worker starts."""
    check_print: bool = False
    """Read the print of the fields the QR code states too (see Extractor)."""
    learn_parties: bool = True
    """Each worker registers the parties it has read valid in two documents, for the documents
    after them (``Extractor(learn_parties=True)``): a night's invoices name the same parties
    again and again."""


@dataclass
class BatchSummary:
    documents: int = 0
    """Documents found in the inputs."""
    skipped: int = 0
    """Already done in an earlier run."""
    processed: int = 0
    done: int = 0
    failed: int = 0
    pages: int = 0
    pages_ok: int = 0
    pages_review: int = 0
    pages_unmatched: int = 0
    fields_invalid: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    def add_result(self, result: dict[str, Any]) -> None:
        for page in result.get("pages", []):
            self.pages += 1
            status = page.get("status")
            self.pages_ok += status == "ok"
            self.pages_review += status == "needs_review"
            self.pages_unmatched += status == "unmatched"
            self.fields_invalid += sum(not f["valid"] for f in page.get("fields", {}).values())


def _unreadable(path: Path) -> tuple[Document, str]:
    key = str(path.absolute())
    return Document(path=str(path), key=key, sha256="unreadable", size=0), "cannot read"


class _Lock:
    """One run per output folder at a time (released by the OS even on kill -9)."""

    def __init__(self, out_dir: Path) -> None:
        self.fh: IO[str] = open(out_dir / LOCK_NAME, "w")  # noqa: SIM115
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self.fh.close()
            raise RoiError(f"another roi batch is writing to {out_dir}") from exc
        self.fh.write(str(os.getpid()))
        self.fh.flush()

    def release(self) -> None:
        self.fh.close()


def _outcomes(
    opts: BatchOptions, todo: Sequence[Document], parties: Parties | None
) -> Iterator[tuple[Document, Outcome]]:
    if opts.ray:
        from extractor.batch.distributed import run_ray

        return run_ray(
            todo,
            opts.template,
            engine=opts.engine,
            dpi=opts.dpi,
            workers=opts.workers,
            address=opts.ray_address,
            fallback=opts.fallback,
            provider=opts.provider,
            parties=parties,
            check_print=opts.check_print,
            learn_parties=opts.learn_parties,
        )
    from extractor.batch.local import run_local

    return run_local(
        todo,
        opts.template,
        engine=opts.engine,
        dpi=opts.dpi,
        workers=opts.workers,
        fallback=opts.fallback,
        doc_timeout=opts.doc_timeout,
        provider=opts.provider,
        parties=parties,
        check_print=opts.check_print,
        learn_parties=opts.learn_parties,
    )


def _field_names(name: str) -> list[str]:
    """The CSV's field columns, each once: the asked template's fields first, then those of the
    store's other templates, which a page is read as when it is another's form (the pipeline
    says so in ``message``); a page's row leaves blank the fields its template lacks.

    Looking the template up raises for an unknown one, before any work is done.
    """
    from extractor.templates import AUTO, TemplateStore

    store = TemplateStore()
    templates: list[Template] = store.all()
    if name != AUTO:
        asked = store.get(name)
        templates = [asked, *(t for t in templates if t.name != asked.name)]
    if not templates:
        raise RoiError(f"--template auto: there are no templates in {store.directory}")
    return list(dict.fromkeys(f.name for t in templates for f in t.fields))


def run_batch(opts: BatchOptions) -> BatchSummary:
    """Run a batch; returns its summary. Raises :class:`RoiError` for a run that cannot start."""
    if opts.workers < 1:
        raise RoiError("--workers must be at least 1")
    if opts.fallback not in FALLBACK_MODES:
        raise RoiError(
            f"--fallback must be one of {', '.join(FALLBACK_MODES)}, not {opts.fallback!r}"
        )
    if not opts.doc_timeout >= 0 or math.isinf(opts.doc_timeout):  # NaN fails the first
        raise RoiError("--doc-timeout must be a number of seconds, 0 for no limit")
    field_names = _field_names(opts.template)
    parties = load_parties(opts.parties) if opts.parties is not None else None
    paths = find_paths(opts.inputs)

    out_dir = opts.out_dir
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        lock = _Lock(out_dir)
    except OSError as exc:
        raise RoiError(f"cannot write to the output folder {out_dir}: {_why(exc)}") from exc
    try:
        with Manifest(out_dir) as manifest:
            return _run(opts, manifest, BatchWriter(out_dir, field_names), paths, parties)
    except (OSError, sqlite3.Error) as exc:
        if isinstance(exc, OSError) and exc.errno not in _WRITE_ERRNOS:
            raise
        raise RoiError(
            f"cannot write the outputs in {out_dir}: {_why(exc)}. Every document whose result "
            "was not written is still pending: run the same command again once the folder is "
            "writable and has room"
        ) from exc
    finally:
        lock.release()


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}


def _why(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__


def _run(
    opts: BatchOptions,
    manifest: Manifest,
    writer: BatchWriter,
    paths: Sequence[Path],
    parties: Parties | None = None,
) -> BatchSummary:
    summary = BatchSummary(documents=len(paths))
    manifest.bind(
        template=opts.template,
        engine=opts.engine,
        fallback=opts.fallback,
        check_print=str(opts.check_print).lower(),
    )

    docs: list[Document] = []
    unreadable: dict[tuple[str, str], str] = {}
    for path in paths:
        try:
            docs.append(describe(path))
        except InputError as exc:
            doc, _ = _unreadable(path)
            unreadable[(doc.key, doc.sha256)] = str(exc)
            docs.append(doc)

    # Reconcile: documents marked finished whose lines are gone are redone; then every output
    # file keeps exactly the lines of the documents the manifest holds as done (or failed).
    in_results, in_errors = writer.keys_present()
    states = manifest.states()
    manifest.reset(
        k
        for k, s in states.items()
        if (s == DONE and k not in in_results) or (s == FAILED and k not in in_errors)
    )
    todo = manifest.plan(docs, force=opts.force)
    writer.reconcile(manifest.states())
    summary.skipped = len(docs) - len(todo)

    runnable = []
    for doc in todo:
        reason = unreadable.get((doc.key, doc.sha256))
        if reason is None:
            runnable.append(doc)
        else:
            _record_failure(manifest, writer, summary, doc, "InputError", reason)

    start = time.perf_counter()
    with DocumentsProgress(len(runnable), "extracting", quiet=opts.quiet) as progress:
        for doc, outcome in _outcomes(opts, runnable, parties):
            if "fatal" in outcome:
                raise RoiError(outcome["fatal"])
            if outcome["ok"]:
                result = json.loads(outcome["result"])
                writer.write_result(doc, result)  # durable first ...
                manifest.mark(doc, DONE, pages=outcome["pages"])  # ... then committed
                summary.processed += 1
                summary.done += 1
                summary.add_result(result)
            else:
                _record_failure(manifest, writer, summary, doc, outcome["error"], outcome["reason"])
            summary.seconds = time.perf_counter() - start
            progress.advance(outcome.get("pages", 0))
    summary.seconds = time.perf_counter() - start
    return summary


def _record_failure(
    manifest: Manifest,
    writer: BatchWriter,
    summary: BatchSummary,
    doc: Document,
    error: str,
    reason: str,
) -> None:
    writer.write_error(doc, error, reason)
    manifest.mark(doc, FAILED, error=f"{error}: {reason}")
    summary.processed += 1
    summary.failed += 1
    summary.failures.append((doc.path, reason))


def format_summary(summary: BatchSummary, out_dir: Path) -> str:
    lines = [
        f"roi batch: {summary.documents} documents: {summary.done} extracted, "
        f"{summary.failed} failed, {summary.skipped} already done (skipped)",
        f"  pages: {summary.pages} in {summary.seconds:.1f} s "
        f"({summary.pages_per_second:.2f} pages/s); ok {summary.pages_ok}, "
        f"needs review {summary.pages_review}, unmatched {summary.pages_unmatched}",
        f"  fields flagged invalid (need review): {summary.fields_invalid}",
        f"  outputs: {out_dir}/results.jsonl, fields.csv, {ERRORS_NAME}",
    ]
    if summary.failures:
        lines.append(f"  failures: {summary.failed} (see {out_dir / ERRORS_NAME})")
        for path, reason in summary.failures[:20]:
            lines.append(f"    {path}: {reason}")
        if len(summary.failures) > 20:
            lines.append(f"    ... and {len(summary.failures) - 20} more")
    return "\n".join(lines)


def print_summary(summary: BatchSummary, out_dir: Path, quiet: bool) -> None:
    """The end-of-run summary on stdout; with ``quiet`` only when something failed (stderr)."""
    if not quiet:
        print(format_summary(summary, out_dir))
    elif summary.failed:
        print(format_summary(summary, out_dir), file=sys.stderr)
