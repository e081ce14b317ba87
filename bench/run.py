"""``python -m bench.run`` (``make bench``): ROI-first against full-page OCR, and what makes the
ROI path faster, measured on the committed fixtures; writes docs/benchmarks.md and its figure.

    python -m bench.run                      # everything (~15 min on 2 busy cores)
    python -m bench.run --quick              # a few pages, fewer variants (~3 min)
    python -m bench.run --render             # rewrite the report from the last results

Every measurement runs in a fresh process pinned to one CPU with one thread per library, and
reports CPU time (what a page costs one core) beside wall time, with the load averages seen
while it ran. The ROI path and full-page OCR are timed in one process, page by page in turn,
so their ratio is measured side by side. Variants (engines, model files, registration
patches; see bench/variants.py) are timed on the same pages, and scored with ``evaluate``, so
no speed-up is counted that costs a field.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from bench import tasks
from bench.plot import Bar, draw
from bench.variants import CACHE, ENGINES, ROOT, Variant
from extractor.engines.openvino_runtime import cpu_flags

RESULTS = CACHE / "results.json"
BEGIN = "<!-- BEGIN GENERATED: python -m bench.run rewrites everything down to END -->"
END = "<!-- END GENERATED -->"
SPEED_STAGES = tasks.STAGES

# End-to-end variants, each in a process of its own. "base" (the product as shipped) runs first
# and again last ("base2") to show how much the machine's load moved the figures in between.
# Variants of the small model alone are compared with "small" (the engine shipped before the
# cascade), the others with "base".
VARIANTS: list[Variant] = [
    Variant("base"),
    Variant("small", engine="small"),
    Variant("check-print", check_print=True),
    Variant("shipped-auto", fallback="auto"),
    Variant("parties", parties=True),
    Variant("parties-auto", fallback="auto", parties=True, versus="shipped-auto"),
    Variant("full-search", patch="full-search"),
    Variant("ecc-off", patch="ecc-off"),
    Variant("work-800", patch="work-800"),
    Variant("tiny", engine="tiny"),
    Variant("int8-dyn-matmul", engine="int8-dyn-matmul", versus="small"),
    Variant("ov", engine="ov", versus="small"),
    Variant("other-runtime", engine="other-runtime"),
    Variant("base2"),
]
# the variants timed beside the shipped path and full-page OCR, in the same process
PAIRED_ALSO = ("small", "check-print", "parties", "other-runtime")
STAGE_PLOT = ("small", "check-print", "base", "parties", "full-search", "work-800", "other-runtime")
EVERY_FIXTURE_ENGINES = ("shipped", "other-runtime")
"""Engines of the workers run over every fixture with the fallback on (worker memory)."""
QUICK_VARIANTS = {"base", "small", "check-print", "parties", "other-runtime", "base2"}


def _docs(fixtures: Path, levels: list[str], per_level: int | None) -> list[Path]:
    docs = []
    for level in levels:
        found = sorted(
            p
            for p in (fixtures / level).iterdir()
            if p.suffix == ".jpg" and p.with_suffix(".json").is_file()
        )
        docs += found[:per_level] if per_level else found
    return docs


def _in_fresh_process(
    fn: Callable[[dict[str, Any]], dict[str, Any]], spec: dict[str, Any]
) -> dict[str, Any]:
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, spec).result()


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {message}", flush=True)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    fixtures = Path(args.fixtures).resolve()
    levels = args.levels.split(",")
    accuracy_levels = args.accuracy_levels.split(",")
    wanted = set(args.variants.split(",")) if args.variants else None
    CACHE.mkdir(parents=True, exist_ok=True)
    if args.merge:
        results = json.loads(RESULTS.read_text(encoding="utf-8"))
        levels, accuracy_levels = results["levels"], results["accuracy_levels"]
        results.setdefault("merged", []).append(
            {
                "date": dt.datetime.now().astimezone().isoformat(timespec="minutes"),
                "variants": sorted(wanted) if wanted else "all",
            }
        )
        models = results["calibration"]["models"]
    else:
        results = {
            "date": dt.datetime.now().astimezone().isoformat(timespec="minutes"),
            "machine": _machine(),
            "levels": levels,
            "accuracy_levels": accuracy_levels,
            "load_start": tasks.load(),
            "variants": [],
        }
        models = _measure_fixed(args, fixtures, levels, results)
    done = {v["variant"]["key"]: v for v in results["variants"]}
    for variant in VARIANTS:
        if args.quick and variant.key not in QUICK_VARIANTS:
            continue
        if wanted is not None and variant.key not in wanted:
            continue
        spec = {
            "variant": asdict(variant),
            "models": models,
            "fixtures": str(fixtures),
            "timed_levels": levels,
            "accuracy_levels": accuracy_levels,
        }
        if any(n not in models for n in ENGINES[variant.engine].needs):
            done[variant.key] = {**spec, "label": variant.label, "error": "model not built"}
            continue
        _log(f"variant {variant.key}: {variant.label}")
        try:
            done[variant.key] = _in_fresh_process(tasks.roi_task, spec)
        except Exception as exc:  # one broken variant must not lose the others
            error = f"{type(exc).__name__}: {exc}"
            done[variant.key] = {**spec, "label": variant.label, "error": error}
    order = {v.key: i for i, v in enumerate(VARIANTS)}
    results["variants"] = sorted(done.values(), key=lambda v: order.get(v["variant"]["key"], 99))
    results["load_end"] = tasks.load()
    RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    _log(f"raw results in {RESULTS.relative_to(ROOT)}")
    return results


def _measure_fixed(
    args: argparse.Namespace, fixtures: Path, levels: list[str], results: dict[str, Any]
) -> dict[str, str]:
    """Model files, the side-by-side run, full-page RSS, component micro-benchmarks."""
    per_level = 2 if args.quick else args.fullpage_per_level
    docs = [str(p) for p in _docs(fixtures, levels, per_level)]
    _log("int8 models (quantize_dynamic, quantize_static with synthetic calibration pages)")
    calibration = _in_fresh_process(
        tasks.calibration_task, {"calibration_pages": 3 if args.quick else 12}
    )
    results["calibration"] = calibration
    models: dict[str, str] = calibration["models"]

    _log(f"ROI path and full-page OCR side by side on {len(docs)} pages")
    also = [asdict(v) for v in VARIANTS if v.key in PAIRED_ALSO]
    results["paired"] = _in_fresh_process(
        tasks.paired_task, {"docs": docs, "models": models, "also": also}
    )
    _log("peak RSS of a full-page OCR process")
    results["fullpage_rss"] = _in_fresh_process(tasks.fullpage_rss_task, {"docs": docs[:3]})
    if not args.quick:
        every = sorted(p.name for p in fixtures.iterdir() if p.is_dir() and any(p.rglob("*.json")))
        results["every_fixture"] = []
        for engine in EVERY_FIXTURE_ENGINES:
            _log(f"a worker over every fixture ({', '.join(every)}), fallback on: {engine}")
            spec = {
                "variant": asdict(Variant(f"every-{engine}", engine=engine, fallback="auto")),
                "models": models,
                "fixtures": str(fixtures),
                "timed_levels": None,
                "accuracy_levels": every,
            }
            worker = _in_fresh_process(tasks.roi_task, spec)
            records = worker["records"]
            results["every_fixture"].append(
                {
                    "engine": engine,
                    "describe": worker["engine"],
                    "documents": len(records),
                    "pages": sum(r["pages"] for r in records),
                    "cpu_s": sum(r["cpu_ms"] * r["pages"] for r in records) / 1000,
                    "accuracy": worker["accuracy"],
                    "rss_mb": worker["rss_mb"],
                }
            )
    digital = sorted((fixtures / "digital" / "pdf").glob("*.pdf"))
    if digital:
        _log(f"born-digital PDFs: text layer and OCR path side by side on {len(digital)} PDFs")
        results["digital"] = _in_fresh_process(
            tasks.digital_task,
            {"docs": [str(p) for p in digital], "rounds": 1 if args.quick else 3},
        )

    counts = {"clean": 3, "light": 3} if args.quick else tasks.RECEIVED_COUNTS
    received = [str(p) for p in tasks.received_docs(counts)]
    _log(f"a batch of one company's invoices, learning the parties: {len(received)} pages")
    results["received"] = _in_fresh_process(tasks.received_task, {"docs": received})

    if not args.quick:
        _log("component micro-benchmarks (recognition, registration, decoding)")
        all_docs = [str(p) for p in _docs(fixtures, levels, None)]
        results["components"] = _in_fresh_process(
            tasks.components_task,
            {
                "docs": all_docs,
                "models": models,
                "pdfs": [str(p) for p in fixtures.glob("**/*.pdf")],
            },
        )
    return models


def _machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for pkg in ("onnxruntime", "openvino", "opencv-python-headless", "rapidocr", "numpy"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "-"
    return {
        "cpu": cpu,
        "isa": _isa(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "versions": versions,
    }


ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")
"""The CPU flags that decide which runtime is faster here (extractor.engines.openvino_runtime)."""


def _isa() -> list[str]:
    flags = cpu_flags()
    return [f for f in ISA_FLAGS if f in flags]


# -- the report --------------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _pps(ms_per_page: float) -> float:
    return 1000 / ms_per_page if ms_per_page else 0.0


def _acc(a: dict[str, Any], levels: list[str] | None = None) -> tuple[int, int, int]:
    rows = [t for lvl, t in a["by_level"].items() if levels is None or lvl in levels]
    return (
        sum(t["exact"] for t in rows),
        sum(t["fields"] for t in rows),
        sum(t["wrong_valid"] for t in rows),
    )


def _miss_keys(variant: dict[str, Any]) -> set[str]:
    """Document:field of every wrong value (the misses are written "file:field expected...")."""
    return {
        m.split(" ", 1)[0]
        for tally in variant["accuracy"]["by_level"].values()
        for m in tally["misses"]
    }


def _load(pair: list[list[float]]) -> str:
    return " → ".join(f"{p[0]:.1f}/{p[1]:.1f}" for p in pair)


def _render_every_fixture(add: Callable[[str], None], workers: list[dict[str, Any]]) -> None:
    levels = ", ".join(workers[0]["accuracy"]["by_level"])
    add("")
    add("### A worker over every fixture, fallback on")
    add("")
    add(
        f"Each in a fresh process, as the service runs a worker (fallback on, malloc trimmed "
        f"after each document): every fixture document ({levels}; "
        f"{workers[0]['documents']} documents, {workers[0]['pages']} pages), among them "
        "pages that are not invoices, which the fallback's full-page OCR reads whole. The "
        "worker-memory target is a peak here, not only on the timed pages above."
    )
    add("")
    add("| worker | engine | peak RSS | CPU s | fields right (`evaluate`) |")
    add("|---|---|---:|---:|---:|")
    for w in workers:
        exact, fields, wrong_valid = _acc(w["accuracy"])
        add(
            f"| {w['engine']} | `{w['describe']}` | **{w['rss_mb']:.0f} MB** | {w['cpu_s']:.1f} | "
            f"{exact}/{fields}, {wrong_valid} wrong+valid |"
        )


def _render_received(add: Callable[[str], None], received: dict[str, Any]) -> None:
    paths, full = received["paths"], received["full"]
    shipped, learning = paths["shipped"], paths["learning"]
    n, skip = len(shipped), len(shipped) // 3
    add("")
    add("### A night's batch: the same parties again")
    add("")
    add(
        f"The fixtures name other parties on every page; a company's own batch does not. {n} "
        "pages of the invoices one company received (`bench.tasks.received_docs`: the same "
        f"buyer on each, {received['parties'] - 1} suppliers, a few of them most often; "
        f"{', '.join(dict.fromkeys(d.split('/')[0] for d in received['docs']))} scans), in "
        "batch order, one process, page by page in turn: the ROI "
        "path as shipped, the ROI path learning the parties as it goes (`roi batch` does: a "
        "party read valid in two documents is registered, and tiny's reading of its name is "
        f"kept when it reads it as registered; {received['learned']} learned by the end), and "
        f"full-page OCR on one page in {tasks.FULL_PAGE_EVERY}. Fallback off; load "
        f"{_load(received['load'])}."
    )
    add("")
    add("| per page | ROI as shipped | ROI learning the parties | full-page OCR |")
    add("|---|---:|---:|---:|")
    on = [r["index"] for r in full]
    full_mean = _mean([r["cpu_ms"] for r in full])
    rows = (
        (f"CPU ms, mean of all {n}", lambda recs: _mean([r["cpu_ms"] for r in recs]), "-"),
        (f"CPU ms, median of all {n}", lambda recs: _median([r["cpu_ms"] for r in recs]), "-"),
        (
            f"CPU ms, mean after the first {skip} (learning done)",
            lambda recs: _mean([r["cpu_ms"] for r in recs[skip:]]),
            "-",
        ),
        (
            f"CPU ms, mean of the {len(on)} pages full-page OCR read",
            lambda recs: _mean([recs[i]["cpu_ms"] for i in on]),
            f"{full_mean:.0f}",
        ),
    )
    for label, stat, theirs in rows:
        add(f"| {label} | {stat(shipped):.0f} | {stat(learning):.0f} | {theirs} |")
    ratio = [full_mean / _mean([recs[i]["cpu_ms"] for i in on]) for recs in (shipped, learning)]
    add(f"| **full-page / ROI**, the same pages | **{ratio[0]:.1f}x** | **{ratio[1]:.1f}x** | |")
    right = [
        f"{sum(r['right'] for r in recs)}/{sum(r['fields'] for r in recs)}, "
        f"{sum(r['wrong_valid'] for r in recs)} wrong+valid"
        for recs in (shipped, learning)
    ]
    add(f"| fields right | {right[0]} | {right[1]} | not scored |")


def render(results: dict[str, Any], out: Path) -> None:
    levels = results["levels"]
    paired = results["paired"]
    roi = paired["roi"]
    full = paired["full"]
    full_cpu = [r["cpu_ms"] for r in full]
    variants = [v for v in results["variants"] if "error" not in v]
    base = next((v for v in variants if v["variant"]["key"] == "base"), None)
    lines: list[str] = []
    add = lines.append
    m = results["machine"]
    add(
        f"Measured {results['date']} on {m['cores']} cores ({m['cpu']}"
        + (f"; {', '.join(m['isa'])}" if m.get("isa") else "")
        + f"), Python {m['python']}, "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
        + f". Load averages (1/5 min) at start {results['load_start'][0]:.1f}/"
        f"{results['load_start'][1]:.1f}, at end {results['load_end'][0]:.1f}/"
        f"{results['load_end'][1]:.1f}: other work shared the machine, so times are **CPU time** "
        "of a process pinned to one core with one thread per library (what a page costs one "
        "core); wall times are given beside them."
    )
    for merge in results.get("merged", []):
        rerun = merge["variants"] if merge["variants"] == "all" else ", ".join(merge["variants"])
        add(f"Variants rerun {merge['date']}: {rerun}.")
    add("")
    add(f"Pages: the committed fixtures of levels {', '.join(levels)} ({len(roi)} pages).")
    add("")
    add("### ROI-first against full-page OCR, side by side")
    add("")
    by_key = {v["variant"]["key"]: v for v in variants if "records" in v}
    paths: list[tuple[str, list[dict[str, Any]], dict[str, Any] | None]] = [
        ("ROI as shipped", roi, base)
    ]
    also = paired.get("also") or []
    for a in also:
        paths.append((f"ROI `{a['key']}`", a["records"], by_key.get(a["key"])))
    add(
        "One process, the pages in turn: the ROI path as shipped (engine "
        f"`{paired['roi_engine']}`, the shipped registration, full-page fallback off), "
        + "".join(f"the ROI path `{a['key']}` ({a['label']}), " for a in also)
        + "then RapidOCR full-page det + cls + rec of the same page "
        f"(load {_load(paired['load'])})."
    )
    add("")
    add(
        "| per page | "
        + " | ".join(name for name, _, _ in paths)
        + " | full-page OCR | "
        + " | ".join(f"full-page / {name}" for name, _, _ in paths)
        + " |"
    )
    add("|---|" + "---:|" * (2 * len(paths) + 1))

    def row(label: str, stat: Callable[[list[float]], float], key: str, fmt: str) -> None:
        ours = [stat([r[key] for r in recs]) for _, recs, _ in paths]
        theirs = stat([r[key] for r in full])
        add(
            f"| {label} | "
            + " | ".join(format(v, fmt) for v in ours)
            + f" | {format(theirs, fmt)} | "
            + " | ".join(f"{theirs / v:.1f}x" for v in ours)
            + " |"
        )

    row("CPU ms, median", _median, "cpu_ms", ".0f")
    row("CPU ms, mean", _mean, "cpu_ms", ".0f")
    add(
        "| **pages/s per core** (1 / mean CPU) | "
        + " | ".join(f"**{_pps(_mean([r['cpu_ms'] for r in recs])):.2f}**" for _, recs, _ in paths)
        + f" | **{_pps(_mean(full_cpu)):.2f}** | "
        + " | ".join(
            f"**{_mean(full_cpu) / _mean([r['cpu_ms'] for r in recs]):.1f}x**"
            for _, recs, _ in paths
        )
        + " |"
    )
    spreads = []
    for _, recs, _ in paths:
        ratios = [f["cpu_ms"] / r["cpu_ms"] for r, f in zip(recs, full, strict=True)]
        spreads.append(f"{_median(ratios):.1f}x ({min(ratios):.1f}-{max(ratios):.1f})")
    cells = ["per-page CPU ratio, median (min-max)", *[""] * (len(paths) + 1), *spreads]
    add("| " + " | ".join(cells) + " |")
    row("wall ms, median", _median, "wall_ms", ".0f")
    accuracy = []
    for _, _, v in paths:
        if v is None:
            accuracy.append("-")
            continue
        exact, fields, wrong_valid = _acc(v["accuracy"], levels)
        accuracy.append(
            f"{exact}/{fields} ({100 * exact / fields:.1f}%), {wrong_valid} wrong+valid"
        )
    add(
        "| fields right (`evaluate`) | "
        + " | ".join(accuracy)
        + " | not scored (time only) |"
        + " |" * len(paths)
    )
    add(
        "| peak RSS of a worker | "
        + " | ".join(f"{v['rss_mb']:.0f} MB" if v else "-" for _, _, v in paths)
        + f" | {results['fullpage_rss']['rss_mb']:.0f} MB |"
        + " |" * len(paths)
    )
    add("")
    add(
        "ROI stages, CPU ms per page (median over pages; wall-time medians from `timings_ms` "
        "in brackets):"
    )
    add("")
    add("| | " + " | ".join(SPEED_STAGES) + " | total |")
    add("|---|" + "---:|" * (len(SPEED_STAGES) + 1))
    for name, recs, _ in paths:
        add(
            f"| {name} | "
            + " | ".join(
                f"{_median([r['stage_cpu'][s] for r in recs]):.1f} "
                f"({_median([r['stage_wall'][s] for r in recs]):.1f})"
                for s in SPEED_STAGES
            )
            + f" | {_median([r['cpu_ms'] for r in recs]):.1f} "
            f"({_median([r['wall_ms'] for r in recs]):.1f}) |"
        )
    if "received" in results:
        _render_received(add, results["received"])
    if results.get("every_fixture"):
        _render_every_fixture(add, results["every_fixture"])
    add("")
    add("### End-to-end variants")
    add("")
    add(
        "Each in a fresh process: time per page on the pages above, fields right from `evaluate` "
        f"on {', '.join(results['accuracy_levels'])} (the speed levels, and the rest scored for "
        "accuracy only). `base` is the product as shipped; it runs first and again last "
        "(`base2`): the difference between the two is the noise the machine's load puts on "
        "these figures. Each variant is compared with `base`, or, for variants of the small "
        "model alone, with `small` (column *vs*)."
    )
    add("")
    add(
        "| variant | CPU ms/page mean (median) | pages/s/core | vs | speed vs it "
        f"| register / recognize CPU ms | right on {'+'.join(levels)} | right on all scored "
        "| wrong+valid | newly wrong / fixed vs it | kept | peak RSS | load 1-min start→end |"
    )
    add("|---|---:|---:|:-:|---:|---:|---:|---:|---:|---:|:-:|---:|---:|")
    bars = [Bar("full-page OCR (RapidOCR)", _pps(_mean(full_cpu)), "full")]
    stages: list[tuple[str, dict[str, float]]] = []
    for v in results["variants"]:
        key = v["variant"]["key"]
        if "error" in v:
            add(f"| `{key}` {v['label']} | failed: {v['error'][:120]} |" + " |" * 11)
            continue
        versus = v["variant"].get("versus", "base")
        ref = by_key.get(versus) if versus != key else None
        ref = ref if ref is not None else v
        cpu = [r["cpu_ms"] for r in v["records"]]
        exact, fields, wrong_valid = _acc(v["accuracy"], levels)
        a_exact, a_fields, a_wrong = _acc(v["accuracy"])
        misses, ref_misses = _miss_keys(v), _miss_keys(ref)
        newly, fixed = len(misses - ref_misses), len(ref_misses - misses)
        kept = newly == 0 and a_wrong <= _acc(ref["accuracy"])[2]
        ref_mean = _mean([r["cpu_ms"] for r in ref["records"]])
        extra = ""
        if "cascade" in v:
            c = v["cascade"]
            extra = (
                f" ({100 * c['retried'] / max(1, c['crops']):.0f}% of allowlisted crops re-read)"
            )
        add(
            f"| `{key}` {v['label']}{extra} | {_mean(cpu):.0f} ({_median(cpu):.0f}) | "
            f"{_pps(_mean(cpu)):.2f} | `{ref['variant']['key']}` | {ref_mean / _mean(cpu):.2f}x | "
            f"{_median([r['stage_cpu']['register'] for r in v['records']]):.0f} / "
            f"{_median([r['stage_cpu']['recognize'] for r in v['records']]):.0f} | "
            f"{exact}/{fields} | {a_exact}/{a_fields} | {wrong_valid}/{a_wrong} | "
            f"{newly} / {fixed} | {'yes' if kept else 'no'} | {v['rss_mb']:.0f} MB | "
            f"{v['load'][0][0]:.1f}→{v['load'][1][0]:.1f} |"
        )
        if key != "base2":
            bars.append(Bar(key, _pps(_mean(cpu)), "kept" if kept else "lost"))
        if key in STAGE_PLOT:
            stages.append(
                (key, {s: _mean([r["stage_cpu"][s] for r in v["records"]]) for s in SPEED_STAGES})
            )
    stages.sort(key=lambda item: STAGE_PLOT.index(item[0]))
    add("")
    add(
        "`wrong+valid` is speed levels / all scored levels: wrong values that pass validation, the "
        "number that must not grow. `newly wrong / fixed`: fields (document and field) this "
        "variant gets wrong that the variant it is compared with gets right, and the reverse. A "
        "variant *keeps accuracy* (`kept`) when it gets no field wrong that the other gets right "
        "and has no more wrong+valid. Peak RSS: the variant's worker process after every scored "
        "page."
    )
    if base:
        add("")
        add(f"`base` engine, as built by `ppocr_engine(threads=1)`: `{base.get('engine', '?')}`.")
    if base:
        misses = {
            lvl: t["misses"] for lvl, t in base["accuracy"]["by_level"].items() if t["misses"]
        }
        add("")
        add("<details><summary>fields `base` gets wrong</summary>")
        add("")
        for lvl, rows in misses.items():
            add(
                f"- {lvl}: "
                + "; ".join(f"`{r}`" for r in rows[:12])
                + (" …" if len(rows) > 12 else "")
            )
        add("")
        add("</details>")
    comp = results.get("components")
    if comp:
        add("")
        add("### Recognition alone")
        add("")
        add(
            f"The crops of the {comp['pages']} pages as the pipeline cuts them "
            f"({comp['crops_per_page']:.0f} crops, {comp['columns_per_page']:.0f} input columns at "
            "height 48 per page), recognised page by page; `reads differ` counts crops whose text "
            "differs from the small model's (before normalisation, so ￥/¥ or a dropped ⊗ count "
            f"too). Load {_load(comp['load'])}."
        )
        add("")
        add("| recognition | CPU ms/page | wall ms/page | reads differ | load |")
        add("|---|---:|---:|---:|---:|")
        for r in comp["recognition"]:
            if "error" in r:
                add(f"| `{r['key']}` {r['label']} | failed: {r['error'][:100]} | | | |")
                continue
            retried = (
                f" ({100 * r['retried']:.0f}% of allowlisted crops re-read)"
                if "retried" in r
                else ""
            )
            add(
                f"| `{r['key']}` {r['label']}{retried} | {r['cpu_ms']:.1f} | {r['wall_ms']:.1f} | "
                f"{r['differ']}/{r['crops']} | {r['load'][0]:.1f} |"
            )
        add("")
        add("### Registration alone")
        add("")
        add(
            "`register` on the same pages; error = the largest distance, over the field-box "
            "centres, between where the homography puts them and where the fixture's true "
            "page-to-image map does (page px at the scan's dpi)."
        )
        add("")
        add("| registration | CPU ms/page (median) | error px median | p90 | max |")
        add("|---|---:|---:|---:|---:|")
        for r in comp["registration"]:
            add(
                f"| {r['label']} | {r['cpu_ms']:.1f} | {r['error_px_median']:.2f} | "
                f"{r['error_px_p90']:.2f} | {r['error_px_max']:.2f} |"
            )
        add("")
        add(
            "Decoding a page (cv2.imdecode, CPU ms): "
            + ", ".join(f"{r['key']} {r['cpu_ms']:.1f}" for r in comp["decode"])
            + "."
        )
        scans = comp.get("pdf_scans")
        if scans and scans["pages"]:
            add("")
            add(
                f"Loading a scanned PDF page ({scans['pages']} pages of the fixtures' PDFs "
                f"without a text layer, CPU ms): the embedded scan as shipped "
                f"**{scans['embedded']:.1f}**, the page rendered at the loader's dpi "
                f"{scans['rendered']:.1f} (before 2026-12-01), "
                f"{scans['rendered'] / scans['embedded']:.1f}x."
            )
    digital = results.get("digital")
    if digital:
        text, ocr = digital["paths"]["text_layer"], digital["paths"]["ocr"]
        add("")
        add("### Born-digital PDFs: text layer against the OCR path")
        add("")
        add(
            f"The {digital['docs']} born-digital 数电票 PDFs of `fixtures/digital/pdf` "
            f"({digital['pages']} pages, {digital['fields']} fields), {digital['rounds']} rounds, "
            "one process, the fallback off: each page from its text layer (a page at its form's "
            "size is not even rendered), then the same page rendered, registered, cropped and "
            f"recognised (`Extractor(text_layer=False)`). Load {digital['load'][0]:.1f}."
        )
        add("")
        add("| path | CPU ms/page | wall ms/page | fields right | fields from |")
        add("|---|---:|---:|---:|---|")
        for label, path in (("text layer (the default)", text), ("OCR path", ocr)):
            add(
                f"| {label} | {path['cpu_ms']:.1f} | {path['wall_ms']:.1f} | "
                f"{path['right']}/{digital['fields']} | {', '.join(path['sources'])} |"
            )
        add(
            f"| OCR / text layer | **{ocr['cpu_ms'] / text['cpu_ms']:.1f}x** | "
            f"{ocr['wall_ms'] / text['wall_ms']:.1f}x | | |"
        )
        letter = digital.get("letter")
        if letter:
            by_text, by_ocr = letter["text_layer"], letter["ocr"]
            add("")
            whole = letter.get("whole")
            read_whole = (
                f", and {whole['cpu_ms']:.0f} ms for full-page OCR to read it whole (what that "
                "path did before it glanced)"
                if whole
                else ""
            )
            add(
                "A typed cover letter between two of them (page 2 of "
                f"`digital_pdf({tasks.LETTER_SEEDS}, letter_at=1)`), the fallback on: told to be "
                "no invoice from its text layer in "
                f"**{by_text['cpu_ms']:.0f} ms** of CPU ({by_text['status']}), against "
                f"{by_ocr['cpu_ms']:.0f} ms on the image path (`text_layer=False`, "
                f"{by_ocr['status']}: rendered, registered, glanced at by full-page OCR): "
                f"{by_ocr['cpu_ms'] / by_text['cpu_ms']:.0f}x{read_whole}."
            )
    cal = results.get("calibration", {})
    if cal.get("errors"):
        add("")
        add("Model files not built: " + "; ".join(f"{k}: {v}" for k, v in cal["errors"].items()))
    body = "\n".join(lines)

    png = out.with_suffix(".png")
    draw(
        png,
        bars,
        stages or [("ROI", {s: _median([r["stage_cpu"][s] for r in roi]) for s in SPEED_STAGES})],
        f"ROI-first vs full-page OCR, CPU time per page on one core ({results['date'][:10]})",
    )
    generated = f"{BEGIN}\n\n![benchmarks]({png.name})\n\n{body}\n\n{END}"
    if out.is_file():
        text = out.read_text(encoding="utf-8")
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            tail = rest.split(END, 1)[1]
            out.write_text(head + generated + tail, encoding="utf-8")
            return
    out.write_text(
        "# Benchmarks\n\n`make bench` (or `python -m bench.run`) regenerates the section between "
        f"the markers.\n\n{generated}\n",
        encoding="utf-8",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--fixtures", default=str(ROOT / "fixtures"))
    parser.add_argument("--levels", default="clean,light,medium", help="timed levels")
    parser.add_argument(
        "--accuracy-levels", default="clean,light,medium,heavy", help="levels scored by evaluate"
    )
    parser.add_argument(
        "--fullpage-per-level",
        type=int,
        default=None,
        help="pages per level for the side-by-side run (default: all)",
    )
    parser.add_argument("--variants", default=None, help="comma-separated variant keys to run")
    parser.add_argument("--quick", action="store_true", help="a few pages and variants")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="rerun only --variants, keeping every other figure of the last results",
    )
    parser.add_argument(
        "--render", action="store_true", help=f"only rewrite the report from {RESULTS.name}"
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    results = json.loads(RESULTS.read_text(encoding="utf-8")) if args.render else measure(args)
    render(results, Path(args.out))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
