"""Taxpayer ids: the 18-char unified social credit code (USCC) and older 15/20-char ids."""

from __future__ import annotations

import datetime as dt
import re

from extractor.fields.charsets import USCC_CHARSET

USCC_LENGTH = 18
USCC_WEIGHTS = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
ORG_WEIGHTS = (3, 7, 9, 10, 5, 8, 4, 2)
_OLD_ID = re.compile(r"[0-9A-Z]+")
_OLD_ID_LENGTHS = (15, 20)
_PROVINCE_RUNS = ((11, 15), (21, 23), (31, 37), (41, 46), (50, 54), (61, 65), (71, 71), (81, 82))
PROVINCES = frozenset(str(n) for low, high in _PROVINCE_RUNS for n in range(low, high + 1))
"""The first two digits of an administrative division code (GB/T 2260): where an old id starts."""
_PREFECTURE_RUNS = ((0, 34), (40, 43), (51, 53), (90, 90))
PREFECTURES = frozenset(f"{n:02d}" for low, high in _PREFECTURE_RUNS for n in range(low, high + 1))
"""The division code's third and fourth digits since 2015 (GB/T 2260), when USCCs were given:
00 (the province itself), a city (01-20), a prefecture, league or autonomous prefecture (21-34;
40-43 in Xinjiang), Guangdong's cities numbered after them (51-53), or 90, the counties a
province administers directly. Older codes (in old ids, identity cards) are not held to it."""
NATIONAL_DIVISION = "100000"
"""The division code of a USCC given by a national registry (a central enterprise, a ministry)."""
USCC_PROVINCES = PROVINCES | {"66"}
"""A USCC's province: GB/T 2260's, or 66, which some national registries give the Xinjiang
Production and Construction Corps (新疆生产建设兵团): accepted, lest a real id be flagged."""


def _bad_chars(code: str) -> str | None:
    for i, ch in enumerate(code, start=1):
        if ch not in USCC_CHARSET:
            return f"character {ch!r} at position {i} is not allowed in a USCC"
    return None


def uscc_check_char(first17: str) -> str:
    """The check character (GB 32100-2015) for the first 17 characters of a USCC."""
    if len(first17) != 17:
        raise ValueError(f"a USCC body is 17 characters, got {len(first17)}")
    problem = _bad_chars(first17)
    if problem:
        raise ValueError(problem)
    total = sum(USCC_CHARSET.index(ch) * w for ch, w in zip(first17, USCC_WEIGHTS, strict=True))
    return USCC_CHARSET[(31 - total % 31) % 31]


def uscc_error(code: str) -> str | None:
    """What is wrong with ``code`` as a USCC, or ``None`` when it is valid."""
    if len(code) != USCC_LENGTH:
        return f"a USCC is {USCC_LENGTH} characters, got {len(code)}"
    problem = _bad_chars(code)
    if problem:
        return problem
    expected = uscc_check_char(code[:17])
    if code[17] != expected:
        return f"check digit is {code[17]}, expected {expected}"
    return _division_error(code[2:8]) or _organisation_error(code[8:17])


def _division_error(division: str) -> str | None:
    """What is wrong with a USCC's characters 3-8 as the registry's division code, or ``None``:
    six digits, a province's first, a prefecture's next (:data:`PREFECTURES`). A code misread
    in two places passes its check character one time in 31; 57 of the 100 two-digit numbers
    are no prefecture."""
    if division == NATIONAL_DIVISION:
        return None
    if not division.isdigit():
        return f"characters 3-8, {division!r}, are no division code (6 digits)"
    if division[:2] not in USCC_PROVINCES:
        return f"characters 3-8, {division!r}, are no division code (no province {division[:2]})"
    if division[2:4] not in PREFECTURES:
        return (
            f"characters 3-8, {division!r}, are no division code "
            f"(no prefecture {division[2:4]} in a province)"
        )
    return None


def _organisation_error(organisation: str) -> str | None:
    """What is wrong with a USCC's characters 9-17 as an organisation code (GB 11714, its last
    character a check on the first eight, mod 11), or ``None``. Every USCC holds one: a code
    misread in two of those places that passes the USCC's check fails this ten times in 11."""
    if org_check_char(organisation[:8]) != organisation[8]:
        return f"characters 9-17, {organisation!r}, fail the organisation code's check (GB 11714)"
    return None


LOOK_ALIKE_CHECK_CHARS = frozenset({"8B", "B8", "0D", "D0", "0Q", "Q0", "6G", "G6"})
"""A USCC's check character read as, and the one its first 17 give: the pairs a blurred letter
and digit are taken for each other in (8 and B, 0 and D or Q, 6 and G)."""


