"""The fields the form prints twice (:attr:`~extractor.templates.FieldSpec.printed_again`:
the national form's code and number, small at its top-right corner too), each print read on
its own and checked against the other."""

from __future__ import annotations

from collections.abc import Mapping

from extractor.doubts import confirm, flag
from extractor.result import FieldResult
from extractor.templates import AGAIN, Template


def printed_alike(template: Template, values: Mapping[str, str | None]) -> set[str]:
    """The fields (and their second prints) whose two prints read the same valid value
    (``values``: None for a reading not valid): two prints, each read on its own, do not read
    alike by chance."""
    alike: set[str] = set()
    for spec in template.fields:
        value = values.get(spec.name)
        if value is not None and values.get(spec.name + AGAIN) == value:
            alike.update((spec.name, spec.name + AGAIN))
    return alike


def check_second_prints(
    template: Template, found: Mapping[str, FieldResult], fields: dict[str, FieldResult]
) -> None:
    """The fields the form prints twice (:attr:`FieldSpec.printed_again`: the national form's
    code and number, small at its top-right corner too) against their second print's reading
    (``found[<field>.again]``), in place. Where the second print reads valid: the same value
    confirms a reading in doubt; a reading that fails its checks or is in doubt, or that is
    the second print with digits lost at either end (the first print cut off at the page's
    edge), takes the second print's value; a valid reading of another value of the same length
    is flagged (two prints disagree: a person looks). A second print that reads in doubt, not
    at all, or shorter (cut off: it lies near the page's edge) changes nothing."""
    for spec in template.fields:
        field, again = fields.get(spec.name), found.get(spec.name + AGAIN)
        if field is None or again is None or not again.valid or field.source == "qr":
            continue
        value, other = field.value or "", str(again.value)
        if len(other) < len(value):  # cut off (a 12-digit code read as a valid 10)
            continue
        if value == other:
            confirm(field, "confirmed by its second print")
        elif not field.valid or (value and _cut_from(value, other)):
            read = f"{field.raw!r}" if field.raw else "nothing"
            fields[spec.name] = again.model_copy(
                update={"note": f"read from its second print: its box read {read}"}
            )
        elif len(value) == len(other):
            flag(field, f"its second print reads {other}")


def _cut_from(value: str, whole: str) -> bool:
    """Whether ``value`` is ``whole`` with characters lost at its start or its end."""
    return len(value) < len(whole) and (whole.startswith(value) or whole.endswith(value))
