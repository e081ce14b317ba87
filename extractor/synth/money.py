"""Money and id helpers for the generator.

The amount in capitals and the USCC check character are the extractor's own
(:mod:`extractor.fields`), so the generator and the validators share one set of rules.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from extractor.fields import USCC_CHARSET, amount_to_words, uscc_check_char

__all__ = ["USCC_CHARSET", "amount_to_words", "cents", "money", "org_check_char", "uscc_check_char"]

ORG_WEIGHTS = (3, 7, 9, 10, 5, 8, 4, 2)
CENT = Decimal("0.01")


def cents(value: Decimal) -> Decimal:
    """Round half up to the cent."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def money(value: Decimal) -> str:
    """``Decimal('1234.5')`` -> ``'1234.50'``."""
    return f"{cents(value):.2f}"


def org_check_char(body8: str) -> str:
    """Check character of a 9-character organisation code (GB 11714)."""
    total = sum(
        (int(c) if c.isdigit() else ord(c) - 55) * w
        for c, w in zip(body8, ORG_WEIGHTS, strict=True)
    )
    c = 11 - total % 11
    return "X" if c == 10 else "0" if c == 11 else str(c)
