"""The worker process: loads the engine once, then extracts batches of requests.

Runs in a process started with the ``spawn`` method. It talks to the API process over one
duplex pipe:

parent -> worker: ``("job", JobSpec)`` and ``("stop",)``.
worker -> parent: ``("ready", pid)`` once models are loaded, ``("failed", message)`` when they
cannot be, ``("busy", [job ids])`` when a batch starts, ``("beat",)`` after each page,
``("done", job_id, status, payload)`` per request and ``("batch", stats)`` per batch.

A batch is up to ``batch_max_size`` requests, collected for up to ``batch_max_wait_ms`` after the
first one arrives: every page of every request is decoded, registered and cropped
(``Extractor.prepare``), then ONE ``engine.recognize`` call reads all the crops of all those pages,
then each page is validated (``Extractor.finish``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Literal

from extractor import memory

if TYPE_CHECKING:
    from extractor.fullpage_server import Address

log = logging.getLogger("roi.service.worker")


@dataclass(slots=True)
class JobSpec:
    """What crosses to a worker for one request: the document's bytes (once) and options."""

    id: int
    data: bytes
    template: str
    name: str
    pages: list[int] | None = None
    """1-based page numbers; None means all."""
    engine: str = "ppocr"
    fallback: Literal["auto", "never", "always"] = "auto"
    debug_sleep_s: float = 0.0


@dataclass(slots=True)
class WorkerConfig:
    slot: int
    engine: str
    provider: str  # cpu | cuda | tensorrt
    threads: int
    max_pages: int
    batch_max_size: int
    batch_max_wait_ms: float
    debug: bool = False
    env: dict[str, str] = field(default_factory=dict)
    parties: str | None = None  # the party registry's CSV
    check_print: bool = False  # read the print of the fields the QR code states too
    learn_parties: bool = False  # register the parties read in two documents (Extractor)
    trt_cache_dir: str | None = None  # TensorRT engines (None: the engine's default)
    fullpage: Address | None = None
    """Where the pool's full-page OCR process listens (the fallback's pages are sent there);
    None: the worker loads its own on the first page that needs it."""
    fullpage_wait_s: float = 60.0
    """How long a page waits for that process to take it (it may be starting again)."""


def error_payload(exc: BaseException) -> tuple[int, dict[str, str]]:
    """HTTP status and JSON body for an exception raised while extracting one request."""
    from extractor.errors import (
        CorruptInputError,
        EngineError,
        InputError,
        TemplateError,
        TemplateNotFoundError,
        TooLargeInputError,
        UnsupportedInputError,
    )

    if isinstance(exc, TemplateNotFoundError):
        return 404, {"error": "unknown_template", "detail": str(exc)}
    if isinstance(exc, TemplateError):  # a template file on the server is broken
        return 500, {"error": "template_error", "detail": f"the template cannot be loaded: {exc}"}
    if isinstance(exc, UnsupportedInputError):
        return 415, {"error": "unsupported_media_type", "detail": str(exc)}
    if isinstance(exc, TooLargeInputError):
        return 422, {"error": "document_too_large", "detail": str(exc)}
    if isinstance(exc, CorruptInputError):
        return 422, {"error": "corrupt_document", "detail": str(exc)}
    if isinstance(exc, InputError):
        return 422, {"error": "unreadable_document", "detail": str(exc)}
    if isinstance(exc, EngineError):
        return 500, {"error": "engine_error", "detail": str(exc)}
    return 500, {
        "error": "internal_error",
        "detail": f"extraction failed unexpectedly ({type(exc).__name__}); see the server log",
    }


def worker_main(conn: Connection, config: WorkerConfig) -> None:
    """Entry point of a worker process."""
    os.environ.update(config.env)
    memory.limit_arenas()
    # Ctrl-C reaches the whole process group: the API process drains and stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s worker[{config.slot}] %(levelname)s %(message)s"
    )
    try:
        runner = _Runner(conn, config)
    except Exception as exc:
        log.error("worker %d cannot start: %s", config.slot, exc)
        _send(conn, ("failed", f"{type(exc).__name__}: {exc}"))
        return
    _send(conn, ("ready", os.getpid()))
    runner.serve()


