"""A value no check holds, read sure of itself, read again with its print at two other sizes.

On a blurred photo the recogniser misreads a character as another that looks alike and is sure
of it (辰 read 展, 天 read 关, 禾 read 未; a check code's 8 read 0): where nothing checks the
value (a name; a code the form prints once, which no check digit or second print vouches for),
it passes. What the model sees of a blurred character depends on the size it is shown at: the
same crop with more paper above and below its print (the print ~70% as tall in the model's
input) or with less (~125%) often reads otherwise where the first reading was a misread, and
alike where it was right. Such a value read with any character under :data:`SURE` is read
again both ways; a reading that differs and passes the field's checks puts it in doubt
(:data:`~extractor.doubts.READ_AGAIN`), for a party registry or a person to settle. It calls
for no full-page OCR (the fallback reads the row with the same model, and misread it alike or
as a third value as often as not); where the fallback runs for another field, its reading of
the row keeps the doubt unless it is the other value.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

import cv2
import numpy as np

from extractor.crops import Crop
from extractor.doubts import READ_AGAIN, flag
from extractor.engines import Recognition, Recognizer
from extractor.fields import (
    FieldCheck,
    check_value,
    ends_as_a_name,
    resolve_allowlist,
    weakest,
)
from extractor.result import FieldResult
from extractor.templates import AGAIN, FieldKind, FieldSpec

SURE = 0.9
"""A value read with every character at this confidence or more is not read again: misreads
sure of themselves sit under it far more often than right readings (on blurred photos 8% of
the names and 6% of the check codes are read again; on scans 3% of the names)."""
MORE_PAPER = 0.2  # of the crop's height, added above and below (its edge rows repeated)
LESS_PAPER = 0.1  # of the crop's height, taken off its top and bottom
AT_ANOTHER_SIZE = "with its print at another size"  # this check's doubt, after READ_AGAIN


def look_again(
    engine: Recognizer,
    crops: Sequence[Crop],
    reads: Sequence[Recognition | None],
    fields: Mapping[str, FieldResult],
) -> None:
    """Flag each value no check holds (:func:`unchecked`), recognised and passing its checks
    with a character under :data:`SURE`, whose crop with more paper around its print or less
    reads as another value that passes them (both read in one engine call)."""
    again = [
        crop
        for crop, read in zip(crops, reads, strict=True)
        if unchecked(crop.spec)
        and read is not None
        and _wants_a_second_look(crop.spec, read, fields.get(crop.spec.name))
    ]
    if not again:
        return
    images = [image for crop in again for image in _at_other_sizes(crop.image)]
    allowlists = [resolve_allowlist(c.spec.allowlist, c.spec.kind) for c in again for _ in (1, 2)]
    readings = engine.recognize(images, allowlists)
    for k, crop in enumerate(again):
        field = fields[crop.spec.name]
        for read in readings[2 * k : 2 * k + 2]:
            other = check_value(crop.spec, read.text)
            if _passes(crop.spec, other) and other.value != field.value:
                flag(field, f"{READ_AGAIN} {other.value!r} {AT_ANOTHER_SIZE}")
                break


def unchecked(spec: FieldSpec) -> bool:
    """Whether no check holds the field's value: a name, or a code the form prints once (not
    a code's second print, which is read against its first)."""
    once = spec.printed_again is None and not spec.name.endswith(AGAIN)
    return spec.kind is FieldKind.name or (spec.kind is FieldKind.code and once)


def _passes(spec: FieldSpec, checked: FieldCheck) -> bool:
    """Whether a reading checked (``checked``) passes as ``spec``'s value: a name's must also
    end as a name does (…公司, …中心: one read short of its end says nothing of the first)."""
    if checked.value is None or checked.errors:
        return False
    return spec.kind is not FieldKind.name or ends_as_a_name(checked.value)


def _wants_a_second_look(spec: FieldSpec, read: Recognition, field: FieldResult | None) -> bool:
    """Whether ``read``, recognised as ``field`` and passing, has a character whose doubt
    counts (not a name's paired brackets, :func:`~extractor.fields.telling`) under :data:`SURE`."""
    if field is None or not field.valid or field.source != "roi":
        return False
    checked = check_value(spec, read.text)
    at = weakest(spec.kind, read.text, read.char_confidences, checked)
    return at is not None and read.char_confidences[at] < SURE


def _at_other_sizes(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The crop with more paper above and below its print, and with less."""
    h = image.shape[0]
    more = max(2, round(MORE_PAPER * h))
    less = max(1, round(LESS_PAPER * h))
    padded = cv2.copyMakeBorder(image, more, more, 0, 0, cv2.BORDER_REPLICATE)
    trimmed = image[less : h - less] if h - 2 * less > 8 else image
    return padded, trimmed


def looked_again_only(field: FieldResult) -> bool:
    """Whether the only thing wrong with ``field`` is that it read otherwise at another size."""
    return bool(field.errors) and all(_looked_again(error) for error in field.errors)


def _looked_again(error: str) -> bool:
    return error.startswith(READ_AGAIN) and error.endswith(AT_ANOTHER_SIZE)


def keep_a_second_look(chosen: FieldResult, own: FieldResult) -> None:
    """The fallback's reading ``chosen`` of a field whose own reading (``own``) read as another
    value at another size keeps that doubt unless it is that other value: full-page OCR reads
    the line with the same model, and a blurred character misread it often misreads alike (or
    as a third value); two readings of the other value outweigh the first."""
    if chosen is own:
        return
    for error in own.errors:
        if _looked_again(error):
            other = ast.literal_eval(error[len(READ_AGAIN) : -len(AT_ANOTHER_SIZE)].strip())
            if chosen.value != other:
                flag(chosen, error)
