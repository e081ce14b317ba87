"""Batch throughput: pages/s of `roi batch` with --workers 1 and 2, and on a local Ray instance.

    .venv/bin/python bench/batch.py [FIXTURES_DIR] [--docs 24] [--configs w1,w2,ray2]

Each configuration runs the real CLI in a subprocess on the same documents into a fresh output
folder, so the numbers include everything a nightly run pays: interpreter start, spawning the
workers (or starting Ray), loading the model once per worker, hashing, writing with fsync.
``first result s`` is the time from launch to the first finished document (the start-up cost:
spawning and loading models, or starting Ray), read from the manifest's timestamps.
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".jpg", ".jpeg", ".png", ".pdf", ".tif", ".tiff"}
CONFIGS = {
    "w1": ("local pool, --workers 1", ["--workers", "1"]),
    "w2": ("local pool, --workers 2", ["--workers", "2"]),
    "ray2": ("Ray (local instance), 2 actors", ["--workers", "2", "--ray"]),
}


def pick(root: Path, n: int) -> list[Path]:
    """``n`` documents spread over the fixture levels (round-robin over sub-folders)."""
    groups = [
        sorted(p for p in d.rglob("*") if p.suffix.lower() in SUFFIXES)
        for d in sorted(root.iterdir())
        if d.is_dir()
    ] or [sorted(p for p in root.rglob("*") if p.suffix.lower() in SUFFIXES)]
    chosen: list[Path] = []
    while len(chosen) < n and any(groups):
        for g in groups:
            if g and len(chosen) < n:
                chosen.append(g.pop(0))
    return chosen


def snapshot(docs: list[Path], dest: Path) -> Path:
    """Copy the documents (a stable input while fixtures may be regenerated)."""
    for i, doc in enumerate(docs):
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(doc, dest / f"{i:04d}_{doc.parent.name}_{doc.name}")
    return dest


def run(folder: Path, extra: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "extractor.cli", "batch", str(folder),
               "-t", "vat_invoice", "--out", str(out), "--quiet", *extra]  # fmt: skip
        launched = time.time()
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode not in (0, 2) or not (out / "results.jsonl").exists():
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
        pages = sum(
            len(json.loads(line)["pages"])
            for line in (out / "results.jsonl").read_text().splitlines()
        )
        with sqlite3.connect(out / "manifest.sqlite") as db:
            rows = db.execute(
                "SELECT updated, COALESCE(pages, 0) FROM documents "
                "WHERE state IN ('done', 'failed') ORDER BY updated"
            ).fetchall()
        failed = len((out / "errors.jsonl").read_text().splitlines())
    first = rows[0][0] - launched if rows else float("nan")
    return {"wall": wall, "pages": pages, "first": first, "failed": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixtures", nargs="?", default=str(ROOT / "fixtures"))
    parser.add_argument("--docs", type=int, default=24)
    parser.add_argument("--configs", default="w1,w2,ray2")
    args = parser.parse_args()
    docs = pick(Path(args.fixtures), args.docs)
    if not docs:
        raise SystemExit(f"no documents under {args.fixtures}")
    try:
        import ray

        ray_version = ray.__version__
    except ImportError:
        ray_version = "not installed"
    print(
        f"{len(docs)} documents from {args.fixtures}; {os.cpu_count()} CPUs, "
        f"{platform.machine()}, Python {platform.python_version()}, ray {ray_version}\n"
    )
    print("| configuration | documents | failed | pages | wall s | pages/s | first result s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = snapshot(docs, Path(tmp) / "in")
        for name in args.configs.split(","):
            label, extra = CONFIGS[name]
            r = run(folder, extra)
            print(
                f"| {label} | {len(docs)} | {r['failed']} | {r['pages']} | {r['wall']:.1f} | "
                f"{r['pages'] / r['wall']:.2f} | {r['first']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
