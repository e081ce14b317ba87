"""The benchmark's measurements, each run by :mod:`bench.run` in a fresh process of its own
(multiprocessing ``spawn``), pinned to one CPU with one ONNX Runtime / OpenCV / OpenMP thread.

Times are CPU time of the process (``time.process_time``): what a page costs one core, which
other processes on the machine change far less than wall time. Wall time is recorded too.
Each task returns plain data (dicts, lists) for the report.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REGISTRATION_PATCHES = (None, "full-search", "ecc-off", "work-1000", "work-800")
SHIPPED_REGISTRATION = "as shipped (ECC at a quarter scale, outline search stops at >= 0.9)"
STAGES = ("decode", "register", "crop", "recognize", "validate", "fallback")
_STAGE_CPU: dict[str, float] = {}


def setup_worker() -> int:
    """Pin this process to one CPU and every library to one thread, and cap malloc's arenas as
    a service worker does (peak RSS is measured as a worker would have it); the CPU's number."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import cv2

    from extractor.memory import limit_arenas

    limit_arenas()

    cv2.setNumThreads(1)
    cpu = sorted(os.sched_getaffinity(0))[-1]
    os.sched_setaffinity(0, {cpu})
    return cpu


def peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM: ``ru_maxrss`` may carry the parent's over a fork)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _patch_stage_clock() -> bool:
    """Count the CPU time of each pipeline stage beside the wall time it already records."""
    from extractor import pipeline

    original = getattr(pipeline, "_timed", None)
    if original is None:
        return False

    @contextmanager
    def timed(timings: Any, stage: str) -> Iterator[None]:
        start = time.process_time()
        with original(timings, stage):
            yield
        _STAGE_CPU[stage] = _STAGE_CPU.get(stage, 0.0) + (time.process_time() - start) * 1000

    pipeline._timed = timed  # type: ignore[assignment]
    return True


def fixture_parties(fixtures: Path) -> Path:
    """A party registry CSV of every tax id and name in the ground truth under ``fixtures``:
    what a finance team's vendor master would hold for these invoices."""
    import csv

    from bench.variants import CACHE

    names: dict[str, str] = {}
    for truth in sorted(fixtures.glob("**/*.json")):
        for page in json.loads(truth.read_text(encoding="utf-8")).get("pages", []):
            fields = page.get("fields", {})
            for side in ("buyer", "seller"):
                tax_id, name = fields.get(f"{side}_tax_id"), fields.get(f"{side}_name")
                if tax_id and name:
                    names[tax_id] = name
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "parties.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["tax_id", "name"])
        writer.writerows(sorted(names.items()))
    return path


def _timed_extractor(
    engine: object,
    timed_levels: set[str] | None,
    records: list[dict[str, Any]],
    fallback: str = "never",
    parties: Path | None = None,
    check_print: bool = False,
) -> Any:
    """An Extractor whose ``extract`` records, for documents in ``timed_levels`` (None: every
    document), CPU and wall time and the per-stage split."""
    from extractor.memory import trim
    from extractor.pipeline import Extractor

    class TimedExtractor(Extractor):
        def extract(self, source: Any, template: Any, **kwargs: Any) -> Any:
            _STAGE_CPU.clear()
            cpu0, wall0 = time.process_time(), time.perf_counter()
            result = super().extract(source, template, **kwargs)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            trim()  # as a service worker does after each batch, outside the timed part
            path = Path(str(source))
            if timed_levels is None or path.parent.name in timed_levels:
                pages = max(1, len(result.pages))
                stage_wall = {
                    s: sum(getattr(p.timings_ms, s, 0.0) for p in result.pages) / pages
                    for s in STAGES
                }
                records.append(
                    {
                        "file": f"{path.parent.name}/{path.name}",
                        "level": path.parent.name,
                        "pages": pages,
                        "cpu_ms": cpu * 1000 / pages,
                        "wall_ms": wall * 1000 / pages,
                        "stage_cpu": {s: _STAGE_CPU.get(s, 0.0) / pages for s in STAGES},
                        "stage_wall": stage_wall,
                    }
                )
            return result

    options: dict[str, Any] = {"check_print": True} if check_print else {}
    try:  # one thread for the fallback's full-page OCR too, as in a service worker
        return TimedExtractor(
            engine=engine, fallback=fallback, threads=1, parties=parties, **options
        )
    except TypeError:  # an extractor without the full-page fallback
        return TimedExtractor(engine=engine)  # type: ignore[arg-type]


