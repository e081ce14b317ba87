"""PP-OCR on ONNX Runtime: batches padded to a few sizes, and the GPU providers' settings."""

import numpy as np
import onnxruntime as ort
import pytest
from test_engine_cascade import page_crops

from extractor.engines.ctc import ctc_greedy
from extractor.engines.device_argmax import BEST_CLASS, BEST_PROB, MASK_INPUT, with_masked_argmax
from extractor.engines.ppocr import (
    PPOCRRecognizer,
    _session_providers,
    cudnn_conv_algo_search,
    packaged_model_path,
)
from extractor.errors import EngineError


def test_padded_batches_read_as_batches_that_come() -> None:
    """A GPU pads each width bucket's batch up to one of a few sizes (rows of zeros); the crops
    read the same as in a batch of their own number, and no padding row's reading leaks out."""
    crops, allowlists, _, _ = page_crops("medium/vat_invoice_0029.jpg")
    crops = crops * 3  # several crops per width bucket, so batches of 2-6 are padded to 8
    allowlists = allowlists * 3
    plain = PPOCRRecognizer(threads=1, cpu_runtime="onnxruntime")
    padded = PPOCRRecognizer(threads=1, batch_sizes=(8, 32), cpu_runtime="onnxruntime")
    assert plain.batch_sizes == () and padded.batch_sizes == (8, 32)
    shapes: list[int] = []
    forward = padded.forward
    padded.forward = lambda batch: shapes.append(batch.shape[0]) or forward(batch)  # type: ignore[method-assign]
    got = padded.recognize(crops, allowlists)
    want = plain.recognize(crops, allowlists)
    assert set(shapes) <= {8, 32} and len(shapes) > 1
    assert [r.text for r in got] == [r.text for r in want]
    assert [r.confidence for r in got] == pytest.approx([r.confidence for r in want], abs=1e-4)


def test_a_session_per_fixed_shape_reads_as_batches_that_come() -> None:
    """The CUDA EP rebuilds its cuDNN plans whenever a Conv's input shape changes, so on a GPU
    crops are padded to a few widths and row counts and each shape runs in a session of its
    own. Run here on the CPU, that reads two real pages as plain batches do, through no more
    sessions than fixed shapes, and warming up makes them all."""
    fixed = PPOCRRecognizer(
        threads=1, widths=(256, 512, 1024, 1920), batch_sizes=(8, 32), session_per_shape=True
    )
    plain = PPOCRRecognizer(threads=1, cpu_runtime="onnxruntime")
    assert plain.widths == () and plain.shapes() == [] and len(fixed.shapes()) == 8
    for page in ("clean/vat_invoice_0001.jpg", "medium/vat_invoice_0029.jpg"):
        crops, allowlists, _, _ = page_crops(page)
        got = fixed.recognize(crops, allowlists)
        want = plain.recognize(crops, allowlists)
        assert [r.text for r in got] == [r.text for r in want]
    met = set(fixed._sessions)
    assert 1 < len(met) <= 8 and {(rows, width) for rows, _, _, width in met} <= set(fixed.shapes())
    assert fixed._sessions[next(iter(met))] is fixed.session  # the first shape takes it
    fixed.warm_up()
    assert len(fixed._sessions) == 8 and len({id(s) for s in fixed._sessions.values()}) == 8


def test_wide_crops_go_in_smaller_batches_under_max_columns() -> None:
    """A GPU session keeps memory for the largest batch it ran: under ``max_columns`` a batch of
    wide crops has fewer rows, the shapes warmed are only those, and the crops read the same."""
    crops, allowlists, _, _ = page_crops("medium/vat_invoice_0029.jpg")
    crops, allowlists = crops * 4, allowlists * 4
    capped = PPOCRRecognizer(
        threads=1,
        widths=(256, 512, 1024, 1920),
        batch_sizes=(1, 8, 32),
        max_columns=8 * 512,
        cpu_runtime="onnxruntime",
    )
    assert [capped.rows_for(w) for w in capped.widths] == [8, 8, 1, 1]
    assert (32, 256) not in capped.shapes() and (8, 1024) not in capped.shapes()
    shapes: list[tuple[int, int]] = []
    forward = capped.forward
    capped.forward = lambda b: shapes.append((b.shape[0], b.shape[3])) or forward(b)  # type: ignore[method-assign]
    got = capped.recognize(crops, allowlists)
    want = PPOCRRecognizer(threads=1, cpu_runtime="onnxruntime").recognize(crops, allowlists)
    assert set(shapes) <= set(capped.shapes()) and any(rows == 8 for rows, _ in shapes)
    assert [r.text for r in got] == [r.text for r in want]


