"""GPU figures for docs/benchmarks.md: recognition crops/s at batch 1/8/32/128 and ROI pages/s
end to end, with GPU utilisation and memory sampled by nvidia-smi. Run by bench/gpu.sh.

    python -m bench.gpu --provider tensorrt --out $OUT

* **crops/s, model only**: ``session.run`` on a (batch, 3, 48, 320) float32 tensor, 320 being
  the width the TensorRT profile is optimised for; and on the real crop mix, padded to its
  width bucket, batch by batch.
* **crops/s, recognize()**: ``PPOCRRecognizer.recognize`` on ``batch`` real crops (resizing,
  normalising, bucketing, CTC decoding with masks included).
* **pages/s end to end**: CPU processes decode, register and crop pages (``Extractor.prepare``)
  and hand the crops to the main process, which recognises the crops of many pages in one
  ``recognize`` call and validates each page (``Extractor.finish``). The rate of the CPU side
  alone is reported too: with CPU registration it, not the GPU, bounds pages/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BATCHES = (1, 8, 32, 128)


class GpuSampler:
    """nvidia-smi utilisation and memory every 200 ms while a phase runs."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        try:
            self._proc = subprocess.Popen(
                [
                    "nvidia-smi",
                    "--query-gpu=utilization.gpu,memory.used",
                    "--format=csv,noheader,nounits",
                    "-lms",
                    "200",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except FileNotFoundError:
            return self
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                util, mem = (float(x) for x in line.split(",")[:2])
            except ValueError:
                continue
            self.samples.append((util, mem))

    def __exit__(self, *_: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=5)

    def summary(self) -> dict[str, float]:
        if not self.samples:
            return {}
        util = [s[0] for s in self.samples]
        mem = [s[1] for s in self.samples]
        return {
            "util_mean": statistics.fmean(util),
            "util_max": max(util),
            "mem_max_mib": max(mem),
        }


def _init_worker(patch: str | None) -> None:
    """Pool initializer: one OpenCV thread per process, and a bench/variants.py patch."""
    import cv2

    cv2.setNumThreads(1)
    if patch:
        from bench.variants import apply_patch

        apply_patch(patch)


def _prepare_page(path: str) -> list[tuple[Any, list[np.ndarray], list[str | None]]]:
    """CPU side of one document, in a pool worker: decode, register, crop."""
    from extractor.loading import iter_pages, read_source
    from extractor.pipeline import PreparedPage
    from extractor.result import Timings

    extractor = _worker_extractor()
    template = extractor.templates.get("vat_invoice")
    out = []
    for page in iter_pages(read_source(path)[0]):
        prepared = extractor.prepare(page, template, Timings())
        if isinstance(prepared, PreparedPage):
            if getattr(prepared, "image", None) is not None:
                prepared.image = None  # the page is not sent back
            out.append((prepared, prepared.images, prepared.allowlists))
    return out


_EXTRACTOR: Any = None


def _worker_extractor() -> Any:
    global _EXTRACTOR
    if _EXTRACTOR is None:
        from extractor.pipeline import Extractor

        class NoEngine:
            name = "none"

            def recognize(self, crops: Any, allowlists: Any) -> list[Any]:
                raise AssertionError("recognition runs in the main process")

        _EXTRACTOR = Extractor(engine=NoEngine(), fallback="never")  # type: ignore[arg-type]
    return _EXTRACTOR


def _time(fn: Any, seconds: float, min_runs: int = 3) -> tuple[int, float]:
    """Run ``fn`` for about ``seconds``: (runs, elapsed)."""
    runs, start = 0, time.perf_counter()
    while runs < min_runs or time.perf_counter() - start < seconds:
        fn()
        runs += 1
    return runs, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu")
    parser.add_argument("--provider", default="tensorrt", choices=["tensorrt", "cuda", "cpu"])
    parser.add_argument("--fixtures", default=str(ROOT / "fixtures"))
    parser.add_argument("--levels", default="clean,light,medium")
    parser.add_argument("--pages", type=int, default=2000, help="pages for the end-to-end run")
    parser.add_argument("--prep-workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--seconds", type=float, default=5.0, help="per crops/s point")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)))
    parser.add_argument(
        "--fullpage-pages",
        type=int,
        default=24,
        help="pages read both ways in one process, ROI then full-page OCR (0: skip)",
    )
    parser.add_argument(
        "--decode-on-device",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the CTC argmax in the graph (default: on a GPU provider)",
    )
    parser.add_argument(
        "--patch", default=None, help="a bench/variants.py patch for the CPU side, e.g. work-800"
    )
    parser.add_argument("--out", default=os.environ.get("OUT", str(ROOT / ".cache" / "gpu")))
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):  # CUDA/cuDNN from the nvidia-* wheels
        ort.preload_dlls()
    from extractor.engines.ppocr import INPUT_HEIGHT, PPOCRRecognizer, cudnn_conv_algo_search

    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "provider": args.provider,
        "onnxruntime": ort.__version__,
        "available_providers": ort.get_available_providers(),
    }
    try:
        gpu_name = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except FileNotFoundError:
        gpu_name = "no nvidia-smi"
    results["gpu"] = gpu_name
    print(json.dumps(results), flush=True)

    t0 = time.perf_counter()
    rec = PPOCRRecognizer(
        provider=args.provider,
        fp16=True,
        trt_cache_dir=str(ROOT / ".cache" / "trt"),
        max_batch=max(batches),
        batch_sizes=tuple(batches),  # the sizes measured are the sizes warmed and padded to
        decode_on_device=args.decode_on_device,
    )
    results["session_s"] = round(time.perf_counter() - t0, 1)
    results["session_providers"] = rec.session.get_providers()

    # real crops from the fixtures (CPU side, in parallel)
    docs = [
        str(p)
        for level in args.levels.split(",")
        for p in sorted((Path(args.fixtures) / level).glob("*.jpg"))
    ]
    with ProcessPoolExecutor(
        args.prep_workers, initializer=_init_worker, initargs=(args.patch,)
    ) as pool:
        prepared_docs = list(pool.map(_prepare_page, docs))
    pages = [p for doc in prepared_docs for p in doc]
    crops = [c for _, images, _ in pages for c in images]
    allow = [a for _, _, allowlists in pages for a in allowlists]
    results["crops_per_page"] = len(crops) / max(1, len(pages))

    # warm every shape recognize() pads to (with a session each on the CUDA EP), and the
    # model-alone rows' width
    t0 = time.perf_counter()
    rec.warm_up()
    for batch in batches:
        rec.forward_unmasked(np.zeros((batch, 3, INPUT_HEIGHT, 320), np.float32))
    results["warm_s"] = round(time.perf_counter() - t0, 1)
    results["warm_shapes"] = len(rec.shapes()) + len(batches)
    results["widths"] = list(rec.widths)
    results["batch_sizes"] = list(rec.batch_sizes)
    results["decodes_on_device"] = rec.decodes_on_device
    results["max_columns"] = rec.max_columns
    results["mem_after_warm_mib"] = _gpu_memory_mib()
    results["cudnn_conv_algo_search"] = cudnn_conv_algo_search()
    _save(out, results)
    print(f"warmed {results['warm_shapes']} shapes in {results['warm_s']} s", flush=True)

    rows = []
    for batch in batches:
        x = np.random.default_rng(0).uniform(-1, 1, (batch, 3, INPUT_HEIGHT, 320))
        x = x.astype(np.float32)
        with GpuSampler() as gpu:
            runs, secs = _time(lambda x=x: rec.forward_unmasked(x), args.seconds)
        fixed = {"crops_per_s": runs * batch / secs, "ms_per_batch": 1000 * secs / runs}
        fixed.update(gpu.summary())
        # recognize() on `batch` real crops at a time (buckets split a batch by width)
        picks = [(crops[i : i + batch], allow[i : i + batch]) for i in range(0, len(crops), batch)]
        picks = [p for p in picks if len(p[0]) == batch] or picks[:1]
        state = {"i": 0}

        def step(picks: list[Any] = picks, state: dict[str, int] = state) -> None:
            c, a = picks[state["i"] % len(picks)]
            state["i"] += 1
            rec.recognize(c, a)

        with GpuSampler() as gpu:
            runs, secs = _time(step, args.seconds)
        real = {"crops_per_s": runs * batch / secs}
        real.update(gpu.summary())
        rows.append({"batch": batch, "model_w320": fixed, "recognize_real": real})
        print(json.dumps(rows[-1]), flush=True)
        results["crops"] = rows
        _save(out, results)

    # end to end: CPU workers prepare pages, the main process recognises many pages per call
    paths = [docs[i % len(docs)] for i in range(args.pages)]
    done = 0
    prep_pages = min(len(paths), 20 * args.prep_workers)
    with ProcessPoolExecutor(
        args.prep_workers, initializer=_init_worker, initargs=(args.patch,)
    ) as pool:
        # the workers' start (imports, templates, reference images) first, then the pages
        list(pool.map(_prepare_page, paths[: 2 * args.prep_workers]))
        prep_only_start = time.perf_counter()
        list(pool.map(_prepare_page, paths[:prep_pages], chunksize=4))
        prep_secs = time.perf_counter() - prep_only_start
    results["prep_pages_per_s"] = prep_pages / prep_secs

    from extractor.pipeline import Extractor

    finisher = Extractor(engine=rec, fallback="never")
    pending: list[Any] = []
    pages_per_call = max(1, round(max(batches) / max(1.0, results["crops_per_page"])))
    start = time.perf_counter()
    with (
        GpuSampler() as gpu,
        ProcessPoolExecutor(
            args.prep_workers, initializer=_init_worker, initargs=(args.patch,)
        ) as pool,
    ):
        for doc in pool.map(_prepare_page, paths, chunksize=4):
            pending.extend(doc)
            if len(pending) >= pages_per_call:
                _finish(finisher, rec, pending)
                done += len(pending)
                pending = []
        if pending:
            _finish(finisher, rec, pending)
            done += len(pending)
    secs = time.perf_counter() - start
    results["end_to_end"] = {
        "pages": done,
        "seconds": round(secs, 2),
        "pages_per_s": done / secs,
        "pages_per_recognize_call": pages_per_call,
        "prep_workers": args.prep_workers,
        "patch": args.patch,
        **gpu.summary(),
    }
    print(json.dumps(results["end_to_end"]), flush=True)
    _save(out, results)

    # accuracy with this recogniser (ROI path alone), to set beside the CPU's on the same pages
    from extractor.evaluate import evaluate

    results["accuracy"] = {}
    for level in args.levels.split(","):
        tally = evaluate(Path(args.fixtures) / level, extractor=finisher).overall
        results["accuracy"][level] = tally.model_dump()
        print(level, json.dumps(results["accuracy"][level]), flush=True)
    _save(out, results)

    if args.fullpage_pages:
        results["side_by_side"] = _side_by_side(
            finisher, args.provider, docs[: args.fullpage_pages]
        )
        print(json.dumps(results["side_by_side"]), flush=True)
        _save(out, results)
    (out / "gpu_results.md").write_text(_markdown(results))
    print(_markdown(results))
    return 0


