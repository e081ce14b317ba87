"""Soak: a fixed-duration, fixed-concurrency load on the real server over loopback.

    python bench/soak.py --duration 600 --concurrency 16            # starts `python -m service`
    python bench/soak.py --duration 120 --write-docs                # figures into the docs
    python bench/soak.py --url http://127.0.0.1:8000 --duration 60  # against a running server

Every request posts one of the clean fixture scans under a unique name and checks the answer
against that document's own expected fields (read once, before the load, with ``fallback=never``),
so a response carrying another request's result is counted as ``wrong``. A 429 is the intended
back-pressure: the client waits the Retry-After (at most 0.5 s) and goes on. The worker
processes' RSS is sampled from /proc every few seconds; the report compares the first and the
last minute (or the first and last fifth of a shorter run).

The run stops by itself after ``--duration`` seconds (each request also has a timeout), and a
server it started is always terminated, workers included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DOCS_PATH = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- soak:begin -->", "<!-- soak:end -->"
REQUEST_TIMEOUT_S = 60.0


# -- the server ----------------------------------------------------------------------------------


class ServerProcess:
    """``python -m service`` on a free 127.0.0.1 port; :meth:`stop` ends it and its workers."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        full = {
            **os.environ,
            "ROI_HOST": "127.0.0.1",
            "ROI_PORT": str(self.port),
            "ROI_EXPOSE_WORKER_PIDS": "1",
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "service"],
                cwd=ROOT,
                env=full,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.worker_pids: set[int] = set()

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(base_url=self.url, timeout=2) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    code = self.proc.returncode
                    raise RuntimeError(f"server exited ({code}):\n{self.log_tail()}")
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/ready").status_code == 200:
                        self.pids()
                        return
                time.sleep(0.2)
        raise RuntimeError(f"server not ready after {timeout} s:\n{self.log_tail()}")

    def pids(self) -> list[int]:
        """The current worker pids (remembered, so :meth:`stop` can make sure they are gone)."""
        health = httpx.get(self.url + "/health", timeout=5).json()
        pids = [w["pid"] for w in health.get("worker_processes", []) if w.get("pid")]
        self.worker_pids |= set(pids)
        return pids

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for pid in self.worker_pids:  # they exit with the server; make sure of it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def running_server(env: dict[str, str], log_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(env, log_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def rss_mb(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) / 1024 if match else None


# -- documents -----------------------------------------------------------------------------------


@dataclass
class Doc:
    name: str
    data: bytes
    expected: dict[str, Any] | None = None
    """field -> value, from one request before the load (what every later answer must say)."""


def load_docs(count: int) -> list[Doc]:
    paths = sorted((ROOT / "fixtures" / "clean").glob("*.jpg"))[:count]
    if not paths:
        raise SystemExit("no fixtures under fixtures/clean")
    return [Doc(p.name, p.read_bytes()) for p in paths]


def values(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: f["value"] for k, f in p["fields"].items()} for p in payload["pages"]]


def learn_expected(url: str, docs: list[Doc]) -> None:
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT_S) as client:
        for doc in docs:
            r = client.post(
                "/extract",
                params={"template": "vat_invoice", "fallback": "never", "name": doc.name},
                content=doc.data,
            )
            r.raise_for_status()
            doc.expected = {"values": values(r.json())}


# -- the load ------------------------------------------------------------------------------------