def _send(conn: Connection, message: tuple[Any, ...]) -> None:
    # OSError: the API process is gone; we exit at the next receive.
    with contextlib.suppress(OSError, ValueError):
        conn.send(message)


@dataclass(slots=True)
class _JobState:
    spec: JobSpec
    pages: list[Any] = field(default_factory=list)  # PageResult | PreparedPage, in page order
    error: tuple[int, dict[str, str]] | None = None


class _Runner:
    def __init__(self, conn: Connection, config: WorkerConfig) -> None:
        import cv2

        from extractor.pipeline import Extractor

        cv2.setNumThreads(config.threads)
        options: dict[str, object] = {}
        if config.engine == "ppocr":
            options = {"provider": config.provider, "threads": config.threads}
            if config.provider == "tensorrt" and config.trt_cache_dir:
                options["trt_cache_dir"] = config.trt_cache_dir
        fullpage = None
        if config.fullpage is not None:
            from extractor.fullpage_server import RemoteFullPageOCR

            fullpage = RemoteFullPageOCR(config.fullpage, config.fullpage_wait_s)
        self.extractor = Extractor(
            engine=config.engine,
            parties=config.parties,
            check_print=config.check_print,
            learn_parties=config.learn_parties,
            fullpage=fullpage,
            **options,
        )
        self.conn = conn
        self.config = config
        self._warm_up()

    def _warm_up(self) -> None:
        """One recognition so the first request does not pay for lazy initialisation, and on
        a GPU every input shape the reader pads to (each costs a plan of ~2 s the first time)."""
        import numpy as np

        from extractor.engines.ctc import CTCLineReader

        crop = np.full((32, 96, 3), 255, dtype=np.uint8)
        crop[12:20, 10:80] = 0
        self.extractor.engine.recognize([crop], [None])
        if isinstance(self.extractor.engine, CTCLineReader):
            self.extractor.engine.warm_up()

    def serve(self) -> None:
        inbox: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        threading.Thread(target=self._receive, args=(inbox,), daemon=True).start()
        wait_s = self.config.batch_max_wait_ms / 1000
        stopping = False
        while not stopping:
            message = inbox.get()
            if message is None or message[0] == "stop":
                break
            batch: list[JobSpec] = [message[1]]
            deadline = time.monotonic() + wait_s
            while len(batch) < self.config.batch_max_size:
                try:
                    remaining = deadline - time.monotonic()
                    message = inbox.get(timeout=remaining) if remaining > 0 else inbox.get_nowait()
                except queue.Empty:
                    break
                if message is None or message[0] == "stop":
                    stopping = True
                    break
                batch.append(message[1])
            self.run_batch(batch)

    def _receive(self, inbox: queue.SimpleQueue[tuple[Any, ...] | None]) -> None:
        try:
            while True:
                inbox.put(self.conn.recv())
        except (EOFError, OSError):
            inbox.put(None)

    # -- one batch ----------------------------------------------------------------------------

    def run_batch(self, batch: list[JobSpec]) -> None:
        from extractor.pipeline import PreparedPage

        _send(self.conn, ("busy", [job.id for job in batch]))
        states = [self._prepare(job) for job in batch]
        prepared = [
            p for s in states if s.error is None for p in s.pages if isinstance(p, PreparedPage)
        ]
        n_crops = sum(len(p.crops) for p in prepared)
        recognize_ms = 0.0
        reads: list[list[Any]] = [[] for _ in prepared]  # each prepared page's readings
        try:
            if n_crops:
                start = time.perf_counter()
                reads = self.extractor.recognize(prepared)
                recognize_ms = (time.perf_counter() - start) * 1000
        except Exception as exc:
            log.error("recognition failed for a batch of %d:\n%s", len(batch), _tb(exc))
            failure = error_payload(exc)
            for state in states:
                if state.error is None:
                    state.error = failure
        else:
            self._finish(states, reads, recognize_ms, n_crops)
        _send(self.conn, ("beat",))
        for state in states:
            if state.error is not None:
                status, payload = state.error
                _send(self.conn, ("done", state.spec.id, status, payload))
            else:
                _send(self.conn, ("done", state.spec.id, 200, self._document(state)))
        pages = sum(len(s.pages) for s in states if s.error is None)
        stats = {
            "requests": len(batch),
            "pages": pages,
            "crops": n_crops,
            "recognize_ms": round(recognize_ms, 2),
        }
        _send(self.conn, ("batch", stats))
        memory.trim()

    def _prepare(self, job: JobSpec) -> _JobState:
        from extractor.loading import iter_pages
        from extractor.pipeline import PreparedPage
        from extractor.result import Timings
        from extractor.templates import AUTO

        state = _JobState(job)
        if job.debug_sleep_s and self.config.debug:
            time.sleep(job.debug_sleep_s)  # a stand-in for a page that hangs the worker
        try:
            if job.engine != self.extractor.engine.name:
                from extractor.errors import EngineError

                raise EngineError(f"engine {job.engine!r} is not loaded in this worker")
            template = (  # auto: picked page by page
                None if job.template == AUTO else self.extractor.templates.get(job.template)
            )
            wanted = None if job.pages is None else {p - 1 for p in job.pages}
            stream = iter_pages(
                job.data, dpi=self.extractor.dpi, pages=wanted, max_pages=self.config.max_pages
            )
            while True:
                timings = Timings()
                start = time.perf_counter()
                page = next(stream, None)
                timings.decode = round((time.perf_counter() - start) * 1000, 2)
                if page is None:
                    break
                prepared = self.extractor.prepare(page, template, timings, fallback=job.fallback)
                state.pages.append(prepared)
                if isinstance(prepared, PreparedPage):  # the page's other forms, read with it
                    state.pages.extend(prepared.others)
                del page
                _send(self.conn, ("beat",))
            if wanted is not None:
                seen = {p.index if isinstance(p, PreparedPage) else p.page - 1 for p in state.pages}
                missing = sorted(i + 1 for i in wanted - seen)
                if missing:
                    state.error = (
                        422,
                        {
                            "error": "page_out_of_range",
                            "detail": "the document has no page "
                            + ", ".join(str(m) for m in missing),
                        },
                    )
        except Exception as exc:
            state.error = error_payload(exc)
            if state.error[0] >= 500:
                log.error("request %d failed:\n%s", job.id, _tb(exc))
        job.data = b""  # free the document now; only crops are kept
        return state

    def _finish(
        self, states: list[_JobState], reads: list[list[Any]], recognize_ms: float, n_crops: int
    ) -> None:
        """Each prepared page finished with its readings (``reads``: one list per prepared page,
        in the order :meth:`run_batch` gathered them)."""
        from extractor.pipeline import PreparedPage

        by_page = iter(reads)
        for state in states:
            if state.error is not None:
                continue
            for i, page in enumerate(state.pages):
                if not isinstance(page, PreparedPage):
                    continue
                page_reads = next(by_page)
                if state.error is not None:  # an earlier page of the request failed
                    continue
                try:
                    # The batch's recognition time, shared out by crop count.
                    share = recognize_ms * len(page.crops) / max(n_crops, 1)
                    page.timings.recognize = round(share, 2)
                    state.pages[i] = self.extractor.finish(page, page_reads)
                except Exception as exc:
                    log.error("request %d failed in validation:\n%s", state.spec.id, _tb(exc))
                    state.error = error_payload(exc)

    def _document(self, state: _JobState) -> dict[str, Any]:
        from extractor.result import DocumentResult

        result = DocumentResult(
            file=state.spec.name,
            template=state.spec.template,
            engine=self.extractor.engine.name,
            pages=state.pages,
        )
        document = result.model_dump(mode="json")
        self.extractor.learn(document)
        return document


def _tb(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
