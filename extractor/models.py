"""Model files roi makes from what packages ship (``roi models convert``).

``convert_ppocr_onnx`` turns a PP-OCR recognition ONNX model (by default the PP-OCRv6 rec that
the ``rapidocr`` wheel ships) into a Paddle inference model for the ``paddle`` engine, with
``x2paddle``, and checks the result against ONNX Runtime before keeping it. The output folder is
laid out like a PaddleOCR 3 / PaddleX export, so either side can load it:

* ``inference.json`` + ``inference.pdiparams``: the program (PIR) and its weights;
* ``inference.yml``: model name, input shape and ``character_dict`` in PaddleX's format;
* ``characters.txt``: the character list from the ONNX metadata, one per line (class 0 is the
  CTC blank, then these, then a space);
* ``roi_model.json``: where it came from (file, SHA-256, versions) and the measured difference.

Nothing is downloaded: x2paddle's usage report (``disable_feedback``) is off.

x2paddle 1.6.0 predates onnx 1.16+: it imports ``onnx.mapping`` (removed) and reads
``onnx.version`` without importing it. Both are supplied here before x2paddle is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from extractor.errors import EngineError, ModelNotFoundError

MODELS_DIR_ENV = "ROI_MODELS_DIR"
PADDLE_MODEL_DIR_ENV = "ROI_PADDLE_MODEL_DIR"
MANIFEST = "roi_model.json"
CHARACTERS = "characters.txt"
_INSTALL_HINT = "pip install 'roi[paddle]' (or make setup-paddle)"
# PaddleX's name for the model the rapidocr wheel ships as PP-OCRv6_rec_small.onnx.
_PADDLEX_NAMES = {"PP-OCRv6": "PP-OCRv6_small_rec", "PP-OCRv4": "PP-OCRv4_mobile_rec"}
# Largest difference in class probabilities accepted between Paddle and ONNX Runtime.
TOLERANCE = 1e-3


def models_dir() -> Path:
    """Where roi keeps the models it makes: ``$ROI_MODELS_DIR`` or ``~/.cache/roi/models``."""
    env = os.environ.get(MODELS_DIR_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "roi" / "models"


def default_paddle_model_dir(model: str = "PP-OCRv6") -> Path:
    """The folder ``roi models convert --model MODEL`` writes by default."""
    return models_dir() / f"{model}_rec_paddle"


@dataclass(frozen=True)
class Conversion:
    """What ``convert_ppocr_onnx`` did."""

    out_dir: str
    source: str
    source_sha256: str
    classes: int
    max_abs_diff: float
    argmax_agreement: float
    seconds: float
    reused: bool = False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _onnx_characters(onnx_path: Path, keys_path: Path | None) -> list[str]:
    if keys_path is not None:
        return keys_path.read_text(encoding="utf-8").splitlines()
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    if "character" not in meta:
        raise ModelNotFoundError(
            f"{onnx_path} stores no character list in its metadata; pass --keys /path/to/keys.txt"
        )
    return meta["character"].splitlines()


@contextlib.contextmanager
def _logging_to(stream: io.StringIO) -> Iterator[None]:
    """Route the root logger (x2paddle logs its progress there) into ``stream`` for a while."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = logging.StreamHandler(stream)
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)


@contextlib.contextmanager
def _all_output_to(stream: io.StringIO) -> Iterator[None]:
    """x2paddle's prints (stdout and stderr) and log records, into ``stream``."""
    with (
        contextlib.redirect_stdout(stream),
        contextlib.redirect_stderr(stream),
        _logging_to(stream),
    ):
        yield


def _x2paddle_onnx2paddle() -> types.FunctionType:
    """x2paddle's ONNX converter, importable beside a current onnx."""
    try:
        import onnx

        with warnings.catch_warnings():  # deprecated, but x2paddle reads onnx.version.version
            warnings.simplefilter("ignore", DeprecationWarning)
            import onnx.version
    except ImportError as exc:
        raise EngineError(f"roi models convert needs onnx ({exc}): {_INSTALL_HINT}") from exc
    if "onnx.mapping" not in sys.modules:
        from onnx import TensorProto, helper

        mapping = types.ModuleType("onnx.mapping")
        table: dict[int, np.dtype] = {}
        for value in TensorProto.DataType.values():
            with contextlib.suppress(Exception):
                table[int(value)] = np.dtype(helper.tensor_dtype_to_np_dtype(value))
        mapping.TENSOR_TYPE_TO_NP_TYPE = table  # type: ignore[attr-defined]
        sys.modules["onnx.mapping"] = mapping
        onnx.mapping = mapping  # type: ignore[attr-defined]
    try:
        # x2paddle calls logging.basicConfig(INFO) on import: keep the process's logging as it was
        with warnings.catch_warnings(), _logging_to(io.StringIO()):
            warnings.simplefilter("ignore", UserWarning)  # paddle's extension helper: no ccache
            from x2paddle.convert import onnx2paddle
    except ImportError as exc:
        raise EngineError(
            f"roi models convert needs x2paddle and paddlepaddle ({exc}): {_INSTALL_HINT}"
        ) from exc
    return onnx2paddle  # type: ignore[return-value]


def _inference_yml(model_name: str, height: int, characters: list[str]) -> str:
    """PaddleX's ``inference.yml`` for a CTC text recogniser (what PaddleOCR 3 exports)."""
    import yaml

    config = {
        "Global": {"model_name": model_name},
        "PreProcess": {
            "transform_ops": [
                {"DecodeImage": {"channel_first": False, "img_mode": "BGR"}},
                {"MultiLabelEncode": {"gtc_encode": "NRTRLabelEncode"}},
                {"RecResizeImg": {"image_shape": [3, height, 320]}},
                {"KeepKeys": {"keep_keys": ["image", "label_ctc", "label_gtc", "length"]}},
            ]
        },
        "PostProcess": {"name": "CTCLabelDecode", "character_dict": characters},
    }
    return yaml.safe_dump(config, allow_unicode=True, sort_keys=False)


