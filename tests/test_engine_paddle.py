"""The Paddle engine: the rapidocr wheel's PP-OCRv6 rec converted to a Paddle inference model
(``roi models convert``, x2paddle) and run in Paddle Inference, against the ``ppocr`` engine on
fixture crops; and a network built here in Paddle and exported with ``paddle.jit.save`` in
PaddleOCR's folder layout (``inference.yml`` with ``character_dict``), for the user-model path.

These need the ``paddle`` extra, which lives in its own venv: ``make test-paddle`` creates
``.venv-paddle`` and runs them there with ``ROI_REQUIRE_PADDLE=1`` (a missing install fails).
Under ``make test`` (the main venv, without paddle) they skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.crops import crop_fields
from extractor.engines.base import Recognizer
from extractor.errors import EngineError, ModelNotFoundError
from extractor.fields import resolve_allowlist
from extractor.registration import register
from extractor.templates import TemplateStore

_HAVE_PADDLE = all(importlib.util.find_spec(n) is not None for n in ("paddle", "x2paddle", "onnx"))
_REQUIRED = os.environ.get("ROI_REQUIRE_PADDLE") == "1"

pytestmark = pytest.mark.skipif(
    not _HAVE_PADDLE and not _REQUIRED,
    reason="paddle extra not installed here (make test-paddle runs these in .venv-paddle)",
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PARITY_SCANS = (
    "clean/vat_invoice_0001.jpg",
    "clean/vat_invoice_0007.jpg",
    "light/vat_invoice_0016.jpg",
)


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROI_PADDLE_MODEL_DIR", raising=False)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rapidocr wheel's PP-OCRv6 rec, converted through the command line."""
    from extractor.cli import main

    out = tmp_path_factory.mktemp("models") / "PP-OCRv6_rec_paddle"
    assert main(["models", "convert", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def paddle_engine(converted: Path) -> Recognizer:
    from extractor.engines.paddle import PaddleRecognizer

    return PaddleRecognizer(model_dir=converted)


@pytest.fixture(scope="module")
def ppocr_engine() -> Recognizer:
    from extractor.engines.ppocr import PPOCRRecognizer

    return PPOCRRecognizer(cpu_runtime="onnxruntime")  # float32, as the converted model runs


def page_crops(name: str) -> tuple[list[np.ndarray], list[str | None], list[str]]:
    template = TemplateStore().get("vat_invoice")
    image = cv2.imread(str(FIXTURES / name))
    crops = crop_fields(image, register(image, template).homography, template)
    return (
        [c.image for c in crops],
        [resolve_allowlist(c.spec.allowlist, c.spec.kind) for c in crops],
        [c.spec.name for c in crops],
    )


def truth(name: str) -> dict[str, str]:
    path = (FIXTURES / name).with_suffix(".json")
    return json.loads(path.read_text(encoding="utf-8"))["pages"][0]["fields"]


# -- conversion -------------------------------------------------------------------------------


def test_conversion_is_checked_and_recorded(converted: Path) -> None:
    manifest = json.loads((converted / "roi_model.json").read_text(encoding="utf-8"))
    assert manifest["source"].endswith("PP-OCRv6_rec_small.onnx")
    assert manifest["max_abs_diff"] < 1e-3 and manifest["argmax_agreement"] == 1.0
    chars = (converted / "characters.txt").read_text(encoding="utf-8").splitlines()
    assert manifest["classes"] == len(chars) + 2 > 18000
    assert {"0", "9", "¥", "壹", "圆", "整"} <= set(chars)
    for name in ("inference.json", "inference.pdiparams", "inference.yml"):
        assert (converted / name).is_file(), name


def test_conversion_is_reused_unless_forced(converted: Path) -> None:
    from extractor.models import convert_ppocr_onnx

    again = convert_ppocr_onnx(out_dir=converted)
    assert again.reused and again.max_abs_diff < 1e-3


def test_default_folder_is_where_convert_writes(
    converted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from extractor.engines.paddle import resolve_model_dir

    monkeypatch.setenv("ROI_MODELS_DIR", str(converted.parent))
    assert resolve_model_dir(None) == converted
    monkeypatch.setenv("ROI_PADDLE_MODEL_DIR", "/somewhere/else")
    assert resolve_model_dir(None) == Path("/somewhere/else")


# -- real weights: parity with the ppocr engine -------------------------------------------------


@pytest.mark.parametrize("name", PARITY_SCANS)
def test_reads_fixture_crops_as_ppocr_does(
    paddle_engine: Recognizer, ppocr_engine: Recognizer, name: str
) -> None:
    images, allowlists, fields = page_crops(name)
    got = paddle_engine.recognize(images, allowlists)
    want = ppocr_engine.recognize(images, allowlists)
    for field, g, w in zip(fields, got, want, strict=True):
        assert g.text == w.text, field
        assert len(g.char_confidences) == len(w.char_confidences)
        assert np.allclose(g.char_confidences, w.char_confidences, atol=2e-3), field


def test_pipeline_with_paddle_reads_the_truth(paddle_engine: Recognizer) -> None:
    from extractor.pipeline import Extractor

    name = "clean/vat_invoice_0001.jpg"
    (page,) = Extractor(engine=paddle_engine).extract(FIXTURES / name, "vat_invoice").pages
    assert {k: f.value for k, f in page.fields.items()} == truth(name)
    assert page.status == "ok"


def test_allowlist_is_a_mask_before_the_argmax(paddle_engine: Recognizer) -> None:
    """As with ppocr: free, the № beside the number reads as a letter; masked, it cannot."""
    name = "clean/vat_invoice_0013.jpg"
    images, _, fields = page_crops(name)
    crop = images[fields.index("invoice_number")]
    free, masked = paddle_engine.recognize([crop, crop], [None, "0123456789"])
    assert any(ch.isalpha() for ch in free.text)
    assert masked.text == truth(name)["invoice_number"]


def test_width_buckets_give_the_same_reads_as_one_by_one(paddle_engine: Recognizer) -> None:
    images, allowlists, _ = page_crops("clean/vat_invoice_0007.jpg")
    assert len({img.shape[1] * 48 // img.shape[0] // 32 for img in images}) > 2  # several buckets
    batched = paddle_engine.recognize(images, allowlists)
    single = [paddle_engine.recognize([i], [a])[0] for i, a in zip(images, allowlists, strict=True)]
    assert [r.text for r in batched] == [r.text for r in single]


def test_get_engine_and_empty_input(converted: Path) -> None:
    from extractor.engines import ENGINES, get_engine

    assert "paddle" in ENGINES
    engine = get_engine("paddle", model_dir=str(converted))
    assert isinstance(engine, Recognizer) and engine.name == "paddle"
    assert engine.recognize([], []) == []
    (blank,) = engine.recognize([np.full((40, 200, 3), 255, np.uint8)], ["0123456789"])
    assert blank.text == "" and blank.confidence == 0.0
    with pytest.raises(EngineError):
        engine.recognize([np.zeros((10, 10, 3), np.uint8)], [])


def test_json_output_stays_clean(converted: Path) -> None:
    """Paddle's oneDNN passes print to stdout from C++ on a predictor's first run; the engine
    sends that to stderr so ``roi extract --json`` stays parseable."""
    env = {**os.environ, "ROI_PADDLE_MODEL_DIR": str(converted)}
    run = subprocess.run(
        [sys.executable, "-m", "extractor.cli", "extract", "--json", "--engine", "paddle",
         "-t", "vat_invoice", str(FIXTURES / "clean/vat_invoice_0001.jpg")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["engine"] == "paddle"
    fields = result["pages"][0]["fields"]
    assert {k: f["value"] for k, f in fields.items()} == truth("clean/vat_invoice_0001.jpg")


# -- a network built here, in PaddleOCR's folder layout -----------------------------------------

# Columns are classified by their mean intensity v in [-1, 1]: white and the 0.0 padding are
# blank, black is "A", dark grey (51) is "B"; class 3 is the space PaddleOCR appends.
CENTRES = [0.5, -1.0, -0.6, 5.0]
BLACK, GREY, WHITE = 0, 51, 255


def build_line(*blocks: int, height: int = 32) -> np.ndarray:
    """A BGR crop of 16-px blocks of the given grey levels with 8-px white gaps."""
    columns: list[np.ndarray] = []
    for level in blocks:
        columns += [
            np.full((height, 16, 3), level, np.uint8),
            np.full((height, 8, 3), 255, np.uint8),
        ]
    return np.concatenate(columns, axis=1)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-class CTC "recogniser" in Paddle, exported with paddle.jit.save; it outputs logits,
    and its inference.yml (PaddleX format) gives the characters and an input height of 32."""
    import paddle
    import yaml

    class Tiny(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.centres = self.create_parameter([len(CENTRES)], dtype="float32")
            self.centres.set_value(paddle.to_tensor(CENTRES, dtype="float32"))

        def forward(self, x: paddle.Tensor) -> paddle.Tensor:
            v = paddle.nn.functional.avg_pool2d(
                x.mean(axis=1, keepdim=True), kernel_size=[32, 4], stride=[32, 4]
            )  # N, 1, 1, W/4
            v = v.squeeze(axis=[1, 2]).unsqueeze(-1)  # N, T, 1
            return -50.0 * (v - self.centres) ** 2  # N, T, classes (logits)

    out = tmp_path_factory.mktemp("tiny")
    layer = Tiny()
    layer.eval()
    spec = [paddle.static.InputSpec([None, 3, 32, None], "float32", "x")]
    paddle.jit.save(layer, str(out / "inference"), input_spec=spec)
    config = {
        "Global": {"model_name": "roi_tiny_rec"},
        "PreProcess": {"transform_ops": [{"RecResizeImg": {"image_shape": [3, 32, 100]}}]},
        "PostProcess": {"name": "CTCLabelDecode", "character_dict": ["A", "B"]},
    }
    (out / "inference.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return out


def test_user_model_folder_with_inference_yml(tiny_model: Path) -> None:
    from extractor.engines.paddle import PaddleRecognizer

    assert (tiny_model / "inference.json").is_file() or (tiny_model / "inference.pdmodel").is_file()
    engine = PaddleRecognizer(model_dir=tiny_model)
    assert engine.height == 32 and engine.characters == ["", "A", "B", " "]
    lines = [build_line(BLACK, GREY, BLACK), build_line(GREY, GREY), build_line(BLACK, GREY)]
    free = engine.recognize(lines, [None, None, None])
    assert [r.text for r in free] == ["ABA", "BB", "AB"]  # mixed widths: one padded batch
    assert all(r.confidence > 0.99 for r in free)
    (forced,) = engine.recognize([lines[0]], ["A"])
    assert forced.text == "AAA"
    assert forced.char_confidences[0] > 0.99 and forced.char_confidences[1] < 0.1


def test_keys_file_must_fit_the_model(tiny_model: Path, tmp_path: Path) -> None:
    from extractor.engines.paddle import PaddleRecognizer

    keys = tmp_path / "keys.txt"
    keys.write_text("A\nB\nC\nD\n", encoding="utf-8")
    with pytest.raises(EngineError, match="outputs 4 classes"):
        PaddleRecognizer(model_dir=tiny_model, keys_path=keys)
    keys.write_text("A\nB\nC\n", encoding="utf-8")  # no space class: also a PaddleOCR layout
    engine = PaddleRecognizer(model_dir=tiny_model, keys_path=keys, height=48)
    assert engine.characters == ["", "A", "B", "C"] and engine.height == 48


# -- errors -----------------------------------------------------------------------------------


def test_missing_model_says_how_to_make_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from extractor.engines.paddle import PaddleRecognizer

    monkeypatch.setenv("ROI_MODELS_DIR", str(tmp_path / "none"))
    with pytest.raises(ModelNotFoundError, match="roi models convert"):
        PaddleRecognizer()
    with pytest.raises(ModelNotFoundError, match="no Paddle inference model"):
        PaddleRecognizer(model_dir=tmp_path)


def test_non_ctc_model_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    from extractor.engines.paddle import PaddleRecognizer

    for name in ("inference.json", "inference.pdmodel", "inference.pdiparams"):
        if (tiny_model / name).is_file():
            (tmp_path / name).write_bytes((tiny_model / name).read_bytes())
    (tmp_path / "inference.yml").write_text("PostProcess: {name: AttnLabelDecode}\n")
    with pytest.raises(EngineError, match="only CTC"):
        PaddleRecognizer(model_dir=tmp_path)


def test_gpu_options_on_a_cpu_build(converted: Path) -> None:
    import paddle

    from extractor.engines.paddle import PaddleRecognizer

    with pytest.raises(EngineError, match="needs use_gpu"):
        PaddleRecognizer(model_dir=converted, tensorrt=True)
    if paddle.device.is_compiled_with_cuda():
        pytest.skip("CUDA build of Paddle: the CPU-build message does not apply")
    with pytest.raises(EngineError, match="paddlepaddle-gpu"):
        PaddleRecognizer(model_dir=converted, use_gpu=True)


@pytest.fixture(scope="module", autouse=True)
def _release_engine_cache() -> Iterator[None]:
    yield
    from extractor.engines import get_engine

    get_engine.cache_clear()
