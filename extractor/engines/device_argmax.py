"""The CTC decoder's masked argmax moved into the rec model's graph, for GPU providers.

A PP-OCR rec model answers (N, T, C) class probabilities, 18,710 classes for PP-OCRv6: a crop
at width 320 is 3.0 MB of them, a batch of 512 crops 1.5 GB to copy back from the GPU. On a lent
H200 the CUDA EP's throughput stopped growing with the batch at ~3,100 crops/s, 9.3 GB/s of
probabilities, as a copy-bound run would (docs/benchmarks.md, *GPU*). The greedy decoder
needs, per time step, only the best allowed class and its probability. This rewrites the model
to take the allowlists' class masks as a second input (N, C) and answer those two (N, T)
tensors instead: what comes back shrinks ~4,700-fold and the mask that goes out is one byte per
class.

Equivalence with :func:`extractor.engines.ctc.ctc_greedy`: disallowed classes are multiplied by
0 and probabilities are >= 0, so the argmax is the best allowed class (the blank is always
allowed); the probability answered is the chosen class's own, unmasked.
"""

from __future__ import annotations

from pathlib import Path

MASK_INPUT = "class_mask"
BEST_CLASS = "best_class"
BEST_PROB = "best_prob"


def with_masked_argmax(model_path: str | Path) -> bytes:
    """The rec model at ``model_path`` answering (best class, its probability) per time step
    under a boolean (N, C) class mask; serialized, for ``InferenceSession(bytes)``."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError as exc:
        from extractor.errors import EngineError

        raise EngineError(
            "decoding on the device rewrites the model with the onnx package: "
            "pip install 'roi[gpu]' (or onnx), or pass decode_on_device=False"
        ) from exc

    model = onnx.load(str(model_path))
    graph = model.graph
    probs = graph.output[0]
    classes = probs.type.tensor_type.shape.dim[-1]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 11)

    mask_dims: list[str | int] = ["batch", classes.dim_value or "classes"]
    graph.input.append(helper.make_tensor_value_info(MASK_INPUT, TensorProto.BOOL, mask_dims))
    nodes = [helper.make_node("Cast", [MASK_INPUT], ["_mask_f"], to=TensorProto.FLOAT)]
    # (N, C) -> (N, 1, C): Unsqueeze's axes became an input in opset 13, ReduceMax's in 18
    if opset >= 13:
        graph.initializer.append(helper.make_tensor("_axis1", TensorProto.INT64, [1], [1]))
        nodes.append(helper.make_node("Unsqueeze", ["_mask_f", "_axis1"], ["_mask_3d"]))
    else:
        nodes.append(helper.make_node("Unsqueeze", ["_mask_f"], ["_mask_3d"], axes=[1]))
    nodes.append(helper.make_node("Mul", [probs.name, "_mask_3d"], ["_masked"]))
    nodes.append(helper.make_node("ArgMax", ["_masked"], [BEST_CLASS], axis=2, keepdims=0))
    if opset >= 18:
        graph.initializer.append(helper.make_tensor("_axis2", TensorProto.INT64, [1], [2]))
        nodes.append(helper.make_node("ReduceMax", ["_masked", "_axis2"], [BEST_PROB], keepdims=0))
    else:
        nodes.append(helper.make_node("ReduceMax", ["_masked"], [BEST_PROB], axes=[2], keepdims=0))
    graph.node.extend(nodes)

    steps = probs.type.tensor_type.shape.dim[1]
    out_dims: list[str | int] = ["batch", steps.dim_value or steps.dim_param or "steps"]
    del graph.output[:]
    graph.output.extend(
        [
            helper.make_tensor_value_info(BEST_CLASS, TensorProto.INT64, out_dims),
            helper.make_tensor_value_info(BEST_PROB, TensorProto.FLOAT, out_dims),
        ]
    )
    return model.SerializeToString()
