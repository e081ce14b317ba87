"""The local pool: ``workers`` spawned processes, each with one engine, documents streamed.

At most ``2 * workers`` documents are in flight; each worker reads and renders its document
page by page, so nothing is decoded up front. The parent only receives outcomes.

Per-document time limit (``doc_timeout``, ``roi batch --doc-timeout``)
----------------------------------------------------------------------

MuPDF renders a page in one C call that holds the GIL (a watchdog thread in the worker would
not even get to run) and cannot be interrupted, so the only way to stop a pathological page is
to kill its process. The parent does that:

* each worker, as it *starts* a document, puts ``(job id, pid, time.monotonic())`` on a
  queue of the pool's (a ``SimpleQueue``: written before the document starts, so a worker that
  dies in the document has always reported it). The clock is measured from there, not from
  submission, since up to half of the in-flight documents wait in the pool's queue.
  ``time.monotonic`` is the host's monotonic clock, the same in every process;
* the parent waits for outcomes with a timeout that ends at the earliest deadline of the
  documents started; when one is overdue it SIGKILLs that worker. The pool then breaks
  (``BrokenProcessPool`` on every future not yet finished); the overdue document is reported
  as failed (``DocumentTimeout``), every other unfinished document is put back to be
  submitted again, and a new pool is started. Each document thus yields exactly one outcome.

A worker that dies by itself (segfault, OOM kill) also breaks the pool: the documents it and
the other workers had started are reported as ``WorkerCrashed`` (which one caused it is not
known), those still queued are submitted again. If none had started (a crash while starting
the engine), all in flight are reported as crashed, so a pool that cannot start ends the run
instead of being rebuilt forever.

Each pool gets its own queue, so a lock held by a killed worker dies with its pool. When the
caller stops early (an error, or the generator closed), the workers of started documents are
killed rather than waited for. Ray (distributed.py) has no such limit.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.queues import SimpleQueue
from typing import TYPE_CHECKING

from extractor.batch.inputs import Document
from extractor.batch.worker import Outcome, init_process, process_in_pool
from extractor.cpus import usable_cpus

if TYPE_CHECKING:
    from extractor.parties import Parties
    from extractor.pipeline import FallbackMode

DOC_TIMEOUT_ERROR = "DocumentTimeout"
WORKER_CRASHED_ERROR = "WorkerCrashed"
_CRASHED_REASON = (
    "a worker process died while this document was in flight (crash or out of memory); "
    "it is tried again on the next run"
)
_MIN_WAIT = 0.05  # seconds; the parent's shortest sleep between deadline checks


def threads_per_worker(workers: int) -> int:
    return max(1, usable_cpus() // max(1, workers))


def timeout_reason(doc_timeout: float) -> str:
    return (
        f"took longer than {doc_timeout:g} s (--doc-timeout); a pathological page? Its worker "
        "was stopped; it is tried again on the next run"
    )


@dataclass
class _Job:
    id: int
    doc: Document


def _failure(error: str, reason: str, seconds: float = 0.0) -> Outcome:
    return {"ok": False, "error": error, "reason": reason, "pages": 0, "seconds": seconds}


def _drain(queue: SimpleQueue, started: dict[int, tuple[int, float]]) -> None:
    """Read every start report the workers have sent so far."""
    while not queue.empty():
        job_id, pid, when = queue.get()
        started[job_id] = (pid, when)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has just died by itself
        os.kill(pid, signal.SIGKILL)


def run_local(
    docs: Sequence[Document],
    template: str,
    *,
    engine: str,
    dpi: int,
    workers: int,
    fallback: FallbackMode = "auto",
    doc_timeout: float = 0.0,
    provider: str | None = None,
    parties: Parties | None = None,
    check_print: bool = False,
    learn_parties: bool = False,
) -> Iterator[tuple[Document, Outcome]]:
    """Yield ``(document, outcome)`` as documents finish, in completion order.

    ``doc_timeout`` > 0: a document still running that many seconds after its worker started
    it has its worker killed and yields a ``DocumentTimeout`` failure (see the module's doc).
    """
    pending = list(reversed(docs))  # pop() from the end keeps the input order
    threads = threads_per_worker(workers)
    ctx = mp.get_context("spawn")
    ids = itertools.count()
    while pending:
        starts: SimpleQueue = ctx.SimpleQueue()
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=init_process,
            initargs=(
                engine,
                dpi,
                threads,
                fallback,
                starts,
                provider,
                parties,
                check_print,
                learn_parties,
            ),
        )
        inflight: dict[Future[Outcome], _Job] = {}
        started: dict[int, tuple[int, float]] = {}  # job id -> (worker pid, start time)
        timed_out: set[int] = set()  # job ids whose worker the parent killed
        requeued: list[Document] = []  # unfinished through no fault of their own
        broken = any_started = False
        finished_normally = False
        try:
            while pending or inflight:
                while pending and len(inflight) < 2 * workers and not broken:
                    doc = pending.pop()
                    job = _Job(next(ids), doc)
                    task = {
                        "path": doc.key,
                        "name": doc.path,
                        "sha256": doc.sha256,
                        "template": template,
                    }
                    try:
                        inflight[pool.submit(process_in_pool, task, job.id)] = job
                    except BrokenProcessPool:
                        pending.append(doc)
                        broken = True
                if not inflight:
                    break
                timeout = None
                if doc_timeout > 0 and not timed_out:
                    timeout = max(_MIN_WAIT, _next_deadline(inflight, started, doc_timeout))
                finished, _ = wait(inflight, timeout=timeout, return_when=FIRST_COMPLETED)
                if finished and any(_broke(f) for f in finished):
                    # Every other unfinished future fails too: take them all at once.
                    broken = True
                    finished, _ = wait(inflight)
                # Read after the wait: a worker reports a start before it returns an outcome.
                _drain(starts, started)
                if not finished:
                    for future, job in inflight.items():
                        if job.id in started and not future.done():
                            pid, when = started[job.id]
                            if time.monotonic() - when >= doc_timeout:
                                _kill(pid)
                                timed_out.add(job.id)
                                broken = True
                    continue
                if broken:
                    any_started = any(job.id in started for job in inflight.values())
                for future in [f for f in inflight if f in finished]:
                    job = inflight.pop(future)
                    start = started.pop(job.id, None)
                    if not _broke(future):
                        outcome = future.result()
                    elif job.id in timed_out:
                        seconds = round(time.monotonic() - start[1], 3) if start else 0.0
                        reason = timeout_reason(doc_timeout)
                        outcome = _failure(DOC_TIMEOUT_ERROR, reason, seconds)
                    elif timed_out or (start is None and any_started):
                        requeued.append(job.doc)  # not its fault: submitted again
                        continue
                    else:
                        outcome = _failure(WORKER_CRASHED_ERROR, _CRASHED_REASON)
                    yield job.doc, outcome
            finished_normally = True
        finally:
            if not finished_normally:
                # The caller stopped early (an error, or closing the generator): do not wait
                # for a document that may render for minutes.
                _drain(starts, started)
                for future, job in inflight.items():
                    if job.id in started and not future.done():
                        _kill(started[job.id][0])
            pool.shutdown(wait=True, cancel_futures=True)
            starts.close()
        pending.extend(reversed(requeued))  # pop() takes them first, in the input order
        if not broken:
            break


def _broke(future: Future[Outcome]) -> bool:
    return isinstance(future.exception(), BrokenProcessPool)


def _next_deadline(
    inflight: dict[Future[Outcome], _Job], started: dict[int, tuple[int, float]], limit: float
) -> float:
    """Seconds until the earliest deadline of the documents started. A document that starts
    later has its deadline at least ``limit`` from now, so ``limit`` bounds the wait."""
    now = time.monotonic()
    deadlines = [started[j.id][1] + limit - now for j in inflight.values() if j.id in started]
    return min(deadlines, default=limit)
