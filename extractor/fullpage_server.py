"""Full-page OCR in a process of its own, shared by the processes of a pool.

The fallback's full-page OCR (:class:`~extractor.fullpage.FullPageOCR`) is what makes a worker
large: over every fixture a worker that only runs the ROI path peaks at ~440 MB, one that also
reads whole pages at ~660 MB (small on OpenVINO; ~370 and ~550 on ONNX Runtime; since pages
that are no invoice are told at a glance, ~500 MB over every fixture, ~660 still for a worker
that reads an unregistered invoice photo whole). Loaded once in
a process of its own, it costs that memory once for a pool instead of once per worker. Pages
are sent to it over a local socket (a few ms for a 2000 x 1300 page) and read one at a time, in
the order they come: a pool's fallback pages no longer run side by side, which costs throughput
where many pages take the fallback (15% over every fixture, 2 workers: docs/benchmarks.md,
*The fallback's process*). Hence the service's ``fallback_process`` is ``worker`` unless asked.

:class:`FullPageServer` (in the pool's process) starts the process and starts it again when it
dies; :class:`RemoteFullPageOCR` (in a worker) is a :class:`~extractor.fullpage.FullPageReader`
that sends it pages. The socket lives in Linux's abstract namespace (nothing on disk to clean
up; it goes with the process) and only a process given its random key may use it.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np

from extractor import memory
from extractor.errors import EngineError
from extractor.fullpage import FullPageReader, Provider, TextLine, View, get_fullpage_ocr

log = logging.getLogger("roi.fullpage")

CONNECT_WAIT_S = 60.0
"""How long a worker waits for the process to take its page (it may be loading its models,
~2 s, or starting again after it died) before the page fails (:class:`EngineError`)."""

MAX_RESTART_BACKOFF_S = 30.0


@dataclass(frozen=True, slots=True)
class Address:
    """Where the process listens and the key a client must hold."""

    name: str = field(
        default_factory=lambda: f"\0roi-fullpage-{os.getpid()}-{secrets.token_hex(6)}"
    )
    authkey: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)


def serve(
    address: Address, provider: Provider, threads: int, env: dict[str, str], owner: int
) -> None:
    """The process's entry point: listen at once (clients wait while the models load), load
    them, then answer each client on a thread of its own, one page at a time. It ends with
    ``owner``, the process that started it (a pool killed outright leaves no full-page OCR
    behind)."""
    os.environ.update(env)
    memory.limit_arenas()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group: the pool stops us
    logging.basicConfig(level=logging.INFO, format="%(asctime)s fullpage %(levelname)s %(message)s")
    threading.Thread(target=_exit_with, args=(owner,), daemon=True).start()
    with Listener(address.name, "AF_UNIX", authkey=address.authkey) as listener:
        ocr = get_fullpage_ocr(provider, threads, spin=False)  # its cores are the workers' too
        one_at_a_time = threading.Lock()
        log.info("full-page OCR ready (pid %d, %s)", os.getpid(), ocr.setting)
        while True:
            try:
                conn = listener.accept()
            except (OSError, EOFError, mp.AuthenticationError) as exc:
                log.warning("refused a connection: %s", exc)
                continue
            threading.Thread(target=_answer, args=(conn, ocr, one_at_a_time), daemon=True).start()


def _exit_with(parent: int, every_s: float = 1.0) -> None:
    """End this process once ``parent`` is gone (it is then adopted by another, or was
    before this process got this far)."""
    while os.getppid() == parent:
        time.sleep(every_s)
    log.warning("the pool's process (pid %d) is gone; stopping", parent)
    os._exit(0)


def _answer(conn: Connection, ocr: FullPageReader, lock: threading.Lock) -> None:
    """One client's pages, until it hangs up: ``("lines", image, views, keep)`` -> ``("lines",
    [...])``, ``("shows", image, starts)`` -> ``("shows", bool)``, or either -> ``("error",
    message)`` (the client raises it as an :class:`EngineError`)."""
    with conn:
        try:
            conn.send(ocr.setting)
            while True:
                kind, image, *asked = conn.recv()
                try:
                    with lock:
                        reply: tuple[str, Any] = (
                            (kind, ocr.shows(image, *asked))
                            if kind == "shows"
                            else (kind, ocr(image, *asked))
                        )
                        del image
                        memory.trim()
                except Exception as exc:  # the page's failure, not the process's
                    log.exception("a page could not be read")
                    reply = ("error", f"{type(exc).__name__}: {exc}")
                conn.send(reply)
        except (EOFError, OSError):
            return


class RemoteFullPageOCR:
    """A :class:`~extractor.fullpage.FullPageReader` whose pages are read by :func:`serve`'s
    process. Connects on first use; a connection lost mid-page (the process died) is made
    again and the page sent once more, and a page that fails twice raises
    :class:`EngineError`. One thread at a time (a worker extracts on one)."""

    def __init__(self, address: Address, wait_s: float = CONNECT_WAIT_S) -> None:
        self.address = address
        self.wait_s = wait_s
        self._conn: Connection | None = None
        self._setting = ""

    @property
    def setting(self) -> str:
        self._connected()
        return self._setting

    def __call__(
        self,
        image: np.ndarray,
        views: Sequence[View] | None = None,
        keep: Callable[[np.ndarray], bool] | None = None,
    ) -> list[TextLine]:
        listed = list(views) if views is not None else None
        lines: list[TextLine] = self._ask("lines", image, listed, keep)
        return lines

    def shows(self, image: np.ndarray, starts: Callable[[str], bool | None]) -> bool:
        return bool(self._ask("shows", image, starts))

    def _ask(self, *message: Any) -> Any:
        for attempt in range(2):
            conn = self._connected()
            try:
                conn.send(message)
                kind, value = conn.recv()
            except (EOFError, OSError) as exc:
                self.close()
                if attempt:
                    raise EngineError(
                        f"the full-page OCR process went away while reading a page ({exc})"
                    ) from exc
                continue
            if kind == "error":
                raise EngineError(f"full-page OCR failed: {value}")
            return value
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
            self._conn = None

    def _connected(self) -> Connection:
        if self._conn is not None:
            return self._conn
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                conn = Client(self.address.name, "AF_UNIX", authkey=self.address.authkey)
                self._setting = conn.recv()
            except (OSError, EOFError, mp.AuthenticationError) as exc:
                if time.monotonic() >= deadline:
                    raise EngineError(
                        f"the full-page OCR process did not answer within {self.wait_s:g} s "
                        f"({type(exc).__name__}: {exc}); its log says why"
                    ) from exc
                time.sleep(0.2)
                continue
            self._conn = conn
            return conn


class FullPageServer:
    """The process :func:`serve` runs in, owned by a pool: :meth:`start`, :meth:`check` (start
    it again if it died, backing off when it dies at start) and :meth:`close`."""

    def __init__(
        self, provider: Provider = "cpu", threads: int = 0, env: dict[str, str] | None = None
    ):
        self.address = Address()
        self.provider: Provider = provider
        self.threads = threads
        self.env = dict(env or {})
        self.restarts = 0
        self._process: BaseProcess | None = None
        self._started_at = 0.0
        self._failures = 0
        self._next_start = 0.0

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def start(self) -> None:
        process = mp.get_context("spawn").Process(
            target=serve,
            args=(self.address, self.provider, self.threads, self.env, os.getpid()),
            name="roi-fullpage",
            daemon=True,
        )
        process.start()
        self._process, self._started_at = process, time.monotonic()
        log.info("full-page OCR process started (pid %s)", process.pid)

    def check(self) -> bool:
        """Start the process again if it is gone (True when it was started now)."""
        if self._process is None or self._process.is_alive():
            return False
        now = time.monotonic()
        if not self._next_start:
            code = self._process.exitcode
            self._failures = self._failures + 1 if now - self._started_at < 10 else 0
            delay = (
                min(MAX_RESTART_BACKOFF_S, 0.5 * 2 ** (self._failures - 1)) if self._failures else 0
            )
            log.warning("full-page OCR process died (exit code %s); starting it again", code)
            self._next_start = now + delay
        if now < self._next_start:
            return False
        self._next_start = 0.0
        self.restarts += 1
        self.start()
        return True

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)
