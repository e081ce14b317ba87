"""The reference form's printed labels as full-page OCR reads them, kept on disk.

The fallback aligns a page by its printed labels, found by reading the template's reference
image with full-page OCR: ~2 s of one core, paid by every process that takes the fallback once
(each `roi extract` run, each batch or service worker). The lines are kept in
``$ROI_CACHE_DIR/labels`` (default ``~/.cache/roi/labels``), one JSON file per reference image
content and OCR setting, so that only the first process reads them. A cache that cannot be
read or written costs only the reading.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from extractor.fullpage import TextLine

CACHE_DIR_ENV = "ROI_CACHE_DIR"


def cache_dir() -> Path:
    """``$ROI_CACHE_DIR`` or ``~/.cache/roi``."""
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "roi"


def reference_lines(
    path: Path, setting: str, read: Callable[[np.ndarray], list[TextLine]]
) -> list[TextLine] | None:
    """The lines ``read`` finds on the image at ``path`` (None when it is no image), from the
    cache when it holds them for this image's content and ``setting`` (what else decides the
    lines: the OCR's version and options)."""
    data = path.read_bytes()
    key = hashlib.sha256(data + b"\0" + setting.encode()).hexdigest()[:32]
    try:
        file: Path | None = cache_dir() / "labels" / f"{key}.json"
    except RuntimeError:  # no home folder to find
        file = None
    kept = _load(file) if file is not None else None
    if kept is not None:
        return kept
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return None
    lines = read(image)
    if file is not None:
        _store(file, lines, {"image": str(path), "setting": setting})
    return lines


def _load(file: Path) -> list[TextLine] | None:
    try:
        kept = json.loads(file.read_text(encoding="utf-8"))["lines"]
        return [TextLine(np.array(k["quad"], np.float32), k["text"], k["score"]) for k in kept]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(file: Path, lines: list[TextLine], about: dict[str, str]) -> None:
    """Written whole, then renamed: a process reading it meanwhile finds no file or all of it."""
    kept = [{"quad": ln.quad.tolist(), "text": ln.text, "score": ln.score} for ln in lines]
    temporary = None
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=file.parent, suffix=".tmp", delete=False
        ) as out:
            temporary = Path(out.name)
            json.dump({**about, "lines": kept}, out, ensure_ascii=False)
        os.replace(temporary, file)
    except OSError:  # a read-only or full disk: the next process reads the form again
        if temporary is not None:
            temporary.unlink(missing_ok=True)
