"""A name with room between two of its characters for one the recogniser read as nothing.

The tax software prints a name's characters at one pitch. Where one of them is too faint to
read (a worn ribbon's dots, a fold, a stain), the recogniser reads the line without it, and
what is left still reads as a name (南京弘通信技术有限责任公司 for 南京弘嘉通信…, passed). The
recogniser tells where it read each character (:attr:`~extractor.engines.Recognition.
positions`): two neighbours read :data:`GAP` pitches apart or more leave room for one between
them, and the name is in doubt (:data:`~extractor.doubts.LOST_BETWEEN`) for a party registry,
the fallback's reading (where it holds more) or a person to settle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

import numpy as np

from extractor.crops import Crop
from extractor.doubts import LOST_BETWEEN, flag, passes
from extractor.engines import Recognition
from extractor.fields import ideograph
from extractor.result import FieldResult
from extractor.templates import FieldKind

GAP = 1.75
"""Two ideographs of a name read this many pitches apart (their middles; the pitch the median
of its neighbours') leave room for one between them. The recogniser places a character to a
step of its path (~0.4 of a pitch): over ~380 names of fresh pages read right, neighbours lay
at most 1.5 pitches apart; names read with a character left out between two, 1.67-2.66."""
MIN_SPACINGS = 3  # a pitch is told from this many neighbours at least


def doubt_lost_characters(
    crops: Sequence[Crop], reads: Sequence[Recognition | None], fields: Mapping[str, FieldResult]
) -> None:
    """Flag each recognised name that passes its checks (valid, or only in doubt: the fallback
    then keeps this doubt too) whose reading leaves room for a character between two of its
    ideographs (:data:`GAP`)."""
    for crop, read in zip(crops, reads, strict=True):
        field = fields.get(crop.spec.name)
        if crop.spec.kind is not FieldKind.name or read is None or field is None:
            continue
        if not passes(field) or field.source != "roi":
            continue
        room = _room_between(read)
        if room is not None:
            a, b = (read.text[i] for i in room)
            flag(field, f"{LOST_BETWEEN} {a!r} and {b!r}, read as nothing?")


def _room_between(read: Recognition) -> tuple[int, int] | None:
    """The indexes of two neighbouring ideographs (a space read between them aside) that
    ``read`` leaves room for another between (:data:`GAP`), or None."""
    text, positions = read.text, read.positions
    if len(positions) != len(text):
        return None
    kept = [i for i, ch in enumerate(text) if not ch.isspace()]
    pairs = [(a, b) for a, b in pairwise(kept) if ideograph(text[a]) and ideograph(text[b])]
    if len(pairs) < MIN_SPACINGS:
        return None
    spacings = np.array([positions[b] - positions[a] for a, b in pairs])
    pitch = float(np.median(spacings))
    widest = int(np.argmax(spacings))
    return pairs[widest] if pitch > 0 and spacings[widest] >= GAP * pitch else None


def keep_a_lost_character(chosen: FieldResult, own: FieldResult) -> None:
    """The fallback's reading ``chosen`` of a name whose own reading (``own``) left room for a
    character keeps that doubt unless it holds more characters: full-page OCR reads the row with
    the same model, and a faint character it cannot see either is left out alike."""
    doubt = next((e for e in own.errors if e.startswith(LOST_BETWEEN)), None)
    if doubt is None or chosen is own or not chosen.value or not own.value:
        return
    if len(str(chosen.value)) <= len(str(own.value)):
        flag(chosen, doubt)