@pytest.mark.parametrize(
    "shapes",
    [{}, {"batch_sizes": (8, 32), "widths": (256, 512)}, {"batch_sizes": (8,), "widths": (1920,)}],
)
def test_a_session_per_shape_needs_shapes_that_cover_every_batch(shapes: dict) -> None:
    """Without fixed shapes covering every crop and every batch, sessions would have no bound."""
    with pytest.raises(EngineError, match="a session per shape needs fixed batch sizes"):
        PPOCRRecognizer(threads=1, session_per_shape=True, **shapes)


def test_cuda_provider_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROI_CUDNN_CONV_ALGO_SEARCH", raising=False)
    cuda = dict(_session_providers("cuda", 0, True, None, 32)[0][1])  # type: ignore[arg-type]
    # cuDNN's 'DEFAULT' ran every Conv in its fallback mode, 8x slower on an H200
    assert cuda["cudnn_conv_algo_search"] == "HEURISTIC"
    monkeypatch.setenv("ROI_CUDNN_CONV_ALGO_SEARCH", "exhaustive")
    assert cudnn_conv_algo_search() == "EXHAUSTIVE"
    monkeypatch.setenv("ROI_CUDNN_CONV_ALGO_SEARCH", "fastest")
    with pytest.raises(EngineError, match="ROI_CUDNN_CONV_ALGO_SEARCH"):
        _session_providers("cuda", 0, True, None, 32)


def test_tensorrt_profile_covers_the_largest_batch(tmp_path) -> None:
    model = packaged_model_path("PP-OCRv6")
    trt = dict(_session_providers("tensorrt", 0, True, str(tmp_path), 512, model)[0][1])  # type: ignore[arg-type]
    assert trt["trt_profile_max_shapes"] == "x:512x3x48x1920"
    assert trt["trt_engine_cache_path"] == str(tmp_path) and trt["trt_fp16_enable"] is True


def test_tensorrt_profiles_name_the_models_own_image_input(tmp_path) -> None:
    """The profiles name the image input as the model does: ``x`` in the shipped models, the
    name another export gave it (here the shipped model's, renamed) in a user's."""
    import onnx

    model = onnx.load(str(packaged_model_path("PP-OCRv6")))
    for node in model.graph.node:
        node.input[:] = ["image" if name == "x" else name for name in node.input]
    model.graph.input[0].name = "image"
    renamed = tmp_path / "rec.onnx"
    onnx.save(model, str(renamed))
    trt = dict(_session_providers("tensorrt", 0, True, str(tmp_path), 32, renamed)[0][1])  # type: ignore[arg-type]
    assert trt["trt_profile_min_shapes"] == "image:1x3x48x32"
    assert trt["trt_profile_max_shapes"] == "image:32x3x48x1920"
    blank = np.full((48, 160, 3), 255, np.uint8)
    (read,) = PPOCRRecognizer(model_path=renamed, threads=1).recognize([blank], [None])
    assert read.text == ""  # its CPU session finds the input by the model's name too


def test_gpu_providers_need_an_onnxruntime_build_with_them() -> None:
    with pytest.raises(EngineError, match="CUDAExecutionProvider is not available"):
        PPOCRRecognizer(provider="cuda")