@dataclass
class Report:
    duration_s: float = 0.0
    concurrency: int = 0
    requests: int = 0
    ok: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    rss: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)
    slowest_s: float = 0.0
    """The longest wait for any answer, errors included."""

    @property
    def errors(self) -> dict[str, int]:
        """Every outcome that is not a correct 200 nor an intended 429."""
        return {k: v for k, v in self.outcomes.items() if k not in ("200", "429")}

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        data = sorted(self.latencies)
        return data[min(len(data) - 1, round(q * (len(data) - 1)))]

    def rss_windows(self) -> dict[str, float]:
        """Total worker RSS (MB): mean over the first and over the last window."""
        window = min(60.0, self.duration_s / 5)
        first: list[float] = []
        last: list[float] = []
        times = sorted({t for samples in self.rss.values() for t, _ in samples})
        for t in times:
            total = sum(mb for samples in self.rss.values() for ts, mb in samples if ts == t)
            if t <= times[0] + window:
                first.append(total)
            if t >= times[-1] - window:
                last.append(total)
        return {
            "window_s": round(window, 1),
            "first_mb": round(statistics.mean(first), 1) if first else float("nan"),
            "last_mb": round(statistics.mean(last), 1) if last else float("nan"),
        }

    def rss_by_minute(self) -> list[float]:
        """Total worker RSS (MB), mean of each whole minute of the run (or fifth of a short one),
        so a ramp that levels off is told from a steady climb."""
        window = min(60.0, self.duration_s / 5)
        series = self.rss_series()
        if not series or window <= 0:
            return []
        means = []
        for k in range(int(series[-1][0] // window) + 1):
            inside = [mb for t, mb in series if k * window <= t < (k + 1) * window]
            if inside:
                means.append(round(statistics.mean(inside), 1))
        return means

    def rss_series(self) -> list[tuple[float, float]]:
        """(seconds, total worker RSS in MB) per sample."""
        times = sorted({t for samples in self.rss.values() for t, _ in samples})
        return [
            (t, round(sum(mb for s in self.rss.values() for ts, mb in s if ts == t), 1))
            for t in times
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "duration_s": round(self.duration_s, 1),
            "concurrency": self.concurrency,
            "requests": self.requests,
            "ok": self.ok,
            "outcomes": dict(self.outcomes),
            "errors": self.errors,
            "throughput_rps": round(self.ok / self.duration_s, 2) if self.duration_s else 0,
            "p50_s": round(self.pct(0.5), 3),
            "p99_s": round(self.pct(0.99), 3),
            "max_s": round(max(self.latencies, default=float("nan")), 3),
            "slowest_any_s": round(self.slowest_s, 3),
            "rss": self.rss_windows(),
            "rss_by_minute_mb": self.rss_by_minute(),
            "rss_series_mb": self.rss_series(),
            "wrong": self.wrong[:10],
        }


async def _client_loop(
    client: httpx.AsyncClient, docs: list[Doc], index: int, stop_at: float, report: Report
) -> None:
    n = index
    while time.monotonic() < stop_at:
        doc = docs[n % len(docs)]
        name = f"{doc.name}#{index}-{n}"
        n += 1
        start = time.monotonic()
        try:
            r = await client.post(
                "/extract",
                params={"template": "vat_invoice", "fallback": "never", "name": name},
                content=doc.data,
            )
        except httpx.TimeoutException:
            report.outcomes["client_timeout"] += 1
            report.requests += 1
            continue
        except httpx.TransportError as exc:
            report.outcomes[f"transport:{type(exc).__name__}"] += 1
            report.requests += 1
            await asyncio.sleep(0.2)
            continue
        elapsed = time.monotonic() - start
        report.slowest_s = max(report.slowest_s, elapsed)
        report.requests += 1
        if r.status_code == 429:
            report.outcomes["429"] += 1
            await asyncio.sleep(min(0.5, float(r.headers.get("retry-after", "1"))))
            continue
        if r.status_code != 200:
            try:
                kind = f"{r.status_code}:{r.json().get('error')}"
            except ValueError:
                kind = f"{r.status_code}:non-json"
            report.outcomes[kind] += 1
            continue
        body = r.json()
        assert doc.expected is not None
        if body.get("file") != name or {"values": values(body)} != doc.expected:
            report.outcomes["wrong"] += 1
            report.wrong.append(f"{name}: got file {body.get('file')!r}")
            continue
        report.outcomes["200"] += 1
        report.ok += 1
        report.latencies.append(elapsed)


async def _sample_rss(url: str, stop_at: float, started: float, report: Report) -> None:
    interval = min(5.0, max(0.5, (stop_at - started) / 20))
    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        while time.monotonic() < stop_at:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                health = (await client.get("/health")).json()
                t = round(time.monotonic() - started, 1)
                for w in health.get("worker_processes", []):
                    mb = rss_mb(w["pid"]) if w.get("pid") else None
                    if mb is not None:
                        report.rss.setdefault(w["slot"], []).append((t, mb))
            await asyncio.sleep(interval)


async def soak(url: str, docs: list[Doc], duration_s: float, concurrency: int) -> Report:
    report = Report(concurrency=concurrency)
    limits = httpx.Limits(max_connections=concurrency + 2)
    started = time.monotonic()
    stop_at = started + duration_s
    timeout = httpx.Timeout(REQUEST_TIMEOUT_S, connect=10)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        tasks = [_client_loop(client, docs, i, stop_at, report) for i in range(concurrency)]
        await asyncio.gather(*tasks, _sample_rss(url, stop_at, started, report))
    report.duration_s = time.monotonic() - started
    return report


# -- output --------------------------------------------------------------------------------------


def markdown(result: dict[str, Any], settings: dict[str, str], requested_s: float) -> str:
    rss = result["rss"]
    errors = ", ".join(f"{k}: {v}" for k, v in result["errors"].items()) or "none"
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} with `python bench/soak.py --duration "
        f"{requested_s:g} --concurrency {result['concurrency']}`: server settings "
        + ", ".join(f"`{k}={v}`" for k, v in settings.items())
        + "; the clean fixture scans, fallback `never`, each answer checked against its own "
        "document's fields and name.",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| duration | {result['duration_s']:.0f} s |",
        f"| concurrency (client connections) | {result['concurrency']} |",
        f"| requests sent | {result['requests']} |",
        f"| correct 200 | {result['ok']} |",
        f"| 429 (intended back-pressure) | {result['outcomes'].get('429', 0)} |",
        f"| errors (anything else, wrong answers included) | {errors} |",
        f"| throughput | {result['throughput_rps']} documents/s |",
        f"| latency p50 / p99 / max | {result['p50_s']} / {result['p99_s']} / "
        f"{result['max_s']} s |",
        f"| worker RSS, all workers, first {rss['window_s']:g} s | {rss['first_mb']} MB |",
        f"| worker RSS, all workers, last {rss['window_s']:g} s | {rss['last_mb']} MB |",
        f"| worker RSS, all workers, mean of each {rss['window_s']:g} s | "
        + " → ".join(f"{mb:.0f}" for mb in result["rss_by_minute_mb"])
        + " MB |",
    ]
    return "\n".join(lines)


