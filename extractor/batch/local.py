"""The local pool: ``workers`` spawned processes, each with one engine, documents streamed.

At most ``2 * workers`` documents are in flight; each worker reads and renders its document
page by page, so nothing is decoded up front. The parent only receives outcomes.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from extractor.batch.inputs import Document
from extractor.batch.worker import Outcome, init_process, process_in_pool

if TYPE_CHECKING:
    from extractor.pipeline import FallbackMode


def threads_per_worker(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def run_local(
    docs: Sequence[Document],
    template: str,
    *,
    engine: str,
    dpi: int,
    workers: int,
    fallback: FallbackMode = "auto",
) -> Iterator[tuple[Document, Outcome]]:
    """Yield ``(document, outcome)`` as documents finish, in completion order."""
    pending = list(reversed(docs))  # pop() from the end keeps the input order
    threads = threads_per_worker(workers)
    ctx = mp.get_context("spawn")
    while pending:
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=init_process,
            initargs=(engine, dpi, threads, fallback),
        )
        inflight: dict[Future[Outcome], Document] = {}
        broken = False
        try:
            while pending or inflight:
                while pending and len(inflight) < 2 * workers and not broken:
                    doc = pending.pop()
                    task = {
                        "path": doc.key,
                        "name": doc.path,
                        "sha256": doc.sha256,
                        "template": template,
                    }
                    try:
                        inflight[pool.submit(process_in_pool, task)] = doc
                    except BrokenProcessPool:
                        pending.append(doc)
                        broken = True
                if not inflight:
                    break
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for future in finished:
                    doc = inflight.pop(future)
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        broken = True
                        outcome = {
                            "ok": False,
                            "error": "WorkerCrashed",
                            "reason": "a worker process died while this document was in flight "
                            "(crash or out of memory); it is tried again on the next run",
                            "pages": 0,
                            "seconds": 0.0,
                        }
                    yield doc, outcome
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if not broken:
            break
