"""Load and chaos against the real server on 127.0.0.1 (bounded: about a minute and a half).

1. A short soak (bench/soak.py's client): only correct 200s and intended 429s.
2. The same load while a worker is SIGKILLed, another one hangs (the debug sleep hook) and a
   burst fills the queue: the service stays up, /ready answers every time and tells the truth,
   nothing waits past the pool's deadline, and no answer carries another request's result (each
   request sends one of four distinct scans under a unique name and is checked against it).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
REQUEST_TIMEOUT_S = 5.0
HARD_DEADLINE_S = REQUEST_TIMEOUT_S * 4 + 10  # the pool answers every request by then
SOAK_S = float(os.environ.get("ROI_CHAOS_SOAK_S", "25"))
CHAOS_S = 35.0


def _soak_module() -> Any:
    name = "roi_bench_soak"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "soak.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


soak = _soak_module()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    env = {
        "ROI_WORKERS": "2",
        "ROI_BATCH_MAX_SIZE": "2",
        "ROI_QUEUE_SIZE": "4",
        "ROI_REQUEST_TIMEOUT_S": str(REQUEST_TIMEOUT_S),
        "ROI_DEBUG": "1",
    }
    log = tmp_path_factory.mktemp("chaos") / "server.log"
    with soak.running_server(env, log) as s:
        yield s


@pytest.fixture(scope="module")
def docs(server: Any) -> list[Any]:
    docs = soak.load_docs(4)
    soak.learn_expected(server.url, docs)
    distinct = {str(d.expected) for d in docs}
    assert len(distinct) == len(docs)  # a mixed-up answer cannot pass for the right one
    return docs


def test_short_soak_only_correct_answers_and_429(server: Any, docs: list[Any]) -> None:
    report = asyncio.run(soak.soak(server.url, docs, SOAK_S, concurrency=8)).as_dict()
    assert report["ok"] >= 5, report
    assert report["errors"] == {}, report  # wrong answers count here too
    assert report["slowest_any_s"] < HARD_DEADLINE_S, report


async def _poll_ready(url: str, stop_at: float, seen: list[tuple[float, int, int, int]]) -> None:
    """(time, /ready status, workers_ready, workers) every 0.25 s, the counts from the /ready
    answer itself where it is ready (a /health asked after it may see a worker killed in
    between), -1 where it is not; /ready must always answer."""
    async with httpx.AsyncClient(base_url=url, timeout=3) as client:
        while time.monotonic() < stop_at:
            ready = await client.get("/ready")
            body = ready.json()
            counts = (body.get("workers_ready", -1), body.get("workers", -1))
            seen.append((time.monotonic(), ready.status_code, *counts))
            await asyncio.sleep(0.25)


async def _chaos(server: Any, docs: list[Any]) -> dict[str, Any]:
    started = time.monotonic()
    stop_at = started + CHAOS_S
    ready_seen: list[tuple[float, int, int, int]] = []
    load = asyncio.ensure_future(soak.soak(server.url, docs, CHAOS_S, concurrency=6))
    poll = asyncio.ensure_future(_poll_ready(server.url, stop_at + 5, ready_seen))
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=server.url, timeout=HARD_DEADLINE_S + 5) as client:
        await asyncio.sleep(4)
        workers = (await client.get("/health")).json()["worker_processes"]
        victim = max(workers, key=lambda w: w["inflight"])["pid"]
        os.kill(victim, signal.SIGKILL)
        out["killed"] = victim
        out["killed_at"] = time.monotonic()

        await asyncio.sleep(6)
        t = time.monotonic()
        hang = await client.post(
            "/extract",
            params={"template": "vat_invoice", "fallback": "never", "debug_sleep_s": "30"},
            content=docs[0].data,
        )
        out["hang"] = (hang.status_code, hang.json().get("error"), time.monotonic() - t)

        burst_names = [f"burst-{i}" for i in range(16)]
        t = time.monotonic()
        burst = await asyncio.gather(
            *(
                client.post(
                    "/extract",
                    params={"template": "vat_invoice", "fallback": "never", "name": name},
                    content=docs[i % len(docs)].data,
                )
                for i, name in enumerate(burst_names)
            )
        )
        out["burst_s"] = time.monotonic() - t
        out["burst"] = []
        for i, (name, r) in enumerate(zip(burst_names, burst, strict=True)):
            body = r.json()
            right = None
            if r.status_code == 200:
                right = (
                    body["file"] == name
                    and {"values": soak.values(body)} == docs[i % len(docs)].expected
                )
            out["burst"].append((r.status_code, body.get("error"), right))
    out["load"] = (await load).as_dict()
    await poll
    out["ready"] = ready_seen
    out["started"] = started
    return out


def test_chaos_kill_hang_and_full_queue(server: Any, docs: list[Any]) -> None:
    before = server.pids()
    result = asyncio.run(_chaos(server, docs))

    # The load itself: nothing wrong, nothing unexpected, nothing past the deadline.
    load = result["load"]
    assert load["outcomes"].get("wrong", 0) == 0, load
    unexpected = {
        k: v
        for k, v in load["outcomes"].items()
        if k not in ("200", "429", "503:worker_crashed", "504:worker_timeout")
    }
    assert unexpected == {}, load
    assert load["ok"] >= 5, load
    assert load["slowest_any_s"] < HARD_DEADLINE_S, load

    # The hung request: 504 once the worker made no progress for the timeout, not 30 s later.
    status, error, elapsed = result["hang"]
    assert (status, error) == (504, "worker_timeout"), result["hang"]
    assert elapsed < REQUEST_TIMEOUT_S + 10, result["hang"]

    # The burst: some refused at once with 429 (the queue holds 4), the rest answered right.
    codes = Counter(code for code, _, _ in result["burst"])
    assert codes[429] >= 1, result["burst"]
    assert set(codes) <= {200, 429, 503, 504}, result["burst"]
    assert all(right for code, _, right in result["burst"] if code == 200), result["burst"]

    # /ready answered every poll, said "not ready" while the killed worker was being replaced,
    # and never said ready with a worker missing.
    ready = result["ready"]
    assert len(ready) >= CHAOS_S / 2, len(ready)
    after_kill = [r for r in ready if r[0] > result["killed_at"]]
    assert any(code == 503 for _, code, _, _ in after_kill), after_kill[:20]
    for _, code, workers_ready, workers in ready:
        if code == 200:
            assert workers_ready == workers  # ready implies every worker up

    # Recovered: ready again with two fresh workers, restarts counted.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if httpx.get(server.url + "/ready", timeout=3).status_code == 200:
            break
        time.sleep(0.3)
    health = httpx.get(server.url + "/health", timeout=3).json()
    assert health["workers_ready"] == 2 and health["restarts"] >= 2, health
    after = server.pids()
    assert result["killed"] in before and result["killed"] not in after
    assert server.proc.poll() is None  # the API process never went down
    final = httpx.post(
        server.url + "/extract",
        params={"template": "vat_invoice", "fallback": "never", "name": "after"},
        content=docs[1].data,
        timeout=60,
    )
    assert final.status_code == 200 and {"values": soak.values(final.json())} == docs[1].expected
