"""What runs in a worker (a pool process or a Ray actor): one Extractor, documents one by one.

An outcome is a plain dict, cheap to pickle and to carry through Ray Data::

    {"ok": True, "result": "<DocumentResult JSON>", "pages": 2, "seconds": 0.8}
    {"ok": False, "error": "CorruptInputError", "reason": "the PDF is ...", "pages": 0, ...}
    {"fatal": "cannot load recognition model ..."}   # the worker cannot work at all
"""

from __future__ import annotations

import hashlib
import os
import time
import traceback
from typing import TYPE_CHECKING, Any

from extractor.errors import RoiError

if TYPE_CHECKING:
    from multiprocessing.queues import SimpleQueue

    from extractor.parties import Parties
    from extractor.pipeline import FallbackMode

Task = dict[str, str]  # path (to read), name (to report), sha256, template
Outcome = dict[str, Any]


class BatchWorker:
    """Holds one :class:`~extractor.pipeline.Extractor`; the engine loads once, here."""

    def __init__(
        self,
        engine: str = "ppocr",
        dpi: int = 200,
        threads: int = 0,
        provider: str | None = None,
        fallback: FallbackMode = "auto",
        parties: Parties | None = None,
        check_print: bool = False,
        learn_parties: bool = False,
    ) -> None:
        self.fatal: str | None = None
        try:
            if threads:
                import cv2

                cv2.setNumThreads(threads)
            from extractor.pipeline import Extractor

            options: dict[str, object] = {"threads": threads} if engine == "ppocr" else {}
            if provider is not None:
                options["provider"] = provider
            self.extractor = Extractor(
                engine=engine,
                dpi=dpi,
                fallback=fallback,
                parties=parties,
                check_print=check_print,
                learn_parties=learn_parties,
                **options,
            )
        except RoiError as exc:
            self.fatal = f"cannot start the {engine} engine: {exc}"
        except Exception as exc:  # a broken install: say so once rather than per document
            self.fatal = f"cannot start the {engine} engine: {type(exc).__name__}: {exc}"

    def process(self, task: Task) -> Outcome:
        if self.fatal is not None:
            return {"fatal": self.fatal}
        start = time.perf_counter()
        try:
            data = _read(task["path"])
            if hashlib.sha256(data).hexdigest() != task["sha256"]:
                raise RoiError("the file changed while the batch ran; it will be redone next run")
            result = self.extractor.extract(data, task["template"], name=task["name"])
        except RoiError as exc:
            return _failure(type(exc).__name__, str(exc), start)
        except Exception as exc:  # a bug on one document must not stop the night's run
            last = traceback.extract_tb(exc.__traceback__)[-1]
            where = f" ({os.path.basename(last.filename)}:{last.lineno})"
            return _failure(type(exc).__name__, f"internal error: {exc}{where}", start)
        return {
            "ok": True,
            "result": result.model_dump_json(),
            "pages": len(result.pages),
            "seconds": round(time.perf_counter() - start, 3),
        }


def _read(path: str) -> bytes:
    from extractor.loading import read_source

    return read_source(path)[0]


def _failure(error: str, reason: str, start: float) -> Outcome:
    return {
        "ok": False,
        "error": error,
        "reason": reason,
        "pages": 0,
        "seconds": round(time.perf_counter() - start, 3),
    }


# -- the local pool's per-process instance -------------------------------------------------------

_WORKER: BatchWorker | None = None
_STARTS: SimpleQueue | None = None


def init_process(
    engine: str,
    dpi: int,
    threads: int,
    fallback: FallbackMode = "auto",
    starts: SimpleQueue | None = None,
    provider: str | None = None,
    parties: Parties | None = None,
    check_print: bool = False,
    learn_parties: bool = False,
) -> None:
    """Start the process's engine. ``starts``: where :func:`process_in_pool` reports each
    document as it starts it, for the parent's per-document time limit (see local.py)."""
    global _WORKER, _STARTS
    _WORKER = BatchWorker(
        engine, dpi, threads, provider, fallback, parties, check_print, learn_parties
    )
    _STARTS = starts


def process_in_pool(task: Task, job_id: int | None = None) -> Outcome:
    assert _WORKER is not None, "init_process was not run in this process"
    if _STARTS is not None and job_id is not None:
        _STARTS.put((job_id, os.getpid(), time.monotonic()))
    return _WORKER.process(task)
