"""Taxpayer ids: the 18-char unified social credit code (USCC) and older 15/20-char ids."""

from __future__ import annotations

import re

from extractor.fields.charsets import USCC_CHARSET

USCC_WEIGHTS = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
_OLD_ID = re.compile(r"[0-9A-Z]+")
_OLD_ID_LENGTHS = (15, 20)


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
    if len(code) != 18:
        return f"a USCC is 18 characters, got {len(code)}"
    problem = _bad_chars(code)
    if problem:
        return problem
    expected = uscc_check_char(code[:17])
    if code[17] != expected:
        return f"check digit is {code[17]}, expected {expected}"
    return None


def is_valid_uscc(code: str) -> bool:
    """True when ``code`` is 18 characters of the USCC charset with a correct check char."""
    return uscc_error(code) is None


def tax_id_errors(value: str) -> list[str]:
    """Problems with a normalised taxpayer id (empty list: valid).

    18 characters must be a valid USCC; 15 or 20 characters of ``[0-9A-Z]`` are older ids
    that carry no check character; any other length is an error.
    """
    if len(value) == 18:
        problem = uscc_error(value)
        return [problem] if problem else []
    if len(value) in _OLD_ID_LENGTHS:
        if _OLD_ID.fullmatch(value):
            return []
        bad = "".join(dict.fromkeys(ch for ch in value if not _OLD_ID.fullmatch(ch)))
        return [f"a {len(value)}-character taxpayer id holds only 0-9 and A-Z, found {bad!r}"]
    return [f"a taxpayer id is 18 characters (or 15/20 for older ids), got {len(value)}"]
