"""PP-OCR on ONNX Runtime: batches padded to a few sizes, and the GPU providers' settings."""

import pytest
from test_engine_cascade import page_crops

from extractor.engines.ppocr import PPOCRRecognizer, _session_providers, cudnn_conv_algo_search
from extractor.errors import EngineError


def test_padded_batches_read_as_batches_that_come() -> None:
    """A GPU pads each width bucket's batch up to one of a few sizes (rows of zeros); the crops
    read the same as in a batch of their own number, and no padding row's reading leaks out."""
    crops, allowlists, _, _ = page_crops("medium/vat_invoice_0029.jpg")
    crops = crops * 3  # several crops per width bucket, so batches of 2-6 are padded to 8
    allowlists = allowlists * 3
    plain = PPOCRRecognizer(threads=1)
    padded = PPOCRRecognizer(threads=1, batch_sizes=(8, 32))
    assert plain.batch_sizes == () and padded.batch_sizes == (8, 32)
    shapes: list[int] = []
    forward = padded.forward
    padded.forward = lambda batch: shapes.append(batch.shape[0]) or forward(batch)  # type: ignore[method-assign]
    got = padded.recognize(crops, allowlists)
    want = plain.recognize(crops, allowlists)
    assert set(shapes) <= {8, 32} and len(shapes) > 1
    assert [r.text for r in got] == [r.text for r in want]
    assert [r.confidence for r in got] == pytest.approx([r.confidence for r in want], abs=1e-4)


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
    trt = dict(_session_providers("tensorrt", 0, True, str(tmp_path), 512)[0][1])  # type: ignore[arg-type]
    assert trt["trt_profile_max_shapes"] == "x:512x3x48x1920"
    assert trt["trt_engine_cache_path"] == str(tmp_path) and trt["trt_fp16_enable"] is True


def test_gpu_providers_need_an_onnxruntime_build_with_them() -> None:
    with pytest.raises(EngineError, match="CUDAExecutionProvider is not available"):
        PPOCRRecognizer(provider="cuda")
