"""A name whose line starts further into its box than the line it is printed in column with.

The national form's tax software prints a party's name, tax id, address and bank account from
one column, and a 数电票 lays its buyer's and seller's blocks out alike: where the first
characters of a name fade under a phone's flash, wear off or lie under a fold, the name's ink
starts a character or more further in than its column's (the template's
:attr:`~extractor.templates.FieldSpec.starts_with`), and what is left still reads as a name
(福州市鼓楼区人民医院 read 市鼓楼区人民医院, passed). Such a reading is in doubt
(:data:`~extractor.doubts.LATE_START`): a rule cannot settle it, a party registry or the
fallback's reading of its row can.

Where the print lies over the form's labels (the data layer printed millimetres left of its
cells), a name's crop has the labels' strokes taken out of it (:func:`~extractor.crops.
separate_ink`), and with them what of its first character lies on them, and a tax id's crop may
hold what is left of its label's colon: neither line is taken to start left of where the labels
in the two rows end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher

import numpy as np

from extractor.crops import Crop
from extractor.doubts import LATE_START, flag, passes
from extractor.registration import reference_for
from extractor.result import FieldResult
from extractor.templates import Template

LATE_MM = 1.7
"""A name's line starting this much further into its box than its column's (half a character
of the forms' 3.4 mm print) has lost its start. On 328 fixture and fresh pages read right, names
started at most 1.4 mm further in than their tax ids; a name that lost its first character
under a flash started 2.0-8 mm further in."""
FURTHER_IN = "further into its box than"  # this check's doubt, after LATE_START and how far


def doubt_late_starts(
    template: Template, crops: Sequence[Crop], fields: Mapping[str, FieldResult]
) -> None:
    """Flag each recognised name whose line starts :data:`LATE_MM` or more further into its
    box than the field it :attr:`~extractor.templates.FieldSpec.starts_with` (a reading that
    passes; only names have one: the template says so)."""
    by_name = {crop.spec.name: crop for crop in crops}
    ppm = template.px_per_mm
    for spec in template.fields:
        column = spec.starts_with
        own, other = by_name.get(spec.name), by_name.get(column or "")
        field, beside = fields.get(spec.name), fields.get(column or "")
        if (
            own is None
            or other is None
            or field is None
            or beside is None
            or field.source != "roi"
            or field.value is None
            or not passes(beside)
        ):
            continue
        # neither line is told to start left of where the labels in the two rows end: the
        # name's crop has them taken out, the other's may hold a remnant of its colon
        floor = max(_label_end_mm(template, spec.name), _label_end_mm(template, other.spec.name))
        start, start_beside = own.start(floor * ppm), other.start(floor * ppm)
        if start is None or start_beside is None:
            continue
        late = (start - start_beside) / ppm
        if late >= LATE_MM:
            flag(
                field,
                f"{LATE_START} {late:.1f} mm {FURTHER_IN} {column}'s: its first characters may "
                "be missing",
            )


def keep_a_late_start(chosen: FieldResult, own: FieldResult) -> None:
    """The fallback's reading ``chosen`` of a name whose own reading (``own``) started late
    keeps that doubt, unless it holds more in front: full-page OCR finds the line where the
    same ink starts (福州市鼓楼区人民医院 faded to 市鼓楼区…, both readings alike)."""
    doubt = next((e for e in own.errors if e.startswith(LATE_START) and FURTHER_IN in e), None)
    if doubt is None or chosen is own or not chosen.value or not own.value:
        return
    chosen_value, own_value = str(chosen.value), str(own.value)
    matcher = SequenceMatcher(None, chosen_value, own_value, autojunk=False)
    match = matcher.find_longest_match(0, len(chosen_value), 0, len(own_value))
    if match.size == 0 or match.a - match.b <= 0:  # nothing more in front of what both read
        flag(chosen, doubt)


def _label_end_mm(template: Template, field: str) -> float:
    """How far into the field's box (mm; negative: left of it) the form's labels in the box's
    rows reach, left of its middle: where the name's printed label (名称：) ends."""
    spec, ppm = template.field(field), template.px_per_mm
    labels = reference_for(template).labels
    y0, y1 = round(spec.box.y * ppm), round((spec.box.y + spec.box.h) * ppm)
    x1 = round((spec.box.x + spec.box.w / 2) * ppm)
    columns = np.flatnonzero(labels[y0:y1, :x1].any(axis=0))
    return (columns[-1] + 1) / ppm - spec.box.x if len(columns) else -np.inf
