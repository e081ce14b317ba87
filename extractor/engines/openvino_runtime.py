"""The PP-OCR recogniser's network on OpenVINO's CPU plugin, where that is the faster runtime.

On a CPU that computes in bfloat16 OpenVINO runs the model's convolutions in it: on AMX's
matrix units (Intel Xeon since the 4th generation, Sapphire Rapids) the PP-OCRv6 small model
read the fixtures' crops in 60 CPU ms per page against 134 on ONNX Runtime (one core, the same
reads on 250 of 252 crops, the same fields right); with AVX-512 BF16 alone (AMD EPYC since Zen
4, Intel Cooper Lake) in 120 against 199-214 (84 crops, every one read the same;
docs/benchmarks.md). Without either both run float32 and ONNX Runtime is the faster (measured
on AVX2 CPUs), so ``auto`` keeps it there. OpenVINO keeps buffers for the largest input it has
run, and ~7 MB of kernels per input shape (hence crops padded to 15 widths there,
``ppocr.OPENVINO_WIDTHS``): a worker's peak on the bench's pages is 340 against 278 MB on ONNX
Runtime, and a whole page read by the fallback's full-page OCR on top of it reached ~700
against ~550 MB over every fixture (``make bench`` measures that worker; the service can keep
full-page OCR out of its workers, ``ROI_FALLBACK_PROCESS=shared``).

``ROI_CPU_RUNTIME`` chooses: ``auto`` (default: OpenVINO where the CPU computes in bfloat16 and
the ``openvino`` package, a dependency, is installed), ``onnxruntime`` or ``openvino`` (insisted
on: a missing package is an error naming it). GPU providers always run on ONNX Runtime.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from extractor.errors import EngineError

CpuRuntime = Literal["auto", "onnxruntime", "openvino"]
CPU_RUNTIMES: tuple[str, ...] = get_args(CpuRuntime)


BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
"""The CPU flags (Linux) under which OpenVINO's CPU plugin infers in bfloat16 by default: AMX's
tiles, or AVX-512's BF16 dot products."""


@cache
def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """This CPU's flags (Linux: the first ``flags`` line of ``cpuinfo``; none elsewhere)."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[-1].split())
    except OSError:
        pass
    return frozenset()


def cpu_has_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU computes in bfloat16 (one of :data:`BF16_FLAGS` in ``cpuinfo``)."""
    return not BF16_FLAGS.isdisjoint(cpu_flags(cpuinfo))


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


def resolve_cpu_runtime(runtime: str | None = None) -> Literal["onnxruntime", "openvino"]:
    """The runtime a CPU recogniser uses: ``runtime``, else ``ROI_CPU_RUNTIME``, else ``auto``."""
    wanted = (runtime or os.environ.get("ROI_CPU_RUNTIME") or "auto").lower()
    if wanted not in CPU_RUNTIMES:
        raise EngineError(
            f"CPU runtime {wanted!r} (ROI_CPU_RUNTIME): use {', '.join(CPU_RUNTIMES)}"
        )
    if wanted == "openvino":
        if not openvino_installed():
            raise EngineError(
                "the openvino CPU runtime was asked for (ROI_CPU_RUNTIME=openvino) but its package "
                "(a dependency of roi) is not installed: pip install 'openvino>=2024.4'"
            )
        return "openvino"
    if wanted == "auto" and cpu_has_bf16() and openvino_installed():
        return "openvino"
    return "onnxruntime"


class OpenVINOSession:
    """A compiled PP-OCR rec model with the piece of ``onnxruntime.InferenceSession`` the
    recogniser calls (``run``), and the model's character list and class count.

    One inference request, one stream, ``threads`` threads (0: OpenVINO's choice); the precision
    is the plugin's default for the CPU (bfloat16 where the CPU has it, else float32).
    """

    def __init__(self, path: Path, threads: int = 1, precision: str | None = None) -> None:
        import openvino as ov

        core = ov.Core()
        config: dict[str, object] = {
            "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "ENABLE_CPU_PINNING": False,  # the worker pool places processes, not the runtime
        }
        if precision:
            config["INFERENCE_PRECISION_HINT"] = precision
        try:
            model = core.read_model(str(path))
            self._compiled = core.compile_model(model, "CPU", config)
        except Exception as exc:  # OpenVINO raises RuntimeError subclasses of its own
            raise EngineError(f"cannot load recognition model {path} on OpenVINO: {exc}") from exc
        self.precision = str(self._compiled.get_property("INFERENCE_PRECISION_HINT"))
        self.input_name = model.inputs[0].get_any_name()
        classes = model.outputs[0].get_partial_shape()[-1]
        self.classes: int | None = classes.get_length() if classes.is_static else None
        self.metadata: dict[str, str] = {}
        if model.has_rt_info(["framework", "character"]):  # the ONNX file's metadata_props
            self.metadata["character"] = model.get_rt_info(["framework", "character"]).astype(str)
        self._request = self._compiled.create_infer_request()

    def run(self, _outputs: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self._request.infer({0: next(iter(feed.values()))})
        return [self._request.get_output_tensor(0).data.copy()]
