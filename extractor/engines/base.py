"""The one small interface every recognition engine implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True, slots=True)
class Recognition:
    """What an engine read in one crop."""

    text: str
    confidence: float
    """Mean of the per-character confidences (0 for an empty read)."""
    char_confidences: tuple[float, ...] = field(default_factory=tuple)


@runtime_checkable
class Recognizer(Protocol):
    """Reads single text lines; no detection.

    ``crops`` are BGR uint8 images of one text line each. ``allowlists`` holds, for each crop,
    the characters it may contain (``None``: any). Engines batch internally.
    """

    name: str

    def recognize(
        self, crops: Sequence[np.ndarray], allowlists: Sequence[str | None]
    ) -> list[Recognition]: ...
