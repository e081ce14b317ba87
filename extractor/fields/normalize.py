"""Normalisers: raw recognised text -> the canonical value of a field.

Each is a pure function ``str -> str`` raising :class:`FieldValueError` with a message for a
person when the text cannot be normalised. They normalise only; checks that a well-formed
value is also *valid* (a USCC check digit, say) live in the validators of ``check.py``.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable, Mapping
from decimal import Decimal
from types import MappingProxyType

from extractor.fields.charsets import (
    CLOSING_BRACKETS,
    EXEMPT_MARK,
    FULL_WIDTH_BRACKETS,
    HALF_WIDTH_BRACKETS,
    OPENING_BRACKETS,
    ideograph,
)
from extractor.fields.errors import FieldValueError
from extractor.fields.money import format_money
from extractor.fields.words import parse_amount_words
from extractor.templates import FieldKind

MIN_YEAR = 1990
MAX_YEAR = 2100

_CURRENCY = "¥"  # NFKC folds the full-width ￥ onto this one
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?", re.ASCII)
_GROUPED_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", re.ASCII)
_DATE_CN = re.compile(r"(?P<y>\d{4})年(?P<m>\d{1,2})月(?P<d>\d{1,2})日?", re.ASCII)
_DATE_SEP = re.compile(
    r"(?P<y>\d{4})(?P<sep1>[-./])(?P<m>\d{1,2})(?P<sep2>[-./])(?P<d>\d{1,2})", re.ASCII
)
_DATE_COMPACT = re.compile(r"(?P<y>\d{4})(?P<m>\d{2})(?P<d>\d{2})", re.ASCII)
_DATE_CN_SLIP = re.compile(
    r"(?P<y>\d{4})(?P<a>\D)(?P<m>\d{2})(?P<b>\D)(?P<d>\d{2})(?P<c>\D)?", re.ASCII
)
"""年MM月DD日 with one of its three characters misread as another non-digit (blur makes 月 a
'/'): the other two and the zero-padded groups still say which part is which."""


def _squeeze(raw: str) -> str:
    """Drop all whitespace (OCR inserts spaces between printed groups)."""
    return "".join(raw.split())


def _ascii_digits(text: str) -> str:
    """Full-width digits and ASCII-like punctuation -> ASCII; leaves CJK alone."""
    return "".join(
        unicodedata.normalize("NFKC", ch) if "\uff01" <= ch <= "\uff5e" else ch for ch in text
    )


MISPLACED_SEPARATOR = "misplaced thousands separator"
UNEXPECTED_IN_AMOUNT = "unexpected characters in an amount:"


def normalize_amount(raw: str) -> str:
    """Money in figures: ``"¥1,234.56"``, ``"￥ 1234.5"``, ``"１２３４．５６"`` -> ``"1234.56"``.

    One currency sign and one leading minus (either order) are allowed; thousands separators
    must group by three; at most two decimals (never rounded).
    """
    text = _ascii_digits(_squeeze(raw)).replace("\uffe5", _CURRENCY).replace("\u2212", "-")
    if not text:
        raise FieldValueError("empty")
    negative = currency = False
    for _ in range(2):
        if text[:1] == "-" and not negative:
            negative, text = True, text[1:]
        elif text[:1] == _CURRENCY and not currency:
            currency, text = True, text[1:]
    bad = "".join(dict.fromkeys(ch for ch in text if not (ch.isascii() and ch in "0123456789.,")))
    if bad:
        raise FieldValueError(f"{UNEXPECTED_IN_AMOUNT} {bad!r}")
    if not text:
        raise FieldValueError("no digits in the amount")
    if text.count(".") > 1:
        raise FieldValueError(f"more than one decimal point in {text!r}")
    if "," in text and not _GROUPED_NUMBER.fullmatch(text):
        raise FieldValueError(f"{MISPLACED_SEPARATOR} in {text!r}")
    text = text.replace(",", "")
    if not _PLAIN_NUMBER.fullmatch(text):
        raise FieldValueError(f"not an amount: {text!r}")
    if "." in text and len(text.split(".")[1]) > 2:
        raise FieldValueError(f"more than two decimal places in {text!r}")
    value = Decimal(text)
    return format_money(-value if negative else value)


def normalize_tax(raw: str) -> str:
    """A tax amount: :func:`normalize_amount`, or ``"0.00"`` where it is printed ``***`` (a sale
    exempt from tax, 免税, or not taxed, 不征税), read as stars and nothing else, however many:
    blur merges them. A real tax read so would break amount + tax = total, which flags it."""
    text = _squeeze(raw).lstrip("¥\uffe5")
    if text and set(text) == {EXEMPT_MARK}:
        return format_money(Decimal(0))
    return normalize_amount(raw)


def normalize_date(raw: str) -> str:
    """``2024年5月2日``, ``2024-05-12``, ``2024.05.12``, ``2024/5/12``, ``20240512`` -> ISO.

    The date must exist in the calendar and its year lie in 1990..2100.
    """
    text = _ascii_digits(_squeeze(raw))
    if not text:
        raise FieldValueError("empty")
    if m := _DATE_SEP.fullmatch(text):
        if m["sep1"] != m["sep2"]:
            raise FieldValueError(f"mixed date separators in {text!r}")
    else:
        m = _DATE_CN.fullmatch(text) or _DATE_COMPACT.fullmatch(text) or _cn_slip(text)
    if m is None:
        raise FieldValueError(f"not a date: {text!r}")
    return _checked_date(int(m["y"]), int(m["m"]), int(m["d"]))


def _cn_slip(text: str) -> re.Match[str] | None:
    m = _DATE_CN_SLIP.fullmatch(text)
    if m is None:
        return None
    marks = (m["a"] == "年", m["b"] == "月", m["c"] == "日")
    return m if sum(marks) == 2 else None


def _checked_date(year: int, month: int, day: int) -> str:
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise FieldValueError(f"year {year} is outside {MIN_YEAR}..{MAX_YEAR}")
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        raise FieldValueError(f"{year:04d}-{month:02d}-{day:02d} is not a calendar date") from None


def normalize_digits(raw: str) -> str:
    """A code of digits: spaces dropped, full-width digits -> ASCII, the numero sign printed
    before an invoice's number (№, No, No.) dropped, anything else rejected."""
    text = _NUMERO.sub("", _ascii_digits(_squeeze(raw)), count=1)
    if not text:
        raise FieldValueError("empty")
    bad = "".join(dict.fromkeys(ch for ch in text if ch not in "0123456789"))
    if bad:
        raise FieldValueError(f"non-digit characters: {bad!r}")
    return text