def _tally(report: Any) -> dict[str, Any]:
    t = report.overall
    return {
        "fields": t.fields,
        "exact": t.exact,
        "wrong_valid": t.wrong_valid,
        "wrong_flagged": t.wrong_flagged,
        "unmatched_pages": report.unmatched_pages,
        "misses": [
            f"{m.file}:{m.field} {m.expected!r} -> {m.got!r}{' VALID' if m.valid else ''}"
            for m in report.misses
        ],
    }


def _merge(tallies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"fields": 0, "exact": 0, "wrong_valid": 0, "wrong_flagged": 0}
    for t in tallies.values():
        for k in total:
            total[k] += t[k]
    total["by_level"] = tallies
    return total


# -- tasks -------------------------------------------------------------------------------------


def roi_task(spec: dict[str, Any]) -> dict[str, Any]:
    """One end-to-end variant: accuracy from ``evaluate`` on every level in
    ``accuracy_levels``; time per page on the documents of ``timed_levels`` (None: every
    document scored); peak RSS."""
    cpu = setup_worker()
    from bench import variants
    from extractor.evaluate import evaluate

    variant = variants.Variant(**spec["variant"])
    models = {k: Path(v) for k, v in spec["models"].items()}
    variants.apply_patch(variant.patch)
    clocked = _patch_stage_clock()
    engine = variants.ENGINES[variant.engine].build(models)
    records: list[dict[str, Any]] = []
    fixtures = Path(spec["fixtures"])
    parties = fixture_parties(fixtures) if variant.parties else None
    timed = spec["timed_levels"]
    extractor = _timed_extractor(
        engine,
        None if timed is None else set(timed),
        records,
        variant.fallback,
        parties,
        variant.check_print,
    )
    warm_levels = spec["accuracy_levels"] if timed is None else timed
    warm = next(p for level in warm_levels for p in sorted((fixtures / level).rglob("*.jpg")))
    extractor.extract(warm, "vat_invoice")
    if variant.fallback != "never":  # its model and the form's labels, once per process
        extractor.reference_labels(extractor.templates.get("vat_invoice"))
    records.clear()
    load_start = load()
    tallies = {}
    for level in spec["accuracy_levels"]:
        tallies[level] = _tally(evaluate(fixtures / level, extractor=extractor))
    out = {
        "variant": spec["variant"],
        "label": variant.label,
        "cpu": cpu,
        "stage_cpu_clocked": clocked,
        "records": records,
        "accuracy": _merge(tallies),
        "rss_mb": peak_rss_mb(),
        "load": [load_start, load()],
        "engine": variants.describe(engine),
    }
    stats = variants.cascade_stats(engine)
    if stats is not None:
        out["cascade"] = stats
    return out