def compare_with_onnx(
    model_dir: Path, onnx_path: Path, height: int = 48, seed: int = 0
) -> tuple[float, float]:
    """Largest probability difference and argmax agreement, Paddle vs ONNX Runtime, on random
    inputs of a few batch sizes and widths."""
    import onnxruntime as ort

    from extractor.engines.paddle import create_predictor, find_model_files, run_predictor

    program, params = find_model_files(model_dir)
    predictor = create_predictor(program, params)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    input_name = session.get_inputs()[0].name
    rng = np.random.default_rng(seed)
    worst, agree, total = 0.0, 0, 0
    for batch, width in ((1, 32), (3, 320), (2, 960)):
        x = rng.uniform(-1.0, 1.0, (batch, 3, height, width)).astype(np.float32)
        got = run_predictor(predictor, x)
        want = session.run(None, {input_name: x})[0]
        if got.shape != want.shape:
            raise EngineError(f"converted model outputs {got.shape}, the ONNX model {want.shape}")
        worst = max(worst, float(np.abs(got - want).max()))
        agree += int((got.argmax(-1) == want.argmax(-1)).sum())
        total += got.shape[0] * got.shape[1]
    return worst, agree / total


def convert_ppocr_onnx(
    model: str = "PP-OCRv6",
    onnx_path: str | Path | None = None,
    out_dir: str | Path | None = None,
    keys_path: str | Path | None = None,
    force: bool = False,
    log: io.TextIOBase | None = None,
) -> Conversion:
    """Convert a PP-OCR rec ONNX model into a checked Paddle inference model folder.

    Does nothing when ``out_dir`` already holds a conversion of the same file (by SHA-256),
    unless ``force``. The new folder replaces the old one only once it has been checked.
    """
    from extractor.engines.ppocr import INPUT_HEIGHT, packaged_model_path

    source = Path(onnx_path) if onnx_path is not None else packaged_model_path(model)
    if not source.is_file():
        raise ModelNotFoundError(f"ONNX model {source} not found")
    out = Path(out_dir) if out_dir is not None else default_paddle_model_dir(model)
    sha = _sha256(source)
    manifest_path = out / MANIFEST
    if manifest_path.is_file() and not force:
        with contextlib.suppress(ValueError, OSError):
            previous = json.loads(manifest_path.read_text(encoding="utf-8"))
            if previous.get("source_sha256") == sha and (out / "inference.pdiparams").is_file():
                fields = {k: previous[k] for k in Conversion.__dataclass_fields__ if k in previous}
                return Conversion(**{**fields, "out_dir": str(out), "reused": True})

    characters = _onnx_characters(source, Path(keys_path) if keys_path is not None else None)
    onnx2paddle = _x2paddle_onnx2paddle()
    start = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        raw = work / "x2paddle"
        captured = io.StringIO()
        try:
            with _all_output_to(captured):
                onnx2paddle(str(source), str(raw), disable_feedback=True)
        except Exception as exc:
            raise EngineError(
                f"x2paddle could not convert {source}: {exc}\n{captured.getvalue()[-2000:]}"
            ) from exc
        if log is not None:
            log.write(captured.getvalue())
        exported = raw / "inference_model"
        program = next(
            (exported / n for n in ("model.json", "model.pdmodel") if (exported / n).is_file()),
            None,
        )
        if program is None or not (exported / "model.pdiparams").is_file():
            raise EngineError(
                f"x2paddle wrote no inference model for {source}:\n{captured.getvalue()[-2000:]}"
            )
        staged = work / "model"
        staged.mkdir()
        shutil.move(program, staged / f"inference{program.suffix}")
        shutil.move(exported / "model.pdiparams", staged / "inference.pdiparams")
        (staged / CHARACTERS).write_text("\n".join(characters) + "\n", encoding="utf-8")
        model_name = _PADDLEX_NAMES.get(model, f"{model}_rec")
        (staged / "inference.yml").write_text(
            _inference_yml(model_name, INPUT_HEIGHT, characters), encoding="utf-8"
        )
        worst, agreement = compare_with_onnx(staged, source, INPUT_HEIGHT)
        if worst > TOLERANCE:
            raise EngineError(
                f"converted model differs from {source}: max probability difference {worst:.2e} "
                f"(tolerance {TOLERANCE:.0e}); argmax agreement {agreement:.4f}"
            )
        result = Conversion(
            out_dir=str(out),
            source=str(source),
            source_sha256=sha,
            classes=len(characters) + 2,
            max_abs_diff=worst,
            argmax_agreement=agreement,
            seconds=round(time.perf_counter() - start, 2),
        )
        manifest = asdict(result) | {
            "model": model,
            "paddlex_model_name": model_name,
            "input_height": INPUT_HEIGHT,
            "versions": _versions(),
            "converted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        manifest.pop("reused")
        (staged / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        shutil.move(staged, out)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str] = {}
    for package in ("paddlepaddle", "paddlepaddle-gpu", "x2paddle", "onnx", "rapidocr"):
        with contextlib.suppress(PackageNotFoundError):
            found[package] = version(package)
    return found


__all__ = [
    "MODELS_DIR_ENV",
    "PADDLE_MODEL_DIR_ENV",
    "Conversion",
    "compare_with_onnx",
    "convert_ppocr_onnx",
    "default_paddle_model_dir",
    "models_dir",
]
