"""The one small interface every recognition engine implements."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
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
    positions: tuple[float, ...] = field(default_factory=tuple)
    """Where each character was read along the crop, its middle as a share of the crop's width
    (0 its left edge, 1 its right); empty where the engine does not tell."""


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


Confirm = Callable[[Sequence[Recognition | None]], Collection[int]]
"""Given an engine's first readings of a call's crops (None: a crop it has not read yet), the
indexes of those that other readings confirm as they are (the caller's cross-checks: a sum that
holds, the QR code stating the same value)."""
Known = Callable[[Sequence[Recognition | None]], Collection[int]]
"""Given an engine's first readings of a call's crops, the crops without an allowlist (free
text) whose text the caller may know from them: a party's name, where the tax id read beside it
is registered. A cheap reading of those is worth making: ``Confirm`` may then confirm it."""


def recognize_confirming(
    engine: Recognizer,
    crops: Sequence[np.ndarray],
    allowlists: Sequence[str | None],
    confirmed: Confirm,
    known: Known | None = None,
) -> list[Recognition]:
    """``engine.recognize``; an engine that reads doubtful crops a second time (``reads_twice``:
    the cascade) first asks ``confirmed`` which of its first readings need not be, those of the
    crops ``known`` names (free text the caller may know, a registered party's name) among
    them."""
    if getattr(engine, "reads_twice", False):
        return engine.recognize(crops, allowlists, confirmed=confirmed, known=known)  # type: ignore[call-arg]
    return engine.recognize(crops, allowlists)