def paired_task(spec: dict[str, Any]) -> dict[str, Any]:
    """The ROI path as shipped, the ROI path with each variant of ``spec["also"]`` and
    full-page OCR on the same pages, in turn page by page in one process, so that all see the
    same machine load."""
    cpu = setup_worker()
    from bench import variants
    from bench.fullpage import fullpage_engine, read_page

    clocked = _patch_stage_clock()
    models = {k: Path(v) for k, v in spec.get("models", {}).items()}
    docs = [Path(p) for p in spec["docs"]]
    levels = {d.parent.name for d in docs}
    roi_records: list[dict[str, Any]] = []
    shipped_engine = variants.ENGINES["shipped"].build(models)
    shipped = _timed_extractor(shipped_engine, levels, roi_records)
    others = []
    for also_spec in spec.get("also", []):
        variant = variants.Variant(**also_spec)
        records: list[dict[str, Any]] = []
        engine = variants.ENGINES[variant.engine].build(models)
        parties = fixture_parties(docs[0].parent.parent) if variant.parties else None
        extractor = _timed_extractor(
            engine, levels, records, variant.fallback, parties, variant.check_print
        )
        others.append((variant, engine, extractor, records))
    full = fullpage_engine(threads=1)

    def run_roi(doc: Path) -> None:
        shipped.extract(doc, "vat_invoice")
        for variant, _engine, extractor, _records in others:
            undo = variants.apply_patch(variant.patch)
            extractor.extract(doc, "vat_invoice")
            undo()

    run_roi(docs[0])
    read_page(full, docs[0])
    roi_records.clear()
    for *_, records in others:
        records.clear()
    full_records = []
    load_start = load()
    for doc in docs:
        run_roi(doc)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        lines = read_page(full, doc)
        full_records.append(
            {
                "file": f"{doc.parent.name}/{doc.name}",
                "cpu_ms": (time.process_time() - cpu0) * 1000,
                "wall_ms": (time.perf_counter() - wall0) * 1000,
                "lines": lines,
            }
        )
    return {
        "cpu": cpu,
        "stage_cpu_clocked": clocked,
        "roi": roi_records,
        "roi_engine": variants.describe(shipped_engine),
        "also": [
            {
                "key": variant.key,
                "label": variant.label,
                "engine": variants.describe(engine),
                "records": records,
            }
            for variant, engine, _extractor, records in others
        ],
        "full": full_records,
        "load": [load_start, load()],
    }


def fullpage_rss_task(spec: dict[str, Any]) -> dict[str, Any]:
    """Peak RSS of a process that only runs full-page OCR, after ``docs``."""
    setup_worker()
    from bench.fullpage import fullpage_engine, read_page

    full = fullpage_engine(threads=1)
    for doc in spec["docs"]:
        read_page(full, Path(doc))
    return {"rss_mb": peak_rss_mb(), "pages": len(spec["docs"]), "load": load()}


LETTER_SEEDS = [7000, 7001]
"""The invoices of the bench's PDF with a typed cover letter between them."""


def _letter_page(text: Any, rounds: int) -> dict[str, Any]:
    """A typed cover letter between two born-digital invoices (page 2 of
    ``digital_pdf(LETTER_SEEDS, letter_at=1)``), fallback auto: CPU ms to tell it is no invoice
    from its text layer, and on the image path (``text_layer=False``: a glance of full-page OCR
    at its lines' starts), in turn, ``rounds`` times; and (``whole``) full-page OCR reading
    its rendered page whole, as the image path did before the glance."""
    from extractor.loading import iter_pages
    from extractor.pipeline import Extractor
    from extractor.synth.digital import TEMPLATE, digital_pdf

    pdf, _ = digital_pdf(LETTER_SEEDS, letter_at=1)
    (rendered,) = iter_pages(pdf, pages={1})
    image = rendered.image
    paths = {  # full-page OCR on one thread, as every CPU figure of the bench is one core's
        "text_layer": Extractor(text.engine, fallback="auto", threads=1),
        "ocr": Extractor(text.engine, fallback="auto", text_layer=False, threads=1),
    }
    cpu_ms = {name: 0.0 for name in paths}
    status = {}
    for round_ in range(rounds + 1):  # the first untimed: every model loaded, caches warm
        for name, extractor in paths.items():
            cpu0 = time.process_time()
            (page,) = extractor.extract(pdf, TEMPLATE, pages=[2]).pages
            if round_:
                cpu_ms[name] += (time.process_time() - cpu0) * 1000
            status[name] = page.status
    whole = paths["ocr"].fullpage_ocr()
    cpu0 = time.process_time()
    for _ in range(rounds):
        whole(image)
    times = {name: {"cpu_ms": cpu_ms[name] / rounds, "status": status[name]} for name in paths}
    return {**times, "whole": {"cpu_ms": (time.process_time() - cpu0) * 1000 / rounds}}


