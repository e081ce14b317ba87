"""A pool of worker processes behind a bounded queue, driven from the API's event loop.

Each worker (:mod:`service.worker`) loads the engine once and extracts batches of requests.
The pool keeps up to ``batch_max_size`` requests inside each worker so that it can merge them
into one recognition batch, and the rest in a bounded queue here.

Faults:

- a worker that dies is noticed at once (its pipe closes) and replaced; requests it had not
  started go to another worker; requests in the batch it was running are retried once, and
  answered with a retryable 503 if they were already retried;
- a worker that makes no progress on a batch for ``request_timeout_s`` is killed and replaced;
  the requests of that batch are answered 504 (a document that hangs a worker is not retried);
- every request also has a hard deadline, so nothing ever waits forever.

Nothing here blocks the event loop: pipes are read and written by two threads per worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from extractor.fullpage_server import CONNECT_WAIT_S, FullPageServer
from service.settings import Settings
from service.worker import JobSpec, WorkerConfig, worker_main

log = logging.getLogger("roi.service.pool")

MONITOR_INTERVAL_S = 0.2
MAX_RESTART_BACKOFF_S = 30.0


class PoolError(Exception):
    """A request the pool cannot serve; carries the HTTP status and a retry hint."""

    def __init__(
        self, status: int, error: str, detail: str, retry_after: int | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.retry_after = retry_after


@dataclass(eq=False)
class _Job:
    spec: JobSpec
    future: asyncio.Future[tuple[int, dict[str, Any]]]
    crashes: int = 0
    """How many times a worker died while this job was in its running batch."""
    requeues: int = 0


@dataclass(eq=False)
class _Worker:
    slot: int
    process: BaseProcess
    conn: Connection
    device: str
    started_at: float
    outbox: queue.SimpleQueue[tuple[Any, ...] | None] = field(default_factory=queue.SimpleQueue)
    pid: int | None = None
    ready: bool = False
    gone: bool = False
    inflight: dict[int, _Job] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    last_progress: float = 0.0
    timed_out: set[int] = field(default_factory=set)
    dead_since: float | None = None


BatchCallback = Callable[[dict[str, Any]], None]


class WorkerPool:
    """N worker processes; ``await submit(spec)`` -> ``(status, payload)``."""

    def __init__(
        self,
        settings: Settings,
        on_batch: BatchCallback | None = None,
        on_restart: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.size = settings.worker_count
        # One more than a batch, so that a worker never waits on a round trip to us.
        self.max_inflight = settings.batch_max_size + 1
        self._ctx = mp.get_context("spawn")
        self._workers: dict[int, _Worker] = {}
        self._pending: deque[_Job] = deque()
        self._ids = itertools.count(1)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._closed = False
        self._on_batch = on_batch
        self._on_restart = on_restart
        self._failures: dict[int, int] = {}  # slot -> consecutive start failures
        self.load_errors: dict[int, str] = {}
        """Slot -> why its last worker could not load its models (cleared when one does)."""
        self.restarts = 0
        self._replacing: set[asyncio.Future[None]] = set()
        self.fullpage: FullPageServer | None = None
        """The full-page OCR process the workers share for the fallback (``fallback_process``),
        or None where each worker loads its own."""
        if settings.fallback_process == "shared":
            threads = settings.fallback_threads
            self.fullpage = FullPageServer("cpu", threads, _thread_env(threads, settings))

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every worker (models load in the background; see :attr:`ready`)."""
        self._loop = asyncio.get_running_loop()
        if self.fullpage is not None:  # first: it loads its models while the workers load theirs
            await asyncio.to_thread(self.fullpage.start)
        await asyncio.gather(*(self._start_worker(slot) for slot in range(self.size)))
        self._tasks = [
            asyncio.create_task(self._dispatch_loop(), name="roi-dispatch"),
            asyncio.create_task(self._monitor_loop(), name="roi-monitor"),
        ]

    async def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready:
                return True
            await asyncio.sleep(0.1)
        return self.ready

    async def close(self) -> None:
        """Stop taking requests, finish queued and in-flight ones, then stop the workers."""
        if self._closed:
            return
        self._closing = True
        deadline = time.monotonic() + self.settings.shutdown_timeout_s
        while (self._pending or self.inflight) and time.monotonic() < deadline:
            self._wake.set()
            await asyncio.sleep(0.05)
        self._closed = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for job in list(self._pending):
            self._fail(job, 503, "shutting_down", "the service is shutting down; retry", True)
        self._pending.clear()
        workers = list(self._workers.values())
        for worker in workers:
            worker.outbox.put(("stop",))
        await asyncio.gather(*(asyncio.to_thread(self._reap, w, 10.0) for w in workers))
        for worker in workers:
            for job in worker.inflight.values():
                self._fail(job, 503, "shutting_down", "the service is shutting down; retry", True)
            worker.inflight.clear()
        self._workers.clear()
        if self.fullpage is not None:
            await asyncio.to_thread(self.fullpage.close)
        log.info("worker pool stopped")

    @staticmethod
    def _reap(worker: _Worker, timeout: float) -> None:
        worker.process.join(timeout)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(5)
        worker.outbox.put(None)
        with contextlib.suppress(OSError):
            worker.conn.close()

    # -- state --------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        live = [w for w in self._workers.values() if not w.gone]
        return not self._closing and len(live) == self.size and all(w.ready for w in live)

    @property
    def ready_count(self) -> int:
        return sum(1 for w in self._workers.values() if w.ready and not w.gone)

    @property
    def queue_depth(self) -> int:
        return len(self._pending)

    @property
    def inflight(self) -> int:
        return sum(len(w.inflight) for w in self._workers.values())

    def snapshot(self) -> list[dict[str, Any]]:
        return [
            {
                "slot": w.slot,
                "pid": w.pid,
                "device": w.device,
                "ready": w.ready and not w.gone,
                "inflight": len(w.inflight),
            }
            for w in sorted(self._workers.values(), key=lambda w: w.slot)
        ]

    # -- requests -----------------------------------------------------------------------------

    def new_id(self) -> int:
        return next(self._ids)

    async def submit(self, spec: JobSpec, deadline_s: float | None = None) -> tuple[int, Any]:
        """Queue one request and wait for its ``(status, payload)``.

        Raises :class:`PoolError` when it cannot be queued (closing, not ready, queue full) or
        its deadline passes.
        """
        retry = self.settings.retry_after_s
        if self._closing:
            raise PoolError(503, "shutting_down", "the service is shutting down; retry", retry)
        if self.ready_count == 0:
            if len(self.load_errors) == self.size:  # a setup error: retrying will not mend it
                raise PoolError(
                    503,
                    "workers_failing",
                    "no worker could load its models (GET /health says why); the service "
                    "keeps restarting them",
                    retry,
                )
            raise PoolError(
                503, "not_ready", "no worker is ready yet (models are loading); retry", retry
            )
        if len(self._pending) >= self.settings.queue_size:
            raise PoolError(
                429,
                "queue_full",
                f"the service is busy ({len(self._pending)} requests waiting); retry later",
                retry,
            )
        assert self._loop is not None
        job = _Job(spec, self._loop.create_future())
        self._pending.append(job)
        self._wake.set()
        if deadline_s is None:
            deadline_s = self.settings.request_timeout_s * 4 + 10
        try:
            return await asyncio.wait_for(asyncio.shield(job.future), deadline_s)
        except TimeoutError:
            raise PoolError(
                504,
                "timeout",
                f"no result within {deadline_s:.0f} s; the request was abandoned",
            ) from None
        finally:
            if not job.future.done():
                job.future.cancel()  # client gone or deadline: workers skip or discard it

    # -- workers ------------------------------------------------------------------------------

    def _config(self, slot: int) -> tuple[WorkerConfig, str]:
        s = self.settings
        device = s.device_for(slot)
        env = _thread_env(s.worker_threads, s)
        provider = "cpu"
        if device.startswith("cuda:"):
            env["CUDA_VISIBLE_DEVICES"] = device.split(":", 1)[1]
            provider = s.gpu_provider
        config = WorkerConfig(
            slot=slot,
            engine=s.engine,
            provider=provider,
            threads=s.worker_threads,
            max_pages=s.max_pages,
            batch_max_size=s.batch_max_size,
            batch_max_wait_ms=s.batch_max_wait_ms,
            debug=s.debug,
            env=env,
            parties=str(s.parties) if s.parties is not None else None,
            check_print=s.check_print,
            learn_parties=s.learn_parties,
            trt_cache_dir=str(s.trt_cache_dir) if s.trt_cache_dir is not None else None,
            fullpage=self.fullpage.address if self.fullpage is not None else None,
            # a page gives up on it before the worker would be taken for hung and killed
            fullpage_wait_s=min(CONNECT_WAIT_S, s.request_timeout_s / 2),
        )
        return config, device

    def _spawn(self, slot: int) -> _Worker:
        config, device = self._config(slot)
        parent, child = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(
            target=worker_main, args=(child, config), name=f"roi-worker-{slot}", daemon=True
        )
        process.start()
        child.close()  # so that the worker's death closes the pipe on our side
        return _Worker(slot, process, parent, device, time.monotonic(), pid=process.pid)

    async def _start_worker(self, slot: int) -> None:
        worker = await asyncio.to_thread(self._spawn, slot)
        if self._closed:
            await asyncio.to_thread(self._reap, worker, 0)
            return
        self._workers[slot] = worker
        threading.Thread(
            target=self._reader, args=(worker,), name=f"roi-read-{slot}", daemon=True
        ).start()
        threading.Thread(
            target=self._writer, args=(worker,), name=f"roi-write-{slot}", daemon=True
        ).start()
        log.info("worker %d started (pid %s, %s)", slot, worker.pid, worker.device)

    def _reader(self, worker: _Worker) -> None:
        assert self._loop is not None
        loop = self._loop
        try:
            while True:
                message = worker.conn.recv()
                loop.call_soon_threadsafe(self._on_message, worker, message)
        except (EOFError, OSError):
            pass
        except Exception:  # an unpicklable message: treat the worker as broken
            log.exception("worker %d sent an unreadable message", worker.slot)
        with contextlib.suppress(RuntimeError):  # loop closed at shutdown
            loop.call_soon_threadsafe(self._on_gone, worker, "its pipe closed")

    @staticmethod
    def _writer(worker: _Worker) -> None:
        while True:
            message = worker.outbox.get()
            if message is None:
                return
            try:
                worker.conn.send(message)
            except (OSError, ValueError):
                return  # the reader notices the death

    def _on_message(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        kind = message[0]
        now = time.monotonic()
        if kind == "done":
            _, job_id, status, payload = message
            job = worker.inflight.pop(job_id, None)
            worker.running.discard(job_id)
            worker.last_progress = now
            if job is not None and not job.future.done():
                job.future.set_result((status, payload))
            self._wake.set()
        elif kind == "beat":
            worker.last_progress = now
        elif kind == "busy":
            worker.running = set(message[1])
            worker.last_progress = now
        elif kind == "batch":
            if self._on_batch is not None:
                self._on_batch(message[1])
        elif kind == "ready":
            worker.ready = True
            worker.pid = message[1]
            self._failures.pop(worker.slot, None)
            self.load_errors.pop(worker.slot, None)
            log.info(
                "worker %d ready (pid %s) after %.1f s",
                worker.slot,
                worker.pid,
                now - worker.started_at,
            )
            self._wake.set()
        elif kind == "failed":
            self.load_errors[worker.slot] = message[1]
            log.error("worker %d failed to load: %s", worker.slot, message[1])

    def _on_gone(self, worker: _Worker, reason: str) -> None:
        if worker.gone:
            return
        worker.gone = True
        worker.outbox.put(None)
        expected = self._closed
        if not expected:
            log.warning(
                "worker %d (pid %s) is gone: %s (exit code %s); %d request(s) in it",
                worker.slot,
                worker.pid,
                reason,
                worker.process.exitcode,
                len(worker.inflight),
            )
        retry = self.settings.retry_after_s
        requeue: list[_Job] = []
        for job_id, job in worker.inflight.items():
            if job.future.done():
                continue
            if job_id in worker.timed_out:
                self._fail(
                    job,
                    504,
                    "worker_timeout",
                    f"the worker made no progress for {self.settings.request_timeout_s:g} s "
                    "and was restarted",
                    None,
                )
            elif job_id in worker.running:
                job.crashes += 1
                if job.crashes >= 2:
                    self._fail(
                        job, 503, "worker_crashed", "the worker died while extracting; retry", retry
                    )
                else:
                    requeue.append(job)
            elif job.requeues >= 3:
                self._fail(job, 503, "worker_crashed", "workers kept dying; retry", retry)
            else:
                job.requeues += 1
                requeue.append(job)
        worker.inflight.clear()
        worker.running.clear()
        self._pending.extendleft(reversed(requeue))  # retried requests go first
        if self._closed:
            return
        if self._workers.get(worker.slot) is worker:
            task = asyncio.ensure_future(self._replace(worker))
            self._replacing.add(task)
            task.add_done_callback(self._replacing.discard)
        self._wake.set()

    async def _replace(self, worker: _Worker) -> None:
        await asyncio.to_thread(self._reap, worker, 5.0)
        if worker.ready:
            self._failures.pop(worker.slot, None)
        else:
            self._failures[worker.slot] = self._failures.get(worker.slot, 0) + 1
        failures = self._failures.get(worker.slot, 0)
        if failures:
            delay = min(MAX_RESTART_BACKOFF_S, 0.5 * 2 ** (failures - 1))
            log.warning("worker %d failed at start; restarting in %.1f s", worker.slot, delay)
            await asyncio.sleep(delay)
        if self._closed or self._workers.get(worker.slot) is not worker:
            return
        self.restarts += 1
        if self._on_restart is not None:
            self._on_restart()
        await self._start_worker(worker.slot)

    def kill(self, worker: _Worker, reason: str) -> None:
        log.error("killing worker %d (pid %s): %s", worker.slot, worker.pid, reason)
        with contextlib.suppress(ProcessLookupError, TypeError):
            os.kill(worker.process.pid, signal.SIGKILL)  # type: ignore[arg-type]

    # -- loops --------------------------------------------------------------------------------

    def _pick(self) -> _Worker | None:
        best: _Worker | None = None
        for worker in self._workers.values():
            if not worker.ready or worker.gone or len(worker.inflight) >= self.max_inflight:
                continue
            if best is None or len(worker.inflight) < len(best.inflight):
                best = worker
        return best

    async def _dispatch_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                worker = self._pick()
                if worker is None:
                    break
                job = self._pending.popleft()
                if job.future.done():
                    continue
                worker.inflight[job.spec.id] = job
                if not worker.running:
                    worker.last_progress = time.monotonic()
                worker.outbox.put(("job", job.spec))

    async def _monitor_loop(self) -> None:
        timeout = self.settings.request_timeout_s
        while True:
            await asyncio.sleep(MONITOR_INTERVAL_S)
            if self.fullpage is not None and not self.fullpage.alive:
                await asyncio.to_thread(self.fullpage.check)  # started again (backing off)
            now = time.monotonic()
            for worker in list(self._workers.values()):
                if worker.gone:
                    continue
                if not worker.process.is_alive():
                    # The reader normally reports the death first, after reading every result
                    # the worker sent before dying; this is only a backstop.
                    worker.dead_since = worker.dead_since or now
                    if now - worker.dead_since > 2.0:
                        self._on_gone(worker, "the process exited")
                elif worker.running and now - worker.last_progress > timeout:
                    worker.timed_out = set(worker.running)
                    self.kill(worker, f"no progress for {now - worker.last_progress:.1f} s")
            # Requests that waited out their deadline in the queue are dropped from it.
            if self._pending and any(j.future.done() for j in self._pending):
                self._pending = deque(j for j in self._pending if not j.future.done())

    def _fail(
        self, job: _Job, status: int, error: str, detail: str, retry_after: int | bool | None
    ) -> None:
        if job.future.done():
            return
        if retry_after is True:
            retry_after = self.settings.retry_after_s
        job.future.set_exception(PoolError(status, error, detail, retry_after or None))


def _thread_env(threads: int, settings: Settings) -> dict[str, str]:
    """The environment a pool's process starts with: its thread counts, the CPU runtime."""
    return {
        "OMP_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "ROI_CPU_RUNTIME": settings.cpu_runtime,  # read by a worker's recogniser
    }
