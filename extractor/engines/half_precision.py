"""The rec model in half precision (fp16) for the CUDA EP.

ORT's TensorRT EP builds fp16 engines itself (``trt_fp16_enable``); the CUDA EP runs the graph's
own types, so fp16 there means rewriting the model: onnxruntime's own converter
(``onnxruntime.transformers.float16``) turns weights and ops to float16 and, with
``keep_io_types``, keeps the image input and the probabilities float32, so nothing else changes.
Half the weights and activations to move, and the H200's tensor cores do fp16 at twice the
TF32 rate. The test suite checks on the CPU that the fp16 model reads real crops as fp32 does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from extractor.errors import EngineError

if TYPE_CHECKING:
    import onnx


def in_half_precision(model_path: str | Path) -> onnx.ModelProto:
    """The ONNX model at ``model_path`` with float16 weights and ops, float32 inputs/outputs."""
    try:
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16
    except ImportError as exc:
        raise EngineError(
            "an fp16 model for the CUDA EP is made with the onnx package and onnxruntime's "
            "converter: pip install 'roi[gpu]' (or onnx), or pass fp16=False"
        ) from exc
    return convert_float_to_float16(onnx.load(str(model_path)), keep_io_types=True)
