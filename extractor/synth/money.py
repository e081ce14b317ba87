"""Money and id helpers for the generator.

``amount_to_words`` and ``uscc_check_char`` come from :mod:`extractor.fields` when it provides
them; the private versions below (same rules) keep the generator usable on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal

USCC_CHARSET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
USCC_WEIGHTS = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
ORG_WEIGHTS = (3, 7, 9, 10, 5, 8, 4, 2)
_DIGITS = "零壹贰叁肆伍陆柒捌玖"
CENT = Decimal("0.01")


def cents(value: Decimal) -> Decimal:
    """Round half up to the cent."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def money(value: Decimal) -> str:
    """``Decimal('1234.5')`` -> ``'1234.50'``."""
    return f"{cents(value):.2f}"


def _uscc_check_char(first17: str) -> str:
    if len(first17) != 17 or any(c not in USCC_CHARSET for c in first17):
        raise ValueError(f"not a USCC body: {first17!r}")
    total = sum(USCC_CHARSET.index(c) * w for c, w in zip(first17, USCC_WEIGHTS, strict=True))
    return USCC_CHARSET[(31 - total % 31) % 31]


def org_check_char(body8: str) -> str:
    """Check character of a 9-character organisation code (GB 11714)."""
    total = sum(
        (int(c) if c.isdigit() else ord(c) - 55) * w
        for c, w in zip(body8, ORG_WEIGHTS, strict=True)
    )
    c = 11 - total % 11
    return "X" if c == 10 else "0" if c == 11 else str(c)


def _zero_between(high: int, low: int) -> bool:
    """Is 零 written between non-zero digits at positions ``high > low``?

    Zeros inside a group of four read as one 零, and so do zeros below a group's end, except
    when only the group's own last digit is zero (壹拾万柒仟: the 零 is optional, left out).
    """
    if high - low == 1:
        return False
    if high // 4 == low // 4:
        return True
    return low != 4 * (high // 4) - 1


def _integer_words(n: int) -> str:
    out: list[str] = []
    last: int | None = None
    group_has_digit = False
    for pos in range(len(str(n)) - 1, -1, -1):
        digit = n // 10**pos % 10
        if digit:
            if last is not None and _zero_between(last, pos):
                out.append("零")
            out.append(_DIGITS[digit] + ("", "拾", "佰", "仟")[pos % 4])
            last = pos
            group_has_digit = True
        if pos in (4, 8):
            if group_has_digit:
                out.append("万" if pos == 4 else "亿")
            group_has_digit = False
    return "".join(out)


def _amount_to_words(value: Decimal) -> str:
    text = money(value)
    integer_text, frac = text.split(".")
    integer, jiao, fen = int(integer_text), int(frac[0]), int(frac[1])
    words = _integer_words(integer) + "元" if integer else ""
    if jiao:
        words += _DIGITS[jiao] + "角" + (_DIGITS[fen] + "分" if fen else "")
    elif fen:
        words += ("零" if integer else "") + _DIGITS[fen] + "分"
    else:
        words = (words or "零元") + "整"
    return words


try:  # the extractor's own implementations, once available
    from extractor.fields import amount_to_words as _fields_words
    from extractor.fields import uscc_check_char as _fields_check
except ImportError:  # pragma: no cover - depends on the checkout
    _fields_words = None
    _fields_check = None

amount_to_words: Callable[[Decimal], str] = _fields_words or _amount_to_words
uscc_check_char: Callable[[str], str] = _fields_check or _uscc_check_char
