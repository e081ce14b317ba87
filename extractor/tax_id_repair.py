"""A tax id that fails its checks, read one character off an id that passes them.

GB 32100's check character catches every single misread of a unified social credit code, and
its division and organisation codes most pairs (:mod:`extractor.fields.taxid`). Few ids lie one
character away from a reading (a character changed, lost or read twice) and pass every check:
a handful of the ~560. The recogniser is asked how likely it finds each of them in the field's
crop (:meth:`~extractor.engines.ctc.CTCLineReader.likelihoods`). Where one reads nearly as
likely as what was read (:data:`SURE_COST`) and clearly likelier than every other
(:data:`REPAIR_MARGIN`), it is the id; a little less likely (:data:`REPAIR_COST`), it is taken
in doubt. The note says what was read. A reading two or more characters off mostly finds no
such id, or one far less likely than what was read: it stays as read, flagged.

A code whose structure its template checks (``check``: an invoice code's region, year and kind,
a 数电票 number's province and year) is repaired the same way from the codes one digit off it
that pass (:func:`one_digit_codes`): a 12-digit code read 011061700204, its region 1106 no
tax bureau's, has one, 011001700204 (Beijing's 1100).
"""

from __future__ import annotations

from extractor.cross_check import Judge
from extractor.doubts import TAKEN_FOR, take_for_reading
from extractor.fields import check_value, tax_id_errors
from extractor.fields.charsets import USCC_CHARSET
from extractor.fields.taxid import USCC_LENGTH
from extractor.result import FieldResult
from extractor.templates import FieldKind, FieldSpec, Template

SURE_COST = 3.0
"""How much less likely (natural log) than the reading the recogniser may find the id taken for
it, for the id to pass: e^3, 20 times. Of 226 ids that failed their checks on 562 blurred fresh
pages (heavy and geometry, eleven kinds of form; seeds 20294000-, 20295000-, 20297100-,
20297200-), 76 lay one character off ids that pass every check. The right id was the likeliest
51 times, within 3.0 of the reading in 45 (3.1-6.1 less likely in the others); where it was
not (the reading two or more off), the likeliest read 3.7 less likely or more."""
REPAIR_COST = 5.0
"""Up to this much less likely (e^5, ~150 times), the id is taken in doubt
(:data:`~extractor.doubts.TAKEN_FOR`): more often right than the reading, not sure."""
REPAIR_MARGIN = 5.0
"""How much likelier (natural log) than every other id one character off the reading the one
taken must be: where two read about as likely (0.6-3.9 apart on the pages above, a wrong id the
likeliest each time), the print does not tell them apart."""


def one_edit_ids(read: str) -> list[str]:
    """The unified social credit codes one character off ``read`` (a character changed, added
    or dropped) that pass every check of a tax id, in a stable order."""
    n = len(read)
    edits: set[str] = set()
    if n == USCC_LENGTH:
        edits = {read[:i] + c + read[i + 1 :] for i in range(n) for c in USCC_CHARSET}
    elif n == USCC_LENGTH - 1:
        edits = {read[:i] + c + read[i:] for i in range(n + 1) for c in USCC_CHARSET}
    elif n == USCC_LENGTH + 1:
        edits = {read[:i] + read[i + 1 :] for i in range(n)}
    edits.discard(read)
    return sorted(edit for edit in edits if not tax_id_errors(edit))


def one_digit_codes(spec: FieldSpec, read: str) -> list[str]:
    """The codes one digit changed from ``read`` (digits) that pass every check of ``spec`` (its
    kind's, its regex, its structure ``check``), in a stable order; none for another reading. A
    digit lost or read twice is not tried: a code's checks hold for most codes, and a digit put
    anywhere would give dozens."""
    if not read.isdigit():
        return []
    edits = {read[:i] + d + read[i + 1 :] for i in range(len(read)) for d in "0123456789"}
    edits.discard(read)
    return sorted(edit for edit in edits if not check_value(spec, edit).errors)


def repair_tax_ids(judge: Judge | None, template: Template, fields: dict[str, FieldResult]) -> None:
    """Each tax id the template's boxes read that fails its checks takes the id one character
    off it that the recogniser finds as likely in its crop (``judge``, :func:`one_edit_ids`),
    where one stands out; so does each code whose structure check it fails, from the codes one
    digit off it (:func:`one_digit_codes`). The note says what was read. Nothing where the
    recogniser cannot tell (``judge`` None, or it has no answer for the field)."""
    if judge is None:
        return
    for spec in template.fields:
        field = fields.get(spec.name)
        if field is None or field.source != "roi" or field.value is None:
            continue
        if spec.kind is FieldKind.tax_id and tax_id_errors(field.value):
            candidates, what = one_edit_ids(field.value), "id a character"
        elif spec.kind is FieldKind.code and spec.check and check_value(spec, field.value).errors:
            candidates, what = one_digit_codes(spec, field.value), "code a digit"
        else:
            continue
        if candidates:
            _take_likeliest(judge, spec.name, field, field.value, candidates, what)


def _take_likeliest(
    judge: Judge, name: str, field: FieldResult, value: str, candidates: list[str], what: str
) -> None:
    """``field``, read ``value``, takes the one of ``candidates`` the recogniser finds nearly as
    likely in its crop as the reading and clearly likelier than every other, in doubt where less
    likely."""
    read, *scores = judge(name, [value, *candidates])
    ranked = sorted(
        ((score, c) for score, c in zip(scores, candidates, strict=True) if score is not None),
        reverse=True,
    )
    if read is None or not ranked:
        return
    best, taken = ranked[0]
    runner_up = ranked[1][0] if len(ranked) > 1 else None
    cost = read - best
    if cost > REPAIR_COST or (runner_up is not None and best - runner_up < REPAIR_MARGIN):
        return
    note = (
        f"read {value!r}, which fails its checks: taken as {taken!r}, the one {what} off "
        "it that passes them and that the recogniser finds nearly as likely"
    )
    take_for_reading(field, taken, note, cost, SURE_COST, TAKEN_FOR)