def look_alike_check_char(code: str) -> str | None:
    """``code`` with the check character its first 17 characters give, where that and the one
    read look alike (:data:`LOOK_ALIKE_CHECK_CHARS`: a B read 8) and the code then passes every
    check (its division code and its organisation code's check too); else None. A character of
    the 17 misread instead gives a check character that looks like the one read one time in 30
    or so, and most of those fail the other checks."""
    if len(code) != USCC_LENGTH or _bad_chars(code[:17]):
        return None
    expected = uscc_check_char(code[:17])
    if code[17] + expected not in LOOK_ALIKE_CHECK_CHARS:
        return None
    mended = code[:17] + expected
    return mended if uscc_error(mended) is None else None


def is_valid_uscc(code: str) -> bool:
    """True when ``code`` is 18 characters of the USCC charset with a correct check char, a
    division code and an organisation code."""
    return uscc_error(code) is None


def org_check_char(body8: str) -> str:
    """Check character of a 9-character organisation code (GB 11714) from its first 8."""
    total = sum(
        (int(c) if c.isdigit() else ord(c) - 55) * w
        for c, w in zip(body8, ORG_WEIGHTS, strict=True)
    )
    c = 11 - total % 11
    return "X" if c == 10 else "0" if c == 11 else str(c)


def old_id_error(code: str) -> str | None:
    """What is wrong with a 15-character taxpayer id, or ``None``: it is the place's division
    code (6 digits) and the organisation code (GB 11714, its 9th character a check), or an old
    15-digit identity card number (division code, YYMMDD, 3 digits) for a self-employed
    person. A USCC read without its first characters rarely passes (1 in 11)."""
    if not _starts_with_area_code(code):
        return f"{code[:6]!r} does not start an old taxpayer id (an area code)"
    if code.isdigit() and _is_date(code[6:12]):
        return None
    org = code[6:]
    if org_check_char(org[:8]) != org[8]:
        return f"organisation code {org} fails its check (an id read short?)"
    return None


ID_CARD_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def person_id_error(code: str) -> str | None:
    """What is wrong with a 20-character taxpayer id, or ``None``: a self-employed person's, the
    18-character identity card number (:func:`identity_card_error`) and 2 digits. A USCC read
    with two characters more (a seal's digits run into it) starts with no division code."""
    if not code[18:].isdigit():
        return f"{code!r} is no identity card number and 2 digits"
    return identity_card_error(code[:18])


def identity_card_error(card: str) -> str | None:
    """What is wrong with ``card`` as an identity card number, or ``None`` (GB 11643: division
    code, date of birth, sequence, check character, ISO 7064 MOD 11-2). A person gives it as
    their tax id: on an invoice to a person, and in a self-employed person's (and 2 digits)."""
    if not _starts_with_area_code(card):
        return f"{card[:6]!r} does not start an identity card number (an area code)"
    if not card[6:17].isdigit() or not _is_date(card[6:14], 4):
        return f"{card!r} is no identity card number (a date of birth, digits)"
    total = sum(int(ch) * w for ch, w in zip(card[:17], ID_CARD_WEIGHTS, strict=True))
    if "10X98765432"[total % 11] != card[17]:
        return f"identity card number {card} fails its check (a misread character?)"
    return None


def _starts_with_area_code(code: str) -> bool:
    """Whether ``code`` starts with an administrative division code: 6 digits, a province's
    first."""
    return code[:6].isdigit() and code[:2] in PROVINCES


def _is_date(text: str, year_digits: int = 2) -> bool:
    """Whether ``text`` is a date, YYMMDD (19YY) or, with 4 ``year_digits``, YYYYMMDD of a year
    from 1900 to this one (a date of birth)."""
    year = int(text[:year_digits]) + (1900 if year_digits == 2 else 0)
    if not 1900 <= year <= dt.date.today().year:
        return False
    try:
        dt.date(year, int(text[year_digits : year_digits + 2]), int(text[year_digits + 2 :]))
    except ValueError:
        return False
    return True


def tax_id_errors(value: str) -> list[str]:
    """Problems with a normalised taxpayer id (empty list: valid).

    18 characters must be a valid USCC or a person's identity card number
    (:func:`identity_card_error`: on an invoice to a person); 15 characters an old id
    (:func:`old_id_error`); 20 characters a self-employed person's (:func:`person_id_error`);
    any other length is an error.
    """
    if len(value) == 18:
        problem = uscc_error(value)
        if problem and identity_card_error(value) is None:
            return []  # a person's identity card number, given as their tax id
        return [problem] if problem else []
    if len(value) in _OLD_ID_LENGTHS:
        if not _OLD_ID.fullmatch(value):
            bad = "".join(dict.fromkeys(ch for ch in value if not _OLD_ID.fullmatch(ch)))
            return [f"a {len(value)}-character taxpayer id holds only 0-9 and A-Z, found {bad!r}"]
        problem = old_id_error(value) if len(value) == 15 else person_id_error(value)
        return [problem] if problem else []
    return [f"a taxpayer id is 18 characters (or 15/20 for older ids), got {len(value)}"]
