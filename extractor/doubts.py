"""How a field's errors say it is in doubt, and how a check flags or confirms a field.

A value that passes its checks may still be wrong: an error that starts with one of
:data:`DOUBT` says so, and a check that holds with the value (a rule, the QR code, a second
print, the party registry) confirms it (:func:`confirm`). Any other error is a failed check.
"""

from __future__ import annotations

from extractor.covered import COVERED_BY
from extractor.result import FieldResult

LOW_CONFIDENCE = "low recognition confidence"  # a reading's
UNCERTAIN_CHARACTER = "uncertain character"  # one character's
READ_AGAIN = "read again as"  # a second reading that differs
DECIMALS = "read with"  # an amount read with another number of decimals than it is printed
LATE_START = "the line found starts"  # a name's line that starts well into its box
EARLY_END = "the line found ends"  # a name's line that ends before its box's reading does
LOST_BETWEEN = "room for a character between"  # a name's neighbours read far apart
OFF_IMAGE = "its box lies"  # a field whose box runs off the image (the page cut off there)
AT_EDGE = "the form's frame runs along"  # a field of a form that may be cut off and misplaced
COVERED = COVERED_BY  # a name beside whose box the form's print is missing (covered?)
UNENDED = "the name ends in no word a name ends in"  # …公司, …学校, …店: read short of its end?
MISREAD_PLACE = "its place may be misread"
"""A name one character off the place its tax id was registered in, which the recogniser reads
as that place nearly as likely (:mod:`extractor.places`)."""
TAKEN_FOR = "taken for a reading a character off"
"""A tax id or code taken for a reading one character off that failed its checks, which the
recogniser finds less likely than the reading, if not by much (:mod:`extractor.tax_id_repair`)."""
AMID_FAILURES = "read absent where most of the page's fields fail their checks"
"""A field read absent (an optional one left blank, a person's tax id) on a page whose boxes
mostly read what fails: the boxes may not lie over the print (the form matched misplaced)."""
REFITTED = "the form matched only once every outline on the page was refitted"
"""A page's fields read through the match :attr:`~extractor.registration.Alignment.refitted`
found: a value no other reading confirms is in doubt."""
DOUBT = (
    LOW_CONFIDENCE,
    UNCERTAIN_CHARACTER,
    READ_AGAIN,
    DECIMALS,
    LATE_START,
    EARLY_END,
    LOST_BETWEEN,
    OFF_IMAGE,
    AT_EDGE,
    COVERED,
    UNENDED,
    MISREAD_PLACE,
    TAKEN_FOR,
    AMID_FAILURES,
    REFITTED,
)
"""How the doubts read: errors that say a value that passes its checks may still be wrong."""
_READING_DOUBTS = (LOW_CONFIDENCE, UNCERTAIN_CHARACTER, READ_AGAIN, DECIMALS)
"""The doubts about a reading's characters, which a value taken for it answers."""


def take_for_reading(
    field: FieldResult, value: str, note: str, cost: float, sure_cost: float, doubt: str
) -> None:
    """Give ``field`` ``value`` for its reading, ``note`` saying so. The doubts about how its
    characters read go with the reading; those about where its print lies (cut off, covered, a
    late start) stay. Where the recogniser finds ``value`` more than ``sure_cost`` less likely
    than the reading (``cost``, natural log), it is in doubt: ``doubt`` says why."""
    kept = [e for e in field.errors if e.startswith(DOUBT) and not e.startswith(_READING_DOUBTS)]
    field.value, field.errors, field.valid, field.note = value, kept, not kept, note
    if cost > sure_cost:
        flag(field, f"{doubt} (e^{cost:.1f} less likely than the reading)")


def only_doubt(field: FieldResult) -> bool:
    """Whether all a field's errors are doubt (its value passes its checks)."""
    return all(error.startswith(DOUBT) for error in field.errors)


def passes(field: FieldResult) -> bool:
    """Whether a field's value passes its own checks (valid, or flagged only for doubt)."""
    return field.value is not None and (field.valid or only_doubt(field))


def flag(field: FieldResult, why: str) -> None:
    """Flag a field, once (the registry is checked before the fallback and again after)."""
    if why not in field.errors:
        field.errors.append(why)
    field.valid = False


def confirm(field: FieldResult, how: str) -> None:
    """A field flagged only for doubt made valid, ``how`` after any note it has (a mend's)."""
    if not field.valid and only_doubt(field):
        field.errors, field.valid = [], True
        field.note = f"{field.note}; {how}" if field.note else how
