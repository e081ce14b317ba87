"""The structure of a VAT invoice's code (发票代码) and a 数电票's number, beyond their digits.

A 12-digit code (普票 since 2018, electronic 普票 and 专票) reads 0, the region (4 digits), the
year its forms were printed (2), the batch (3) and the kind of form (2); a 10-digit code (专票,
普票 before 2018) starts with the region. The region is the tax bureau that issued the forms: a
province's, autonomous region's or municipality's (its division code's first two digits and
00: 3200 Jiangsu, 1100 Beijing) or one of the five cities separately listed in the state plan
(计划单列市), which have their own. A code whose region is neither was misread, as is a
12-digit code whose last two digits name no kind of VAT invoice.

A 数电票's 20-digit number (发票号码) reads the year it was issued (2 digits), the province (2:
its division code's first), the channel it was issued by (1) and a sequence (15).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from types import MappingProxyType

from extractor.fields.taxid import PROVINCES

SEPARATELY_LISTED_CITIES = frozenset({"2102", "3302", "3502", "3702", "4403"})
"""计划单列市, whose tax bureaus issue their own codes: Dalian, Ningbo, Xiamen, Qingdao and
Shenzhen."""


KINDS_OF_12_DIGITS = frozenset({"04", "05", "06", "07", "11", "12", "13"})
"""How a 12-digit VAT invoice code ends: 04 and 05 the paper 普票 (two and five copies), 06 and
07 its rolls, 11 the electronic 普票, 12 its toll-road kind, 13 the electronic 专票."""


def _region_at(code: str) -> int | None:
    """Where a VAT invoice code's 4 region digits start (a 12-digit code's after its 0), or
    None for what is no such code (not 10 or 12 digits)."""
    if not code.isdigit() or len(code) not in (10, 12):
        return None
    return 0 if len(code) == 10 else 1


def printed_year(code: str) -> int | None:
    """The year a VAT invoice code's forms were printed (its 2 digits after the region), or None
    for what is no such code (not 10 or 12 digits)."""
    start = _region_at(code)
    if start is None:
        return None
    yy = int(code[start + 4 : start + 6])
    return (2000 if yy <= 50 else 1900) + yy


def invoice_code_errors(code: str) -> list[str]:
    """Why ``code`` (digits, 10 or 12 of them) cannot be a VAT invoice's code: a 12-digit code
    starts with another digit than 0 (the State Taxation Administration's rule for them, 2017
    No. 44), its region digits name no tax bureau that issues invoices, its year digits forms
    printed more than :data:`FORM_AHEAD_YEARS` after this year (this machine's), or a
    12-digit code's last two no kind of invoice (:data:`KINDS_OF_12_DIGITS`). Other lengths and
    characters are the regex's and the kind's to tell, and give no error here."""
    start = _region_at(code)
    if start is None:
        return []
    region = code[start : start + 4]
    errors = []
    if start == 1 and code[0] != "0":
        errors.append(f"its first digit is {code[0]}, a 12-digit code's is 0: a digit misread")
    bureau = region in SEPARATELY_LISTED_CITIES or (region[:2] in PROVINCES and region[2:] == "00")
    if not bureau:
        errors.append(
            f"its region {region} (digits {start + 1}-{start + 4}) is no province's (00 after its"
            " two digits) nor a separately listed city's: a digit misread"
        )
    ahead = _printed_too_late(code, dt.date.today().year)  # as for an issue date's year
    if ahead is not None:
        errors.append(
            f"its year {code[start + 4 : start + 6]} (digits {start + 5}-{start + 6}) {ahead},"
            " more than a year from now: a digit misread"
        )
    if len(code) == 12 and code[10:] not in KINDS_OF_12_DIGITS:
        kinds = ", ".join(sorted(KINDS_OF_12_DIGITS))
        errors.append(
            f"its kind {code[10:]} (digits 11-12) is none a VAT invoice's ({kinds}): a digit"
            " misread"
        )
    return errors


DIGITAL_NUMBER_LENGTH = 20


def _digital_number(number: str) -> bool:
    return number.isdigit() and len(number) == DIGITAL_NUMBER_LENGTH


def digital_number_errors(number: str) -> list[str]:
    """Why ``number`` (20 digits) cannot be a 数电票's number: its digits 3-4 name no province,
    or its first two a year after this one (this machine's).
    A national invoice's number (8 digits) has no structure and gives no error here; nor do
    other lengths and characters, which are the regex's and the kind's to tell."""
    if not _digital_number(number):
        return []
    errors = []
    if number[2:4] not in PROVINCES:
        errors.append(f"its province {number[2:4]} (digits 3-4) is none: a digit misread")
    issued = issued_year(number)
    if issued is not None and issued > dt.date.today().year:
        errors.append(f"its year {number[:2]} (digits 1-2) is after this year: a digit misread")
    return errors


def issued_year(number: str) -> int | None:
    """The year a 数电票 was issued, as its 20-digit number reads it, or None for what is no such
    number."""
    return 2000 + int(number[:2]) if _digital_number(number) else None


FORM_AHEAD_YEARS = 1
"""How many years an invoice code's printed year may run ahead of the issue date: forms are
printed for a year and issued in it or later; one year's slack for a batch printed ahead."""


def _printed_too_late(code: str, issued: int) -> str | None:
    printed = printed_year(code)
    if printed is not None and printed > issued + FORM_AHEAD_YEARS:
        return f"names forms printed in {printed}"
    return None


def _issued_another_year(number: str, issued: int) -> str | None:
    year = issued_year(number)
    return f"names the year it was issued, {year}" if year is not None and year != issued else None


YEAR_RULES: Mapping[str, Callable[[str, int], str | None]] = MappingProxyType(
    {"invoice_code": _printed_too_late, "invoice_number": _issued_another_year}
)
"""The structure checks (a field's ``check``) whose value reads a year, each with what the value
says of it that rules out an issue in a given year (None where nothing does): an invoice code
names the year its forms were printed (:func:`printed_year`), issued that year or later,
:data:`FORM_AHEAD_YEARS` earlier at most; a 数电票's number the year it was issued
(:func:`issued_year`)."""
