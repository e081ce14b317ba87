"""Boxes that hold no print, and what a field's blank box says: an optional field read as
nothing where its box holds print is not absent; a person has no tax id; a box read blank
where most of the page's boxes read what fails is no sure sign of absence."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from extractor.crops import Crop
from extractor.doubts import AMID_FAILURES, AT_EDGE, OFF_IMAGE, flag, passes
from extractor.engines import Recognition
from extractor.fields import person_name
from extractor.result import FieldResult
from extractor.templates import Template

BLANK_SHARE = 0.25
"""A box whose ink is narrower than this share of it holds no value (:func:`blank_fields`)."""
_PRINT_READ_AS_NOTHING = "its box holds print, read as nothing"
MOST_FAIL = 0.5
"""A page on which more than this share of the required fields fail their checks was read
through boxes that may not lie over its print (:func:`doubt_absence_amid_failures`)."""


def blank_fields(crops: Sequence[Crop], template: Template) -> set[str]:
    """The fields whose box holds no print: no ink in it, or ink narrower than a quarter of the
    box (a speck, a stray mark: read as 1 or P, it is no value of a field that fills its box)."""
    ppm = template.px_per_mm
    return {
        crop.spec.name
        for crop in crops
        if not crop.has_ink or crop.image.shape[1] < BLANK_SHARE * crop.spec.box.w * ppm
    }


def doubt_print_read_as_nothing(
    crops: Sequence[Crop],
    reads: Sequence[Recognition | None],
    blank: Collection[str],
    fields: dict[str, FieldResult],
) -> None:
    """An optional field whose box holds print (not :func:`blank_fields`) that the recogniser
    read as nothing is not absent: flagged. (An e-invoice photographed small: its machine number,
    under the paper form's check code box, blurred past reading, gave a check code that is not
    there, valid, where the e-invoice prints one elsewhere.)"""
    for crop, read in zip(crops, reads, strict=True):
        field = fields.get(crop.spec.name)
        if read is None or read.text or crop.spec.name in blank or field is None:
            continue
        if field.value is None and field.valid:
            flag(field, _PRINT_READ_AS_NOTHING)


def no_tax_id_for_a_person(
    template: Template, fields: dict[str, FieldResult], blank: Collection[str]
) -> None:
    """A party that may be a person (:attr:`PartyFields.may_be_a_person`: a 普通发票's buyer)
    whose name reads as a person's (张伟, 个人) has no tax id: its tax id's box, blank (in
    ``blank``: :func:`blank_fields`; no text in the text layer's), is absent, not missing, and no
    fallback is sent to look for it. A box whose print was read as nothing is still missing."""
    for party in template.parties:
        name, tax_id = fields.get(party.name), fields.get(party.tax_id)
        if not (party.may_be_a_person and name and tax_id and party.tax_id in blank):
            continue
        cut = any(e.startswith((OFF_IMAGE, AT_EDGE)) for e in name.errors + tax_id.errors)
        if cut or tax_id.valid or not passes(name) or not person_name(name.value or ""):
            continue
        note = f"none printed: {name.value} is a person, who has no tax id"
        if tax_id.raw:
            note += f" (a speck read {tax_id.raw!r} left out)"
        tax_id.value, tax_id.errors, tax_id.valid, tax_id.note = None, [], True, note


def doubt_absence_amid_failures(template: Template, fields: dict[str, FieldResult]) -> None:
    """A field read absent (valid, no value: an optional field's blank box, a person's tax id)
    on a page where more than :data:`MOST_FAIL` of the required fields fail their checks is in
    doubt: where the boxes read their neighbours' values or nothing of theirs (a 增值税电子普通发票
    photographed small on an A4 sheet, matched a row off: its names read as tax ids), a blank
    box says nothing of the page's print."""
    required = [fields.get(spec.name) for spec in template.fields if spec.required]
    failing = sum(field is None or not passes(field) for field in required)
    if not required or failing <= MOST_FAIL * len(required):
        return
    for field in fields.values():
        if field.valid and field.value is None:
            flag(field, f"{AMID_FAILURES} ({failing} of {len(required)})")
