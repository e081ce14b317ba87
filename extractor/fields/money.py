"""Money values as the pipeline carries them: a Decimal string with exactly two decimals."""

from __future__ import annotations

from decimal import Decimal

CENT = Decimal("0.01")


def format_money(value: Decimal) -> str:
    """``Decimal("1234.5")`` -> ``"1234.50"``; negative zero becomes ``"0.00"``.

    The caller guarantees ``value`` has at most two decimals (nothing is rounded here
    silently: a value with more decimals raises ``ValueError``).
    """
    cents = value.quantize(CENT)
    if cents != value:
        raise ValueError(f"{value} has more than 2 decimal places")
    if cents == 0:
        cents = Decimal("0.00")
    return f"{cents:.2f}"