_NUMERO = re.compile(r"^(?:№|N[Oo]\.?)[:：]?")
"""The numero sign the national form prints before the invoice number, as a line read whole
(the fallback's) or a text layer gives it with the number."""


def normalize_tax_id(raw: str) -> str:
    """Upper-case, spaces dropped, full-width -> ASCII. Validity is checked separately."""
    text = _ascii_digits(_squeeze(raw)).upper()
    if not text:
        raise FieldValueError("empty")
    return text


def normalize_text(raw: str) -> str:
    """Surrounding whitespace stripped, inner runs collapsed to one space; nothing else.

    No NFKC: full-width brackets and the like in company names are kept as printed.
    """
    text = " ".join(raw.split())
    if not text:
        raise FieldValueError("empty")
    return text


_SPACE_BESIDE_CJK = re.compile(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ")
"""A space with anything but ASCII on one side of it (an ideograph, a full-width bracket)."""


def normalize_name(raw: str) -> str:
    """A party's name: :func:`normalize_text` without the spaces beside an ideograph or a
    full-width form (a name is registered without them: 北京 益英 read across a wide gap, or a
    text layer that letter-spaces it, is 北京益英; Latin words keep theirs), and each pair of
    brackets written as a name registered in China writes it: half-width around Latin words
    (ABB(China)), full-width around any other (…（北京）有限公司, …（有限合伙）). Print does not
    tell a full-width bracket from a half-width one, and the recogniser answers either, at the
    end of a name most often; a bracket no other pairs with goes by its neighbours."""
    text = _SPACE_BESIDE_CJK.sub("", normalize_text(raw))
    chars = list(text)
    opened: list[int] = []
    paired: set[int] = set()
    for i, ch in enumerate(text):
        if ch in OPENING_BRACKETS:
            opened.append(i)
        elif ch in CLOSING_BRACKETS and opened:
            start = opened.pop()
            words = text[start + 1 : i]
            latin = any(c.isascii() and c.isalpha() for c in words)
            width = (
                HALF_WIDTH_BRACKETS
                if latin and not any(map(ideograph, words))
                else FULL_WIDTH_BRACKETS
            )
            chars[start] = chars[start].translate(width)
            chars[i] = chars[i].translate(width)
            paired |= {start, i}
    for i, ch in enumerate(text):  # unpaired: full-width beside an ideograph
        if i not in paired and ch in "()" and any(map(ideograph, text[max(0, i - 1) : i + 2])):
            chars[i] = ch.translate(FULL_WIDTH_BRACKETS)
    return "".join(chars)


def normalize_amount_words(raw: str) -> str:
    """Amount in Chinese capitals -> ``"1234.56"`` (see :mod:`extractor.fields.words`)."""
    return parse_amount_words(raw)


Normalizer = Callable[[str], str]

NORMALIZERS: Mapping[str, Normalizer] = MappingProxyType(
    {
        "amount": normalize_amount,
        "tax": normalize_tax,
        "date": normalize_date,
        "digits": normalize_digits,
        "tax_id": normalize_tax_id,
        "text": normalize_text,
        "name": normalize_name,
        "amount_words": normalize_amount_words,
    }
)

DEFAULT_NORMALIZER: Mapping[FieldKind, str] = MappingProxyType(
    {
        FieldKind.text: "text",
        FieldKind.name: "name",
        FieldKind.code: "digits",
        FieldKind.amount: "amount",
        FieldKind.amount_words: "amount_words",
        FieldKind.date: "date",
        FieldKind.tax_id: "tax_id",
    }
)


def get_normalizer(name: str | None, kind: FieldKind) -> Normalizer:
    """The normaliser named ``name``, or the kind's default when ``name`` is None."""
    key = DEFAULT_NORMALIZER[FieldKind(kind)] if name is None else name
    try:
        return NORMALIZERS[key]
    except KeyError:
        known = ", ".join(sorted(NORMALIZERS))
        raise ValueError(f"unknown normalizer {name!r} (known: {known})") from None