def _side_by_side(extractor: Any, provider: str, docs: list[str]) -> dict[str, Any]:
    """ROI-first against full-page OCR (RapidOCR det + cls + rec on the same provider) on the
    same pages, one process, each page in turn, wall ms per page: the 40x ratio on a GPU."""
    import cv2

    from extractor.errors import RoiError
    from extractor.fullpage import get_fullpage_ocr

    try:
        ocr = get_fullpage_ocr(provider)  # type: ignore[arg-type]
    except RoiError as exc:
        return {"error": str(exc)}
    images = [cv2.imread(d) for d in docs]
    for doc, image in zip(docs[:2], images[:2], strict=True):  # warm both paths' shapes
        extractor.extract(doc, "vat_invoice")
        ocr(image)
    start = time.perf_counter()
    for doc in docs:
        extractor.extract(doc, "vat_invoice")
    roi_ms = 1000 * (time.perf_counter() - start) / len(docs)
    start = time.perf_counter()
    lines = sum(len(ocr(image)) for image in images)
    full_ms = 1000 * (time.perf_counter() - start) / len(docs)
    return {
        "pages": len(docs),
        "roi_ms": round(roi_ms, 1),
        "fullpage_ms": round(full_ms, 1),
        "ratio": round(full_ms / roi_ms, 1),
        "fullpage_lines_per_page": round(lines / len(docs), 1),
    }


