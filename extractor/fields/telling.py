"""The characters of a reading whose doubt counts for its field's value."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from extractor.fields.charsets import BRACKETS, value_start
from extractor.fields.check import FieldCheck
from extractor.templates import FieldKind

_MOOT: Mapping[FieldKind, Callable[[str], bool]] = {
    FieldKind.date: lambda ch: not ch.isdigit(),
    FieldKind.name: lambda ch: ch in BRACKETS,
}
"""Per kind, the characters whose doubt does not count once the value passes its checks."""


def telling(kind: FieldKind, raw: str, checked: FieldCheck) -> list[int]:
    """The indexes in ``raw`` (checked as ``checked``) of the characters whose doubt counts:
    not a leading ¥ or ⊗, nor a date's 年/月/日 and separators once the date reads as one (the
    value is its digits), nor a name's brackets once they pair (a full-width one or a
    half-width: the recogniser splits its belief between two classes print does not tell
    apart, and the name writes its own), nor what was left out of the reading (a seal's print
    after a tax id)."""
    start, end = value_start(raw), _kept_end(raw, checked.left_out)
    moot = _MOOT.get(kind)
    return [i for i in range(start, end) if moot is None or checked.errors or not moot(raw[i])]


def weakest(
    kind: FieldKind, raw: str, confidences: Sequence[float], checked: FieldCheck
) -> int | None:
    """The index in ``raw`` of the character whose doubt counts (:func:`telling`) read least
    sure (``confidences``, one a character); None where none counts, or where the engine gave
    no confidence per character."""
    if len(confidences) != len(raw):
        return None
    return min(telling(kind, raw, checked), key=confidences.__getitem__, default=None)


def _kept_end(raw: str, left_out: int) -> int:
    """The index in ``raw`` where the ``left_out`` characters (spaces aside) that end it start:
    where the value the check kept of the reading ends."""
    end = len(raw)
    while left_out > 0 and end > 0:
        end -= 1
        left_out -= not raw[end].isspace()
    return end