def digital_task(spec: dict[str, Any]) -> dict[str, Any]:
    """Born-digital PDFs: each page from its text layer, then the same page down the OCR path
    (render, register, crop, recognise; ``Extractor(text_layer=False)``), in turn, ``rounds``
    times, in one process; the fields each path gets right against the PDF's ground truth."""
    cpu = setup_worker()
    from extractor.pipeline import Extractor

    text = Extractor(threads=1, fallback="never")
    ocr = Extractor(text.engine, fallback="never", text_layer=False)
    docs = [Path(p) for p in spec["docs"]]
    truths = [json.loads(d.with_suffix(".json").read_text(encoding="utf-8")) for d in docs]
    paths = {"text_layer": text, "ocr": ocr}
    for extractor in paths.values():  # models loaded, first page warm
        extractor.extract(docs[0], truths[0]["template"])
    cpu_ms = {name: 0.0 for name in paths}
    wall_ms = {name: 0.0 for name in paths}
    right = {name: 0 for name in paths}
    sources: dict[str, set[str]] = {name: set() for name in paths}
    pages = fields = 0
    for round_ in range(spec["rounds"]):
        for doc, truth in zip(docs, truths, strict=True):
            for name, extractor in paths.items():
                cpu0, wall0 = time.process_time(), time.perf_counter()
                result = extractor.extract(doc, truth["template"])
                cpu_ms[name] += (time.process_time() - cpu0) * 1000
                wall_ms[name] += (time.perf_counter() - wall0) * 1000
                if round_:
                    continue
                got = {p.page - 1: p.fields for p in result.pages}
                for expected in truth["pages"]:
                    for field, value in expected["fields"].items():
                        found = got.get(expected["page"], {}).get(field)
                        right[name] += found is not None and found.value == value
                        sources[name].add(found.source if found is not None else "missing")
            if not round_:
                pages += len(truth["pages"])
                fields += sum(len(p["fields"]) for p in truth["pages"])
    read = pages * spec["rounds"]
    return {
        "letter": _letter_page(text, spec["rounds"]),
        "cpu": cpu,
        "docs": len(docs),
        "pages": pages,
        "rounds": spec["rounds"],
        "fields": fields,
        "paths": {
            name: {
                "cpu_ms": cpu_ms[name] / read,
                "wall_ms": wall_ms[name] / read,
                "right": right[name],
                "sources": sorted(sources[name]),
            }
            for name in paths
        },
        "load": load(),
    }


RECEIVED_SEED = 2026
RECEIVED_COUNTS = {"clean": 12, "light": 12, "medium": 12}
FULL_PAGE_EVERY = 3


def received_docs(counts: dict[str, int] = RECEIVED_COUNTS) -> list[Path]:
    """A night's batch of the invoices one company received (the same buyer on every page, a
    few suppliers again and again: :func:`extractor.synth.generate.write_received_set`), in
    ``.cache/bench/received-*``; written once, its pages in batch order."""
    from bench.variants import CACHE
    from extractor.synth.generate import write_received_set

    folder = CACHE / "-".join(
        ["received", str(RECEIVED_SEED), *(f"{k}{v}" for k, v in counts.items())]
    )
    docs = sorted(folder.glob("*/*.jpg"), key=lambda p: p.name)
    if len(docs) != sum(counts.values()):
        written = write_received_set(folder, RECEIVED_SEED, counts)
        docs = sorted((p for p in written if p.suffix == ".jpg"), key=lambda p: p.name)
    return docs