def write_docs(text: str) -> None:
    doc = DOCS_PATH.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOCS_PATH} has no {BEGIN} ... {END} section")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOCS_PATH.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


SOAK_SETTINGS = {
    "ROI_WORKERS": "2",
    "ROI_BATCH_MAX_SIZE": "4",
    "ROI_QUEUE_SIZE": "8",
    "ROI_REQUEST_TIMEOUT_S": "30",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--url", help="a running server (default: start one on 127.0.0.1)")
    parser.add_argument("--duration", type=float, default=600, help="seconds (default 600)")
    parser.add_argument("--concurrency", type=int, default=24, help="connections (default 24)")
    parser.add_argument("--docs", type=int, default=8, help="distinct documents (default 8)")
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    parser.add_argument("--write-docs", action="store_true", help="update docs/reliability.md")
    args = parser.parse_args(argv)

    docs = load_docs(args.docs)

    def run(url: str) -> dict[str, Any]:
        learn_expected(url, docs)
        report = asyncio.run(soak(url, docs, args.duration, args.concurrency))
        return report.as_dict()

    if args.url:
        result = run(args.url)
    else:
        log = Path(os.environ.get("TMPDIR", "/tmp")) / f"roi-soak-{os.getpid()}.log"
        with running_server(SOAK_SETTINGS, log) as server:
            result = run(server.url)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.write_docs:
        settings = {k.lower(): v for k, v in SOAK_SETTINGS.items()}
        write_docs(markdown(result, settings, args.duration))
    return 0 if not result["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
