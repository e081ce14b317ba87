"""Money and id helpers for the generator.

The amount in capitals and the USCC check character are the extractor's own
(:mod:`extractor.fields`), so the generator and the validators share one set of rules.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from extractor.fields import USCC_CHARSET, amount_to_words, uscc_check_char
from extractor.fields.taxid import org_check_char

__all__ = ["USCC_CHARSET", "amount_to_words", "cents", "money", "org_check_char", "uscc_check_char"]

CENT = Decimal("0.01")


def cents(value: Decimal) -> Decimal:
    """Round half up to the cent."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def money(value: Decimal) -> str:
    """``Decimal('1234.5')`` -> ``'1234.50'``."""
    return f"{cents(value):.2f}"
