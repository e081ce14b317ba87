"""Named character allowlists for recognition, and how a field's ``allowlist`` resolves."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from types import MappingProxyType

from extractor.templates import FieldKind

DIGITS = "0123456789"
UPPER = string.ascii_uppercase
USCC_CHARSET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
"""GB 32100-2015: digits and 21 capitals (no I, O, S, V, Z); a character's value is its index."""

AMOUNT_WORDS_CHARSET = "零壹贰叁肆伍陆柒捌玖拾佰仟万亿元圆角分整正⊗负数()（）"
"""The capitals, units and marks of an amount in words: 负 or (负数) before a negative one."""


OPENING_BRACKETS, CLOSING_BRACKETS = "(（", ")）"
BRACKETS = OPENING_BRACKETS + CLOSING_BRACKETS
"""Round brackets, half-width and full-width: print does not tell the two widths apart."""
HALF_WIDTH_BRACKETS = str.maketrans("（）", "()")
FULL_WIDTH_BRACKETS = str.maketrans("()", "（）")
"""Translation tables (:meth:`str.translate`) writing round brackets at one width."""

EXEMPT_MARK = "*"
"""Printed three times over instead of a tax amount where the sale is exempt from tax (免税) or
not taxed (不征税): the tax column of each line and the total tax read ``***``."""

DECIMAL_POINTS = ".．。·"
"""What a decimal point is read as: a full stop, full-width or ideographic, or a middle dot."""

WORDS_MARKS = "⊗ⓧⓍ⨂"
"""The circled cross printed before an amount in words, and the code points a PDF font's
ToUnicode map may give its glyph instead (the recogniser answers ⊗)."""

LEADING_MARKS = "¥￥" + WORDS_MARKS
"""Printed before a value (the currency sign before an amount, ⊗ before an amount in words) and
dropped by normalisation: how sure a recogniser is of one says nothing about the value."""


def ideograph(ch: str) -> bool:
    """Whether ``ch`` is a CJK unified ideograph (U+4E00-9FFF): what names are written in."""
    return "\u4e00" <= ch <= "\u9fff"


def plain_character(ch: str) -> bool:
    """Whether ``ch`` is what names and the form's words are written with: ASCII, punctuation
    and spaces, and letters and digits that are Latin, full-width forms or CJK unified
    ideographs (U+4E00-9FFF). Not symbols, kana, extension-A ideographs, private-use or
    unassigned code points, U+FFFD: what a PDF's text layer gives for glyphs its font's
    ToUnicode map leaves out (MuPDF answers U+FFFD, or the glyph's id taken for a character)."""
    code, category = ord(ch), unicodedata.category(ch)
    if 0x20 <= code < 0x7F or category[0] == "P" or category == "Zs":
        return True
    return category[0] in "LN" and (code < 0x250 or ideograph(ch) or 0xFF00 <= code <= 0xFFEF)


def value_start(text: str) -> int:
    """Index of the first character of ``text`` after its leading mark: 1 when it starts with
    one, else 0. Only one: two marks (``￥¥``) are not how a value is printed, so the second
    counts as part of the value and its doubt as doubt about the value."""
    return 1 if text[:1] in tuple(LEADING_MARKS) else 0


_AMOUNT = DIGITS + ".,¥￥-"

NAMED_CHARSETS: Mapping[str, str] = MappingProxyType(
    {
        "digits": DIGITS,
        "amount": _AMOUNT,
        "tax": _AMOUNT + EXEMPT_MARK,  # an amount, or *** (exempt from tax)
        "date": DIGITS + "年月日-./",
        "tax_id": DIGITS + UPPER,  # older 15/20-char ids may hold any capital
        "uscc": USCC_CHARSET,
        "amount_words": AMOUNT_WORDS_CHARSET,
        "alnum": DIGITS + UPPER + string.ascii_lowercase,
    }
)

_KIND_DEFAULT: Mapping[FieldKind, str | None] = MappingProxyType(
    {
        FieldKind.code: "digits",
        FieldKind.amount: "amount",
        FieldKind.date: "date",
        FieldKind.tax_id: "tax_id",
        FieldKind.amount_words: "amount_words",
        FieldKind.text: None,
        FieldKind.name: None,
    }
)

_LOOKS_LIKE_NAME = re.compile(r"[a-z_]+")


def resolve_allowlist(spec: str | None, kind: FieldKind) -> str | None:
    """The characters a recogniser may emit for a field; ``None`` means unconstrained.

    ``spec`` is a name from :data:`NAMED_CHARSETS` or the characters themselves (duplicates
    dropped, order kept); ``None`` picks the kind's default. A spec made only of ``[a-z_]``
    that is not a known name is taken for a misspelt name and raises ``ValueError``.
    """
    if spec is None:
        name = _KIND_DEFAULT[FieldKind(kind)]
        return None if name is None else NAMED_CHARSETS[name]
    if spec in NAMED_CHARSETS:
        return NAMED_CHARSETS[spec]
    if _LOOKS_LIKE_NAME.fullmatch(spec):
        known = ", ".join(sorted(NAMED_CHARSETS))
        raise ValueError(f"unknown charset name {spec!r} (known: {known})")
    if not spec:
        raise ValueError("an allowlist cannot be empty")
    return "".join(dict.fromkeys(spec))