def _gpu_memory_mib() -> float | None:
    """GPU memory in use now (nvidia-smi), e.g. what the warmed sessions hold."""
    sampler = GpuSampler()
    with sampler:
        time.sleep(0.5)
    return sampler.summary().get("mem_max_mib")


def _save(out: Path, results: dict[str, Any]) -> None:
    """What is measured so far, so a run stopped at its time limit still leaves its figures."""
    (out / "gpu_results.json").write_text(json.dumps(results, indent=1))


def _finish(extractor: Any, rec: Any, pending: list[Any]) -> None:
    images = [c for _, crops, _ in pending for c in crops]
    allow = [a for _, _, allowlists in pending for a in allowlists]
    reads = rec.recognize(images, allow)
    i = 0
    for prepared, crops, _ in pending:
        extractor.finish(prepared, reads[i : i + len(crops)])
        i += len(crops)


def _markdown(r: dict[str, Any]) -> str:
    lines = [
        f"GPU run {r['date']}: {r['gpu']}, provider {r['provider']} "
        f"(session providers {', '.join(r['session_providers'])}), onnxruntime {r['onnxruntime']}; "
        f"session {r['session_s']} s, warming {r['warm_shapes']} shapes {r['warm_s']} s; "
        f"cuDNN conv algorithm search {r['cudnn_conv_algo_search']}, batches padded to "
        f"{r['batch_sizes'] or 'none'} rows and {r.get('widths') or 'their own'} columns "
        f"(rows x width at most {r.get('max_columns') or 'any'}), argmax "
        f"{'in the graph' if r['decodes_on_device'] else 'on the CPU'}; GPU memory after "
        f"warming {r.get('mem_after_warm_mib')} MiB.",
        "",
        "| batch | crops/s model (w=320) | ms/batch | GPU util % | crops/s recognize() real crops "
        "| GPU util % | GPU mem MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in r["crops"]:
        f, q = row["model_w320"], row["recognize_real"]
        lines.append(
            f"| {row['batch']} | {f['crops_per_s']:.0f} | {f['ms_per_batch']:.2f} | "
            f"{f.get('util_mean', 0):.0f} | {q['crops_per_s']:.0f} | {q.get('util_mean', 0):.0f} | "
            f"{max(f.get('mem_max_mib', 0), q.get('mem_max_mib', 0)):.0f} |"
        )
    e = r["end_to_end"]
    lines += [
        "",
        f"End to end: {e['pages']} pages in {e['seconds']} s = **{e['pages_per_s']:.0f} pages/s** "
        f"({e['prep_workers']} CPU processes decoding, registering and cropping; "
        f"{e['pages_per_recognize_call']} pages per recognize call; GPU util mean "
        f"{e.get('util_mean', 0):.0f}%, max memory {e.get('mem_max_mib', 0):.0f} MiB). "
        f"CPU side alone, workers started: {r['prep_pages_per_s']:.0f} pages/s.",
        "",
        "Fields right with this recogniser (ROI path alone, fallback off): "
        + ", ".join(
            f"{level} {t['exact']}/{t['fields']} (wrong but valid {t['wrong_valid']})"
            for level, t in r["accuracy"].items()
        )
        + ".",
    ]
    side = r.get("side_by_side")
    if side and "error" in side:
        lines += ["", f"Full-page OCR side by side: not run ({side['error']})."]
    elif side:
        lines += [
            "",
            f"One process, {side['pages']} pages in turn, wall ms per page: ROI-first "
            f"{side['roi_ms']}, full-page OCR on the same provider {side['fullpage_ms']} "
            f"({side['fullpage_lines_per_page']} lines a page): **{side['ratio']}x**.",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