def received_task(spec: dict[str, Any]) -> dict[str, Any]:
    """The batch of :func:`received_docs` in its order, in one process, page by page in turn:
    the ROI path as shipped, the ROI path learning the parties as it goes (what ``roi batch``
    does), and, on every :data:`FULL_PAGE_EVERY`-th page, full-page OCR; the fields each ROI
    path gets right against the truth."""
    cpu = setup_worker()
    from bench.fullpage import fullpage_engine, read_page
    from extractor.pipeline import Extractor

    docs = [Path(p) for p in spec["docs"]]
    shipped = Extractor(threads=1, fallback="never")
    paths = {
        "shipped": shipped,
        "learning": Extractor(shipped.engine, fallback="never", learn_parties=True),
    }
    full = fullpage_engine(threads=1)
    shipped.extract(docs[0], "vat_invoice")  # models loaded (the engine is shared)
    read_page(full, docs[0])
    load_start = load()
    records: dict[str, list[dict[str, Any]]] = {name: [] for name in paths}
    full_records = []
    for n, doc in enumerate(docs):
        truth = json.loads(doc.with_suffix(".json").read_text(encoding="utf-8"))
        expected = truth["pages"][0]["fields"]
        for name, extractor in paths.items():
            cpu0 = time.process_time()
            result = extractor.extract(doc, "vat_invoice")
            cpu_ms = (time.process_time() - cpu0) * 1000
            got = result.pages[0].fields
            wrong = [f for f, value in expected.items() if f not in got or got[f].value != value]
            records[name].append(
                {
                    "file": f"{doc.parent.name}/{doc.name}",
                    "cpu_ms": cpu_ms,
                    "fields": len(expected),
                    "right": len(expected) - len(wrong),
                    "wrong_valid": sum(f in got and got[f].valid for f in wrong),
                }
            )
        if n % FULL_PAGE_EVERY == FULL_PAGE_EVERY - 1:
            cpu0 = time.process_time()
            read_page(full, doc)
            full_records.append({"index": n, "cpu_ms": (time.process_time() - cpu0) * 1000})
    return {
        "cpu": cpu,
        "docs": [f"{d.parent.name}/{d.name}" for d in docs],
        "parties": len({tax_id for d in docs for tax_id in _parties_of(d)}),
        "learned": len(paths["learning"].parties or ()),
        "paths": records,
        "full": full_records,
        "load": [load_start, load()],
    }


def _parties_of(doc: Path) -> list[str]:
    fields = json.loads(doc.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]["fields"]
    return [fields["buyer_tax_id"], fields["seller_tax_id"]]


def calibration_task(spec: dict[str, Any]) -> dict[str, Any]:
    """Crops of synthetic invoices (seeds the fixtures do not use) for int8 calibration, and
    the int8 models built from them."""
    setup_worker()
    from bench import variants

    out: dict[str, Any] = {"models": {}, "errors": {}}
    for key, ops in (("int8-dyn-matmul", ["MatMul"]), ("int8-dyn-all", None)):
        try:
            out["models"][key] = str(variants.int8_dynamic_model(ops))
        except Exception as exc:  # onnx missing, a quantiser error: reported, not fatal
            out["errors"][key] = f"{type(exc).__name__}: {exc}"
    try:
        crops = _synthetic_crops(spec["calibration_pages"])
        out["calibration_crops"] = len(crops)
        out["models"]["int8-static"] = str(variants.int8_static_model(crops))
    except Exception as exc:
        out["errors"]["int8-static"] = f"{type(exc).__name__}: {exc}"
    return out


def _synthetic_crops(pages: int) -> list[Any]:
    from extractor.loading import Page
    from extractor.pipeline import Extractor, PreparedPage
    from extractor.result import Timings
    from extractor.synth.generate import generate_invoice

    class NoEngine:
        name = "none"

        def recognize(self, crops: Any, allowlists: Any) -> list[Any]:
            raise AssertionError("not called")

    extractor = Extractor(engine=NoEngine())  # type: ignore[arg-type]
    template = extractor.templates.get("vat_invoice")
    crops = []
    for i in range(pages):
        level = ("clean", "light", "medium")[i % 3]
        image, _ = generate_invoice(90_000_001 + i, level)
        prepared = extractor.prepare(Page(0, image, None), template, Timings())
        if isinstance(prepared, PreparedPage):
            crops.extend(prepared.images)
    return crops


