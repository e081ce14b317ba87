"""Service throughput and latency at several concurrencies, next to the same pages in-process.

    python bench/service.py --start                    # starts `python -m service` itself
    python bench/service.py --url http://127.0.0.1:8000 # against a running server
    python bench/service.py --start --docs 'fixtures/clean/*.jpg' --requests 64

Prints a markdown table: pages/s, p50 and p99 latency per concurrency, the mean recognition batch
(requests and crops per batch, from /metrics), and the in-process baselines: one process calling
``Extractor.extract`` page after page, and N processes doing the same (N = the server's workers).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    label: str
    concurrency: int | str
    requests: int
    wall_s: float
    latencies: list[float]
    batch_requests: float | None = None
    batch_crops: float | None = None
    errors: int = 0

    @property
    def throughput(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        data = sorted(self.latencies)
        return data[min(len(data) - 1, round(q * (len(data) - 1)))]


# -- documents -----------------------------------------------------------------------------------


def load_docs(pattern: str | None, count: int) -> list[tuple[str, bytes]]:
    paths = sorted(Path(p) for p in glob.glob(pattern)) if pattern else []
    if not paths:
        paths = sorted((ROOT / "fixtures" / "clean").glob("*.jpg"))
    if not paths:
        import cv2

        from extractor.synth.generate import generate_invoice

        out = Path(tempfile.mkdtemp(prefix="roi-bench-"))
        for seed in range(1, count + 1):
            image, _ = generate_invoice(seed, "clean")
            path = out / f"vat_invoice_{seed:04d}.jpg"
            cv2.imwrite(str(path), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
            paths.append(path)
    return [(p.name, p.read_bytes()) for p in paths[:count]]


# -- in-process baselines ------------------------------------------------------------------------


def in_process(docs: list[tuple[str, bytes]], repeats: int) -> Row:
    from extractor.pipeline import Extractor

    extractor = Extractor()
    extractor.extract(docs[0][1], "vat_invoice")  # warm up
    latencies = []
    start = time.perf_counter()
    for _ in range(repeats):
        for name, data in docs:
            t = time.perf_counter()
            extractor.extract(data, "vat_invoice", name=name)
            latencies.append(time.perf_counter() - t)
    return Row("in-process, 1 process", 1, len(latencies), time.perf_counter() - start, latencies)


_worker_extractor = None


def _init(threads: int) -> None:
    global _worker_extractor
    from extractor.pipeline import Extractor

    _worker_extractor = Extractor(threads=threads)


def _one(item: tuple[str, bytes]) -> float:
    assert _worker_extractor is not None
    t = time.perf_counter()
    _worker_extractor.extract(item[1], "vat_invoice", name=item[0])
    return time.perf_counter() - t


def in_processes(docs: list[tuple[str, bytes]], repeats: int, processes: int) -> Row:
    threads = max(1, (os.cpu_count() or 1) // processes)
    ctx = mp.get_context("spawn")
    with ctx.Pool(processes, initializer=_init, initargs=(threads,)) as pool:
        pool.map(_one, docs[:processes] * 2)  # warm up every process
        start = time.perf_counter()
        latencies = pool.map(_one, docs * repeats, chunksize=1)
        wall = time.perf_counter() - start
    return Row(f"in-process, {processes} processes", processes, len(latencies), wall, latencies)


# -- the service ---------------------------------------------------------------------------------


def _histogram_means(metrics: str) -> dict[str, tuple[float, float]]:
    """name -> (sum, count) for the batch histograms."""
    out: dict[str, list[float]] = {}
    for line in metrics.splitlines():
        for name in ("roi_batch_requests", "roi_batch_crops"):
            if line.startswith(name + "_sum"):
                out.setdefault(name, [0.0, 0.0])[0] = float(line.split()[-1])
            elif line.startswith(name + "_count"):
                out.setdefault(name, [0.0, 0.0])[1] = float(line.split()[-1])
    return {k: (v[0], v[1]) for k, v in out.items()}


async def service_level(
    url: str, docs: list[tuple[str, bytes]], concurrency: int, total: int
) -> Row:
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        before = _histogram_means((await client.get("/metrics")).text)
        latencies: list[float] = []
        errors = 0
        counter = iter(range(total))

        async def runner() -> None:
            nonlocal errors
            for i in counter:
                name, data = docs[i % len(docs)]
                t = time.perf_counter()
                r = await client.post(
                    "/extract", params={"template": "vat_invoice", "name": name}, content=data
                )
                latencies.append(time.perf_counter() - t)
                if r.status_code != 200:
                    errors += 1

        start = time.perf_counter()
        await asyncio.gather(*(runner() for _ in range(concurrency)))
        wall = time.perf_counter() - start
        after = _histogram_means((await client.get("/metrics")).text)

    def mean(name: str) -> float | None:
        if name not in after:
            return None
        s0, c0 = before.get(name, (0.0, 0.0))
        s1, c1 = after[name]
        return (s1 - s0) / (c1 - c0) if c1 > c0 else None

    return Row(
        "service",
        concurrency,
        total,
        wall,
        latencies,
        mean("roi_batch_requests"),
        mean("roi_batch_crops"),
        errors,
    )


def start_server(workers: int | None, extra_env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **extra_env, "ROI_HOST": "127.0.0.1", "ROI_PORT": str(port)}
    env["ROI_LOG_LEVEL"] = "warning"
    if workers:
        env["ROI_WORKERS"] = str(workers)
    proc = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/ready", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("server not ready after 120 s")


def table(rows: list[Row]) -> str:
    lines = [
        "| run | concurrency | requests | pages/s | p50 ms | p99 ms | requests/batch | crops/batch "
        "| errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        br = f"{r.batch_requests:.2f}" if r.batch_requests is not None else "-"
        bc = f"{r.batch_crops:.1f}" if r.batch_crops is not None else "-"
        lines.append(
            f"| {r.label} | {r.concurrency} | {r.requests} | {r.throughput:.2f} "
            f"| {r.pct(0.5) * 1000:.0f} | {r.pct(0.99) * 1000:.0f} | {br} | {bc} | {r.errors} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="a running server")
    target.add_argument("--start", action="store_true", help="start `python -m service`")
    parser.add_argument("--workers", type=int, default=None, help="with --start (default: cores)")
    parser.add_argument("--batch-max-size", type=int, default=None, help="with --start")
    parser.add_argument("--docs", default=None, help="glob of documents (default fixtures/clean)")
    parser.add_argument("--distinct", type=int, default=8, help="distinct documents to cycle")
    parser.add_argument("--requests", type=int, default=48, help="requests per concurrency level")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--no-baseline", action="store_true", help="skip the in-process runs")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)

    docs = load_docs(args.docs, args.distinct)
    levels = [int(c) for c in args.concurrency.split(",")]
    proc = None
    if args.start:
        extra = {}
        if args.batch_max_size:
            extra["ROI_BATCH_MAX_SIZE"] = str(args.batch_max_size)
        proc, url = start_server(args.workers, extra)
    else:
        url = args.url.rstrip("/")
    rows: list[Row] = []
    try:
        workers = httpx.get(url + "/health", timeout=10).json()["workers"]
        asyncio.run(service_level(url, docs, 2, 4))  # warm up
        for level in levels:
            rows.append(asyncio.run(service_level(url, docs, level, max(args.requests, level))))
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    if not args.no_baseline:
        repeats = max(1, args.requests // len(docs))
        rows.append(in_process(docs, repeats))
        rows.append(in_processes(docs, repeats, workers))
    print(f"\n{len(docs)} distinct pages, server with {workers} workers, {os.cpu_count()} cores\n")
    print(table(rows))
    if args.json:
        Path(args.json).write_text(
            json.dumps([r.__dict__ | {"throughput": r.throughput} for r in rows], indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
