"""The service's fallback in one shared process against one in each worker, side by side.

    python -m bench.fallback_process                     # every vat_invoice fixture, 2 workers
    python -m bench.fallback_process --workers 2 --docs 'fixtures/heavy/*.jpg' --rounds 2

For each ``fallback_process`` setting (``shared``, ``worker``), starts `python -m service`,
sends every document (``--concurrency`` at a time, ``--rounds`` times), checks that both
settings answer the same fields, and prints a markdown table: documents/s, p50 / p99 latency,
each process's peak RSS (VmHWM: the workers' largest, and the shared process's) and the
pool's total (every worker and the shared process together).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import signal
import time
from pathlib import Path

import httpx

from bench.service import Row, start_server

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DOCS = "fixtures/*/vat_invoice_*.*"
"""The vat_invoice fixtures, every level (digital ones have their own template)."""
DOC_SUFFIXES = {".jpg", ".png", ".pdf", ".tif"}


def documents(pattern: str) -> list[tuple[str, bytes]]:
    paths = sorted(
        p for p in map(Path, glob.glob(pattern, recursive=True)) if p.suffix in DOC_SUFFIXES
    )
    return [(str(p.relative_to(ROOT) if p.is_absolute() else p), p.read_bytes()) for p in paths]


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def send_all(
    url: str, docs: list[tuple[str, bytes]], concurrency: int, rounds: int
) -> tuple[Row, dict[str, object]]:
    """Every document ``rounds`` times; the row and each document's answer (fields' values)."""
    answers: dict[str, object] = {}
    latencies: list[float] = []
    errors = 0
    queue = [d for _ in range(rounds) for d in docs]
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:

        async def runner() -> None:
            nonlocal errors
            while queue:
                name, data = queue.pop()
                start = time.perf_counter()
                r = await client.post(
                    "/extract", params={"template": "vat_invoice", "name": name}, content=data
                )
                latencies.append(time.perf_counter() - start)
                if r.status_code != 200:
                    errors += 1
                    answers[name] = r.status_code
                    continue
                answers[name] = [
                    {k: f["value"] for k, f in page["fields"].items()} for page in r.json()["pages"]
                ]

        start = time.perf_counter()
        await asyncio.gather(*(runner() for _ in range(concurrency)))
        wall = time.perf_counter() - start
    row = Row("service", concurrency, len(docs) * rounds, wall, latencies, errors=errors)
    return row, answers


Measured = tuple[Row, dict[str, object], list[float], float]
"""The row, each document's answer, the workers' peaks and the shared process's (MB; 0: none)."""


def measure(
    mode: str, workers: int, docs: list[tuple[str, bytes]], args: argparse.Namespace
) -> Measured:
    """The service started with ``fallback_process`` ``mode``, sent every document."""
    proc, url = start_server(workers, {"ROI_FALLBACK_PROCESS": mode, "ROI_EXPOSE_WORKER_PIDS": "1"})
    try:
        row, answers = asyncio.run(send_all(url, docs, args.concurrency, args.rounds))
        health = httpx.get(url + "/health", timeout=10).json()
        worker_peaks = [peak_mb(w["pid"]) for w in health["worker_processes"]]
        shared = health.get("fallback_process", {}).get("pid")
        shared_peak = peak_mb(shared) if shared else 0.0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    return row, answers, worker_peaks, shared_peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--docs", default=DEFAULT_DOCS, help="glob, relative to the repo root")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    docs = documents(args.docs)
    if not docs:
        raise SystemExit(f"no documents match {args.docs}")
    print(f"{len(docs)} documents x {args.rounds}, {args.workers} workers, "
          f"{args.concurrency} requests at a time, {os.cpu_count()} cores")  # fmt: skip
    results = {mode: measure(mode, args.workers, docs, args) for mode in ("shared", "worker")}
    (_, shared_answers, _, _), (_, own_answers, _, _) = results["shared"], results["worker"]
    differ = sorted(n for n in own_answers if shared_answers.get(n) != own_answers[n])
    print()
    print("| fallback_process | documents/s | p50 / p99 s | worker peak RSS, largest | "
          "shared process peak | pool's processes, total | errors |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    figures = {}
    for mode, (row, _, worker_peaks, shared_peak) in results.items():
        total = sum(worker_peaks) + shared_peak
        print(
            f"| {mode} | {row.throughput:.2f} | {row.pct(0.5):.2f} / {row.pct(0.99):.2f} | "
            f"{max(worker_peaks):.0f} MB | {f'{shared_peak:.0f} MB' if shared_peak else '-'} | "
            f"{total:.0f} MB | {row.errors} |"
        )
        figures[mode] = {
            "documents_per_s": row.throughput,
            "p50_s": row.pct(0.5),
            "p99_s": row.pct(0.99),
            "worker_peaks_mb": worker_peaks,
            "shared_peak_mb": shared_peak,
            "errors": row.errors,
        }
    print(f"\ndocuments answered differently: {len(differ)} {differ[:5]}")
    if args.json:
        Path(args.json).write_text(json.dumps({**figures, "differ": differ}, indent=1))
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
