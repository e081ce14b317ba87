"""PaddleOCR (PP-OCR) text-line recognition in Paddle Inference, with no detection.

The model is a Paddle inference folder of a PP-OCR CTC recogniser, found in this order:

1. ``model_dir`` passed explicitly;
2. else ``$ROI_PADDLE_MODEL_DIR``;
3. else the folder ``roi models convert`` writes (``~/.cache/roi/models/PP-OCRv6_rec_paddle``,
   or under ``$ROI_MODELS_DIR``): the PP-OCRv6 rec ONNX of the ``rapidocr`` wheel converted with
   x2paddle and checked against ONNX Runtime (see :mod:`extractor.models`).

The folder holds the program (``inference.json`` from Paddle 3, or ``inference.pdmodel``; also
``model.*``) and its ``.pdiparams``. Its character list comes from ``keys_path``, else
``characters.txt`` in the folder, else ``PostProcess.character_dict`` of ``inference.yml`` (what
PaddleOCR 3 / PaddleX export); the input height from ``height``, else ``inference.yml``
(``RecResizeImg``), else 48. So a PaddleOCR model folder, e.g. a server rec model, works as it
is; a PaddleOCR 2 folder (``inference.pdmodel`` without a yml) needs ``keys_path`` (its
``ppocr_keys_v1.txt``) and, for 32-pixel models such as PP-OCRv2, ``height=32``.

Crops go through in width-bucketed batches, as in the ``ppocr`` engine, and are decoded the same
way: CTC greedy with the field's allowlist as a mask on the class scores before the argmax;
per-character confidences are the raw (unmasked) probabilities of the chosen classes.

On a GPU (``use_gpu=True``, needs a CUDA build of Paddle: ``paddlepaddle-gpu``) the predictor can
hand subgraphs to TensorRT (``tensorrt=True``, fp16 by default). Engines are serialised to
``trt_cache_dir`` and reused on the next start when ``trt_use_static`` is set: for a Paddle 3
(PIR, ``.json``) program through ``paddle.tensorrt.export.convert`` (what PaddleX does), for a
legacy ``.pdmodel`` program through ``Config.enable_tensorrt_engine(use_static=...)``.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from extractor.engines.ctc import MAX_WIDTH, WIDTH_STEP, CTCLineReader
from extractor.errors import EngineError, ModelNotFoundError

MODEL_DIR_ENV = "ROI_PADDLE_MODEL_DIR"
DEFAULT_HEIGHT = 48
_INSTALL_HINT = "pip install 'roi[paddle]' (or make setup-paddle)"
_PROGRAM_FILES = tuple(
    f"{stem}{ext}" for stem in ("inference", "model") for ext in (".json", ".pdmodel")
)


def _import_paddle_inference() -> Any:
    try:
        import paddle.inference as paddle_inference
    except ImportError as exc:
        raise EngineError(
            f"paddle engine needs paddlepaddle ({exc}): run {_INSTALL_HINT}; on a GPU, "
            "paddlepaddle-gpu 3.x from PaddlePaddle's own package index instead"
        ) from exc
    return paddle_inference


def resolve_model_dir(model_dir: str | Path | None) -> Path:
    """Where the model is looked for: argument, ``$ROI_PADDLE_MODEL_DIR``, converted default."""
    if model_dir is not None:
        return Path(model_dir).expanduser()
    env = os.environ.get(MODEL_DIR_ENV)
    if env:
        return Path(env).expanduser()
    from extractor.models import default_paddle_model_dir

    return default_paddle_model_dir()


def find_model_files(model_dir: Path) -> tuple[Path, Path]:
    """The program and weights files of a Paddle inference model folder."""
    for name in _PROGRAM_FILES:
        program = model_dir / name
        params = program.with_suffix(".pdiparams")
        if program.is_file() and params.is_file():
            return program, params
    if not model_dir.is_dir():
        raise ModelNotFoundError(
            f"paddle: model folder {model_dir} not found. Make it from the rapidocr wheel's "
            f"PP-OCRv6 rec with `roi models convert` (needs {_INSTALL_HINT}), or pass "
            f"model_dir=/path/to/a/PaddleOCR/rec/inference/folder (or set {MODEL_DIR_ENV})."
        )
    raise ModelNotFoundError(
        f"paddle: {model_dir} holds no Paddle inference model (inference.json or "
        "inference.pdmodel, with inference.pdiparams); run `roi models convert --force` to "
        "remake the converted one, or point model_dir at a PaddleOCR rec inference folder"
    )


def read_model_info(model_dir: Path, keys_path: str | Path | None) -> tuple[list[str], int]:
    """The model's character list (without blank and space) and input height."""
    config: dict[str, Any] = {}
    yml = model_dir / "inference.yml"
    if yml.is_file():
        import yaml

        try:
            loaded = yaml.safe_load(yml.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise EngineError(f"paddle: cannot read {yml}: {exc}") from exc
        config = loaded if isinstance(loaded, dict) else {}
    post = config.get("PostProcess") or {}
    if post.get("name") not in (None, "CTCLabelDecode"):
        raise EngineError(
            f"paddle: {model_dir} is a {post.get('name')} model; only CTC recognisers "
            "(PostProcess CTCLabelDecode, as PP-OCR rec models) are supported"
        )
    height = DEFAULT_HEIGHT
    for op in (config.get("PreProcess") or {}).get("transform_ops") or []:
        if isinstance(op, dict) and "RecResizeImg" in op:
            shape = (op["RecResizeImg"] or {}).get("image_shape") or []
            if len(shape) == 3:
                height = int(shape[1])
    if keys_path is not None:
        chars = Path(keys_path).read_text(encoding="utf-8").splitlines()
    elif (model_dir / "characters.txt").is_file():
        chars = (model_dir / "characters.txt").read_text(encoding="utf-8").splitlines()
    elif post.get("character_dict"):
        chars = [str(c) for c in post["character_dict"]]
    else:
        raise ModelNotFoundError(
            f"paddle: no character list for {model_dir}: no characters.txt, no "
            "PostProcess.character_dict in inference.yml; pass keys_path=/path/to/keys.txt"
        )
    return chars, height


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what native code prints to stdout to stderr instead (Paddle's oneDNN passes print
    a line per op on a predictor's first run, which would corrupt ``roi extract --json``)."""
    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)


def run_predictor(predictor: Any, batch: np.ndarray) -> np.ndarray:
    """One run of a single-input, single-output predictor."""
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(list(batch.shape))
    handle.copy_from_cpu(np.ascontiguousarray(batch, dtype=np.float32))
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


def _check_gpu(tensorrt: bool) -> None:
    import paddle

    if not paddle.device.is_compiled_with_cuda():
        raise EngineError(
            f"paddle: use_gpu needs a CUDA build of Paddle, but paddlepaddle "
            f"{paddle.__version__} is the CPU build. Install paddlepaddle-gpu 3.x from "
            "PaddlePaddle's own package index (PyPI's paddlepaddle-gpu stops at 2.6) in place "
            "of paddlepaddle."
        )
    if paddle.device.cuda.device_count() == 0:
        raise EngineError("paddle: use_gpu is set but no CUDA device is visible")
    if tensorrt:
        import paddle.inference as paddle_inference

        if tuple(paddle_inference.get_trt_compile_version()) == (0, 0, 0):
            raise EngineError("paddle: this Paddle build was compiled without TensorRT")


def _pir_trt_program(
    program: Path,
    cache_dir: Path,
    height: int,
    max_batch: int,
    fp16: bool,
    min_subgraph_size: int,
    workspace_mb: int,
    reuse: bool,
) -> tuple[Path, Path]:
    """A PIR program with its TensorRT engines built and saved (``paddle.tensorrt``), reused
    when ``reuse`` and already in ``cache_dir``. Paddle builds it on GPU 0."""
    key = hashlib.sha256(
        f"{program.resolve()}:{program.stat().st_mtime_ns}:{height}:{max_batch}:{fp16}".encode()
    ).hexdigest()[:16]
    prefix = cache_dir / f"rec_trt_{key}"
    trt_program, trt_params = prefix.with_suffix(".json"), prefix.with_suffix(".pdiparams")
    if reuse and trt_program.is_file() and trt_params.is_file():
        return trt_program, trt_params
    from paddle.tensorrt.export import Input, PrecisionMode, TensorRTConfig, convert

    shapes = Input(
        min_input_shape=(1, 3, height, WIDTH_STEP),
        optim_input_shape=(min(8, max_batch), 3, height, 320),
        max_input_shape=(max_batch, 3, height, MAX_WIDTH),
        input_range=(-1.0, 1.0),
    )
    trt_config = TensorRTConfig(
        inputs=[shapes],
        min_subgraph_size=min_subgraph_size,
        save_model_dir=str(prefix),
        precision_mode=PrecisionMode.FP16 if fp16 else PrecisionMode.FP32,
        workspace_size=workspace_mb << 20,
    )
    cache_dir.mkdir(parents=True, exist_ok=True)
    convert(str(program.with_suffix("")), trt_config)
    return trt_program, trt_params


def create_predictor(
    program: Path,
    params: Path,
    *,
    height: int = DEFAULT_HEIGHT,
    threads: int = 1,
    mkldnn: bool = True,
    use_gpu: bool = False,
    device_id: int = 0,
    gpu_mem_mb: int = 500,
    tensorrt: bool = False,
    fp16: bool = True,
    trt_use_static: bool = True,
    trt_cache_dir: str | Path | None = None,
    trt_min_subgraph_size: int = 3,
    trt_workspace_mb: int = 1024,
    max_batch: int = 32,
) -> Any:
    """A Paddle Inference predictor for a rec model, already run once (warm)."""
    pi = _import_paddle_inference()
    if tensorrt and not use_gpu:
        raise EngineError("paddle: tensorrt=True needs use_gpu=True")
    if use_gpu:
        _check_gpu(tensorrt)
    cache = Path(trt_cache_dir or Path.home() / ".cache" / "roi" / "paddle-trt").expanduser()
    if tensorrt and program.suffix == ".json":
        program, params = _pir_trt_program(
            program,
            cache,
            height,
            max_batch,
            fp16,
            trt_min_subgraph_size,
            trt_workspace_mb,
            trt_use_static,
        )
    config = pi.Config(str(program), str(params))
    config.disable_glog_info()
    if use_gpu:
        precision = pi.PrecisionType.Half if fp16 and not tensorrt else pi.PrecisionType.Float32
        config.enable_use_gpu(gpu_mem_mb, device_id, precision)
        if tensorrt and program.suffix == ".pdmodel":
            cache.mkdir(parents=True, exist_ok=True)
            config.set_optim_cache_dir(str(cache))
            config.enable_tensorrt_engine(
                workspace_size=trt_workspace_mb << 20,
                max_batch_size=max_batch,
                min_subgraph_size=trt_min_subgraph_size,
                precision_mode=pi.PrecisionType.Half if fp16 else pi.PrecisionType.Float32,
                use_static=trt_use_static,
                use_calib_mode=False,
            )
            name = _input_name(pi, program, params)
            config.set_trt_dynamic_shape_info(
                {name: [1, 3, height, WIDTH_STEP]},
                {name: [max_batch, 3, height, MAX_WIDTH]},
                {name: [min(8, max_batch), 3, height, 320]},
            )
    else:
        config.disable_gpu()
        config.set_cpu_math_library_num_threads(max(1, threads))
        if mkldnn:
            config.enable_mkldnn()
            # one oneDNN primitive cache per input shape: width buckets keep these few
            config.set_mkldnn_cache_capacity(16)
        else:
            config.disable_mkldnn()
    try:
        predictor = pi.create_predictor(config)
        with _stdout_to_stderr():
            run_predictor(predictor, np.zeros((1, 3, height, WIDTH_STEP), np.float32))
    except Exception as exc:
        raise EngineError(f"paddle: cannot load or run {program}: {exc}") from exc
    return predictor


def _input_name(pi: Any, program: Path, params: Path) -> str:
    probe = pi.Config(str(program), str(params))
    probe.disable_glog_info()
    probe.switch_ir_optim(False)
    return str(pi.create_predictor(probe).get_input_names()[0])


class PaddleRecognizer(CTCLineReader):
    """A PP-OCR rec model in Paddle Inference, crops in width-bucketed batches."""

    name = "paddle"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        keys_path: str | Path | None = None,
        height: int | None = None,
        threads: int = 1,
        mkldnn: bool = True,
        use_gpu: bool = False,
        device_id: int = 0,
        gpu_mem_mb: int = 500,
        tensorrt: bool = False,
        fp16: bool = True,
        trt_use_static: bool = True,
        trt_cache_dir: str | Path | None = None,
        trt_min_subgraph_size: int = 3,
        trt_workspace_mb: int = 1024,
        max_batch: int = 32,
    ) -> None:
        _import_paddle_inference()
        self.model_dir = resolve_model_dir(model_dir)
        program, params = find_model_files(self.model_dir)
        chars, model_height = read_model_info(self.model_dir, keys_path)
        self.height = int(height or model_height)  # e.g. 32 for a PaddleOCR 2 PP-OCRv2 folder
        self.program = program
        self.use_gpu = use_gpu
        self.tensorrt = tensorrt
        self.max_batch = max(1, int(max_batch))
        self.predictor = create_predictor(
            program,
            params,
            height=self.height,
            threads=threads,
            mkldnn=mkldnn,
            use_gpu=use_gpu,
            device_id=device_id,
            gpu_mem_mb=gpu_mem_mb,
            tensorrt=tensorrt,
            fp16=fp16,
            trt_use_static=trt_use_static,
            trt_cache_dir=trt_cache_dir,
            trt_min_subgraph_size=trt_min_subgraph_size,
            trt_workspace_mb=trt_workspace_mb,
            max_batch=self.max_batch,
        )
        self._lock = threading.Lock()  # a predictor runs one batch at a time
        n_out = int(self._run(np.zeros((1, 3, self.height, WIDTH_STEP), np.float32)).shape[-1])
        # PaddleOCR appends a space class (use_space_char) to most dictionaries, not to all.
        if n_out == len(chars) + 2:
            self.characters = ["", *chars, " "]
        elif n_out == len(chars) + 1:
            self.characters = ["", *chars]
        else:
            raise EngineError(
                f"paddle: the character list has {len(chars)} characters but the model outputs "
                f"{n_out} classes (expected {len(chars) + 2}: blank, characters, space)"
            )
        self._softmax: bool | None = None

    def _run(self, batch: np.ndarray) -> np.ndarray:
        with self._lock:
            return run_predictor(self.predictor, batch)

    def _probabilities(self, out: np.ndarray) -> np.ndarray:
        """PP-OCR inference models end in a softmax; a model that outputs logits gets one here."""
        if self._softmax is None:
            sums = out.sum(axis=-1)
            self._softmax = bool(out.min() < 0 or np.abs(sums - 1.0).max() > 1e-3)
        if not self._softmax:
            return out
        shifted = np.exp(out - out.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)

    def forward(self, batch: np.ndarray) -> np.ndarray:
        try:
            return self._probabilities(self._run(batch))
        except Exception as exc:
            raise EngineError(f"paddle: recognition failed: {exc}") from exc


__all__ = [
    "MODEL_DIR_ENV",
    "PaddleRecognizer",
    "create_predictor",
    "find_model_files",
    "read_model_info",
    "resolve_model_dir",
    "run_predictor",
]