def components_task(spec: dict[str, Any]) -> dict[str, Any]:
    """Component micro-benchmarks on the timed pages: recognition alone (engines, session
    options, width buckets, batching, threads) on the crops as the pipeline cuts them;
    registration variants against the fixtures' true page-to-image maps; decoding."""
    cpu = setup_worker()
    from bench import variants
    from extractor.engines import ppocr
    from extractor.loading import iter_pages, read_source
    from extractor.pipeline import Extractor, PreparedPage
    from extractor.result import Timings

    docs = [Path(p) for p in spec["docs"]]
    models = {k: Path(v) for k, v in spec["models"].items()}
    base = variants.ENGINES["small"].build(models)
    extractor = Extractor(engine=base, fallback="never")
    template = extractor.templates.get("vat_invoice")
    pages = []
    for doc in docs:
        page = next(iter_pages(read_source(doc)[0]))
        prepared = extractor.prepare(page, template, Timings())
        if isinstance(prepared, PreparedPage):
            pages.append((doc, page.image, prepared.images, prepared.allowlists))
    out: dict[str, Any] = {"cpu": cpu, "pages": len(pages), "load": [load()]}
    out["columns_per_page"] = sum(variants.crop_columns(p[2]) for p in pages) / len(pages)
    out["crops_per_page"] = sum(len(p[2]) for p in pages) / len(pages)

    def rec_time(engine: Any, mode: str = "page") -> tuple[float, float, list[str]]:
        engine.recognize(pages[0][2], pages[0][3])
        texts: list[str] = []
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _doc, _image, crops, allow in pages:
            if mode == "page":
                texts += [r.text for r in engine.recognize(crops, allow)]
            else:
                for c, a in zip(crops, allow, strict=True):
                    texts += [r.text for r in engine.recognize([c], [a])]
        n = len(pages)
        return (
            (time.process_time() - cpu0) * 1000 / n,
            (time.perf_counter() - wall0) * 1000 / n,
            texts,
        )

    rec: list[dict[str, Any]] = []
    ref_cpu, ref_wall, reference = rec_time(base)

    def row(key: str, label: str, result: tuple[float, float, list[str]]) -> None:
        cpu_ms, wall_ms, texts = result
        rec.append(
            {
                "key": key,
                "label": label,
                "cpu_ms": cpu_ms,
                "wall_ms": wall_ms,
                "differ": sum(a != b for a, b in zip(reference, texts, strict=True)),
                "crops": len(reference),
                "load": load(),
            }
        )

    row(
        "small",
        variants.ENGINES["small"].label + " (batched per width bucket)",
        (ref_cpu, ref_wall, reference),
    )
    row("small-one-by-one", "one crop per session.run", rec_time(base, mode="crop"))
    base.max_batch = 1
    row("small-max-batch-1", "max_batch=1 (bucket order, no padding)", rec_time(base))
    base.max_batch = 32
    for step in (8, 16, 64, 128):
        variants.width_bucket(step)
        row(f"bucket-{step}", f"width bucket {step} px (shipped: 32)", rec_time(base))
    variants.width_bucket(32)
    for key, variant in variants.ENGINES.items():
        if key == "small" or any(n not in models for n in variant.needs):
            continue
        try:
            engine = variant.build(models)
        except Exception as exc:
            rec.append(
                {"key": key, "label": variant.label, "error": f"{type(exc).__name__}: {exc}"}
            )
            continue
        row(key, variant.label, rec_time(engine))
        stats = variants.cascade_stats(engine)
        if stats is not None:
            rec[-1]["retried"] = stats["retried"] / max(1, stats["crops"])
        del engine
    # ORT's own thread pool over both cores (what threads=0, the shipped default, gives here)
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    threaded = ppocr.PPOCRRecognizer(threads=0, cpu_runtime="onnxruntime")
    row("small-threads-0", "threads=0 (ORT default: one per core), unpinned", rec_time(threaded))
    os.sched_setaffinity(0, {cpu})
    out["recognition"] = rec
    out["registration"] = _registration_variants(pages, template)
    out["decode"] = _decode_variants(docs)
    out["pdf_scans"] = _pdf_scan_variants(sorted(Path(p) for p in spec.get("pdfs", [])))
    out["load"].append(load())
    return out


