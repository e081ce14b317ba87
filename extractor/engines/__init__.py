"""Recognition engines behind one Protocol, created by name and cached per process."""

from __future__ import annotations

from functools import cache

from extractor.engines.base import Recognition, Recognizer
from extractor.errors import EngineError

ENGINES = ("ppocr", "easyocr", "paddle")


@cache
def get_engine(name: str = "ppocr", **options: object) -> Recognizer:
    """The process's engine of this name and options (loaded once, then reused)."""
    if name == "ppocr":
        from extractor.engines.cascade import ppocr_engine

        return ppocr_engine(**options)  # type: ignore[arg-type]
    if name == "easyocr":
        from extractor.engines.easyocr import EasyOCRRecognizer

        return EasyOCRRecognizer(**options)  # type: ignore[arg-type]
    if name == "paddle":
        from extractor.engines.paddle import PaddleRecognizer

        return PaddleRecognizer(**options)  # type: ignore[arg-type]
    raise EngineError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})")


__all__ = ["ENGINES", "Recognition", "Recognizer", "get_engine"]
