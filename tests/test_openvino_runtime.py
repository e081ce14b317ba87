"""The small PP-OCR model on OpenVINO's CPU plugin: which runtime a CPU recogniser takes, and
that the same model file, run there (bfloat16 on a CPU with AMX or AVX-512 BF16, else float32),
reads real fixture pages right."""

import json
from pathlib import Path

import pytest
from test_engine_cascade import page_crops

from extractor.engines import openvino_runtime
from extractor.engines.cascade import CascadeRecognizer, ppocr_engine
from extractor.engines.openvino_runtime import resolve_cpu_runtime
from extractor.engines.ppocr import OPENVINO_WIDTHS, PPOCRRecognizer
from extractor.errors import EngineError
from extractor.pipeline import Extractor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def on_openvino() -> PPOCRRecognizer:
    return PPOCRRecognizer(threads=1, cpu_runtime="openvino")


@pytest.fixture(scope="module")
def on_ort() -> PPOCRRecognizer:
    return PPOCRRecognizer(threads=1, cpu_runtime="onnxruntime")


def test_the_model_on_openvino_has_the_same_characters(
    on_openvino: PPOCRRecognizer, on_ort: PPOCRRecognizer
) -> None:
    """The character list comes from the ONNX file's metadata as OpenVINO reads it."""
    assert on_openvino.runtime == "openvino" and on_ort.runtime == "onnxruntime"
    assert on_openvino.characters == on_ort.characters
    assert len(on_openvino.characters) == 18710
    assert on_openvino.max_batch == 1  # one crop per inference: memory of the widest crop only


@pytest.mark.parametrize("name", ["clean/vat_invoice_0001.jpg", "medium/vat_invoice_0029.jpg"])
def test_openvino_reads_a_page_as_onnx_runtime_does(
    on_openvino: PPOCRRecognizer, on_ort: PPOCRRecognizer, name: str
) -> None:
    """Every crop of a real page read the same text on both runtimes; confidences close (in
    bfloat16 they differ in the second or third decimal)."""
    crops, allowlists, fields, _ = page_crops(name)
    got = on_openvino.recognize(crops, allowlists)
    want = on_ort.recognize(crops, allowlists)
    assert dict(zip(fields, [r.text for r in got], strict=True)) == dict(
        zip(fields, [r.text for r in want], strict=True)
    )
    assert [r.confidence for r in got] == pytest.approx([r.confidence for r in want], abs=0.05)


def test_openvino_runs_a_few_input_widths_only(
    on_openvino: PPOCRRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenVINO keeps kernels per input shape (~7 MB each): the crops of a page, each padded
    to a multiple of 128 px, run at those widths only (and read as ONNX Runtime reads them in its
    32 px buckets: above)."""
    crops, allowlists, _, _ = page_crops("medium/vat_invoice_0029.jpg")
    ran: list[tuple[int, ...]] = []
    session = on_openvino.session
    run = session.run

    def recording(outputs: object, feed: dict) -> list:
        ran.extend(x.shape for x in feed.values())
        return run(outputs, feed)

    monkeypatch.setattr(session, "run", recording)
    on_openvino.recognize(crops, allowlists)
    assert len(ran) == len(crops)
    assert {shape[3] for shape in ran} <= set(OPENVINO_WIDTHS)
    assert len({shape[3] for shape in ran}) > 1  # crops of several widths, several buckets


def test_a_page_through_the_pipeline_on_openvino(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ROI_CPU_RUNTIME=openvino``: the shipped cascade runs small on OpenVINO and tiny on ONNX
    Runtime, and a light fixture's fields are all read right and valid."""
    monkeypatch.setenv("ROI_CPU_RUNTIME", "openvino")
    engine = ppocr_engine(threads=1)
    assert isinstance(engine, CascadeRecognizer)
    assert engine.full.runtime == "openvino" and engine.fast.runtime == "onnxruntime"
    doc = FIXTURES / "light/vat_invoice_0015.jpg"
    truth = json.loads(doc.with_suffix(".json").read_text(encoding="utf-8"))
    page = Extractor(engine=engine, fallback="never").extract(doc, "vat_invoice").pages[0]
    expected = truth["pages"][0]["fields"]
    assert {f: page.fields[f].value for f in expected} == expected
    assert all(page.fields[f].valid for f in expected)


@pytest.mark.parametrize(
    ("flags", "bf16"),
    [
        ("fpu sse2 avx2 avx512f avx512_vnni", False),  # AVX-512 without BF16 (Ice Lake)
        ("fpu avx2 avx512f avx512_bf16 avx512_vnni", True),  # AMD EPYC Zen 4
        ("fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8", True),  # Sapphire Rapids
        ("fpu sse2 avx avx2 fma", False),
    ],
)
def test_a_bfloat16_cpu_is_told_by_its_flags(tmp_path, flags: str, bf16: bool) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: {flags}\n\n")
    assert openvino_runtime.cpu_has_bf16(str(cpuinfo)) is bf16


def test_which_runtime_a_cpu_recogniser_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROI_CPU_RUNTIME", raising=False)
    monkeypatch.setattr(openvino_runtime, "cpu_has_bf16", lambda: False)
    assert resolve_cpu_runtime() == "onnxruntime"  # float32 only: ONNX Runtime is the faster
    monkeypatch.setattr(openvino_runtime, "cpu_has_bf16", lambda: True)
    assert resolve_cpu_runtime() == "openvino"
    assert resolve_cpu_runtime("onnxruntime") == "onnxruntime"
    monkeypatch.setenv("ROI_CPU_RUNTIME", "onnxruntime")
    assert resolve_cpu_runtime() == "onnxruntime"
    assert resolve_cpu_runtime("openvino") == "openvino"  # the argument before the variable
    monkeypatch.setenv("ROI_CPU_RUNTIME", "tflite")
    with pytest.raises(EngineError, match="use auto, onnxruntime, openvino"):
        resolve_cpu_runtime()
    # without the package, auto keeps ONNX Runtime; insisting on OpenVINO names the install
    monkeypatch.setattr(openvino_runtime, "openvino_installed", lambda: False)
    assert resolve_cpu_runtime("auto") == "onnxruntime"
    with pytest.raises(EngineError, match="pip install 'openvino"):
        resolve_cpu_runtime("openvino")


def test_the_gpu_ways_stay_on_onnx_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """The argmax in the graph and a session per shape are ONNX Runtime's: asked for, the
    recogniser runs there whatever the CPU runtime says."""
    monkeypatch.setenv("ROI_CPU_RUNTIME", "openvino")
    assert PPOCRRecognizer(threads=1, decode_on_device=True).runtime == "onnxruntime"