def _registration_variants(pages: list[Any], template: Any) -> list[dict[str, Any]]:
    """CPU time of ``register`` and its error against the fixture's true page-to-image map (max
    over the field-box centres, page px), for the shipped ECC and the patched variants."""
    import numpy as np

    from bench import variants
    from extractor import registration

    ppm = template.px_per_mm
    centres = np.array(
        [[f.box.x + f.box.w / 2, f.box.y + f.box.h / 2, 1.0] for f in template.fields]
    ).T
    truths = [
        np.array(json.loads(doc.with_suffix(".json").read_text())["degradations"]["page_to_image"])
        for doc, *_ in pages
    ]
    rows = []
    for key in REGISTRATION_PATCHES:
        undo = variants.apply_patch(key)
        registration.register(pages[0][1], template)
        errors, cpu_ms = [], []
        for (_doc, image, *_), truth in zip(pages, truths, strict=True):
            cpu0 = time.process_time()
            alignment = registration.register(image, template)
            cpu_ms.append((time.process_time() - cpu0) * 1000)
            if not alignment.matched or alignment.homography is None:
                errors.append(float("inf"))
                continue
            got = alignment.homography @ np.diag([ppm, ppm, 1.0]) @ centres
            want = truth @ centres
            diff = got[:2] / got[2] - want[:2] / want[2]
            errors.append(float(np.abs(diff).max()))
        undo()
        rows.append(
            {
                "key": key or "shipped",
                "label": variants.patch_label(key) if key else SHIPPED_REGISTRATION,
                "cpu_ms": float(np.median(cpu_ms)),
                "error_px_median": float(np.median(errors)),
                "error_px_p90": float(np.percentile(errors, 90)),
                "error_px_max": float(np.max(errors)),
                "load": load(),
            }
        )
    return rows


def _decode_variants(docs: list[Path]) -> list[dict[str, Any]]:
    import cv2
    import numpy as np

    blobs = [np.frombuffer(d.read_bytes(), np.uint8) for d in docs]
    rows = []
    for key, flag in [
        ("full", cv2.IMREAD_COLOR),
        ("reduced-2", cv2.IMREAD_REDUCED_COLOR_2),
        ("reduced-4", cv2.IMREAD_REDUCED_COLOR_4),
    ]:
        cpu0 = time.process_time()
        for blob in blobs:
            cv2.imdecode(blob, flag)
        rows.append(
            {"key": key, "cpu_ms": (time.process_time() - cpu0) * 1000 / len(blobs), "load": load()}
        )
    return rows


def _pdf_scan_variants(pdfs: list[Path], rounds: int = 3) -> dict[str, Any]:
    """The fixtures' scanned PDF pages (those without a text layer) loaded as shipped (the
    embedded scan, :mod:`extractor.pdf_scans`) and rendered at the loader's dpi (before)."""
    import pymupdf

    from extractor import loading

    scans = [
        (data, page.number)
        for data in (path.read_bytes() for path in pdfs)
        for page in pymupdf.open(stream=data, filetype="pdf")
        if not page.get_text("words")
    ]
    zoom = loading.DEFAULT_DPI / 72

    def shipped(data: bytes, index: int) -> None:
        for page in loading.iter_pages(data, pages={index}):
            page.image  # noqa: B018 (decoded here)

    def rendered(data: bytes, index: int) -> None:
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            loading._render(doc[index], index, zoom)

    out: dict[str, Any] = {"pages": len(scans), "load": load()}
    for key, load_page in (("embedded", shipped), ("rendered", rendered)):
        cpu0 = time.process_time()
        for _ in range(rounds):
            for data, index in scans:
                load_page(data, index)
        out[key] = (time.process_time() - cpu0) * 1000 / (rounds * len(scans))
    return out