def test_the_argmax_in_the_graph_reads_as_the_decoder_does() -> None:
    """On a GPU the rec model answers each step's best allowed class (device_argmax.py): the
    packaged model rewritten so reads real crops exactly as the CPU's decoder, text and
    per-character confidences, with and without allowlists, in padded batches too."""
    crops, allowlists, _, _ = page_crops("medium/vat_invoice_0029.jpg")
    assert any(a is None for a in allowlists) and any(a is not None for a in allowlists)
    plain = PPOCRRecognizer(threads=1, cpu_runtime="onnxruntime")
    on_device = PPOCRRecognizer(threads=1, decode_on_device=True, batch_sizes=(8, 32))
    assert not plain.decodes_on_device and on_device.decodes_on_device
    assert [o.name for o in on_device.session.get_outputs()] == [BEST_CLASS, BEST_PROB]
    want = plain.recognize(crops, allowlists)
    got = on_device.recognize(crops, allowlists)
    assert [r.text for r in got] == [r.text for r in want]
    assert [r.char_confidences for r in got] == [r.char_confidences for r in want]


def _softmax_model(path, opset: int, classes: int) -> None:
    """A stand-in rec model: (N, T, C) logits in, their softmax out, at a given opset."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["probs"], axis=2)],
        "rec",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "t", classes])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["n", "t", classes])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_the_argmax_rewrite_at_each_opset(tmp_path, opset: int) -> None:
    """Unsqueeze's and ReduceMax's axes moved from attributes to inputs in opsets 13 and 18."""
    classes, rng = 50, np.random.default_rng(opset)
    _softmax_model(tmp_path / "rec.onnx", opset, classes)
    session = ort.InferenceSession(with_masked_argmax(tmp_path / "rec.onnx"))
    logits = rng.normal(0, 3, (4, 7, classes)).astype(np.float32)
    masks = rng.random((4, classes)) < 0.3
    masks[:, 0] = True  # the blank is always allowed
    masks[3] = True  # no allowlist
    best, best_p = session.run([BEST_CLASS, BEST_PROB], {"x": logits, MASK_INPUT: masks})
    probs = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
    characters = ["", *(chr(0x4E00 + i) for i in range(classes - 1))]
    for row in range(4):
        want = ctc_greedy(probs[row], None if row == 3 else masks[row], characters)
        assert best[row].tolist() == [
            int(np.flatnonzero(masks[row])[probs[row][t, masks[row]].argmax()]) for t in range(7)
        ]
        assert best_p[row] == pytest.approx(probs[row][np.arange(7), best[row]], rel=1e-5)
        assert want.text == "".join(characters[c] for c in _collapse(best[row].tolist()))


def _collapse(path: list[int]) -> list[int]:
    return [c for i, c in enumerate(path) if c != 0 and (i == 0 or c != path[i - 1])]


def test_compatibility_ideographs_in_the_character_list_are_answered_unified() -> None:
    """PP-OCRv6 small lists 郎 and 凉 twice, once as the CJK compatibility ideograph (U+F92C,
    U+F979): a name read with that class must still compare equal to the name as typed."""
    small = PPOCRRecognizer()
    for compat, unified in (("\uf92c", "\u90ce"), ("\uf979", "\u51c9")):
        index = small.characters.index(compat)
        assert unified in small.characters
        probs = np.full((3, len(small.characters)), 1e-6, dtype=np.float32)
        probs[[0, 1, 2], [small.characters.index("新"), 0, index]] = 0.9
        assert ctc_greedy(probs, None, small.characters).text == "新" + unified


def test_a_gpu_provider_onnx_runtime_cannot_start_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where onnxruntime-gpu is installed but CUDA's libraries are missing, ONNX Runtime logs a
    warning and runs the session on the CPU. The recogniser refuses that instead of serving a
    "cuda" worker at CPU speed: here the real ONNX Runtime session is built as such a build
    leaves it, on the CPU provider alone."""
    real_session = ort.InferenceSession

    def as_if_cuda_failed(model: object, options: object, providers: list) -> object:
        return real_session(model, options, providers=["CPUExecutionProvider"])

    monkeypatch.setattr(
        ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    monkeypatch.setattr(ort, "InferenceSession", as_if_cuda_failed)
    with pytest.raises(
        EngineError, match=r"CUDAExecutionProvider could not start .*CPUExecutionProvider"
    ):
        PPOCRRecognizer(provider="cuda", decode_on_device=False, session_per_shape=False)
