"""Printed labels that name a field, and guesses from the shape of a value.

:data:`KNOWN_LABELS` maps a label as OCR reads it (spaces, colons dropped; brackets folded to
ASCII, lower case) to what the value beside it usually is. A label that names several fields
(``合计`` is followed by the amount and then the tax on its row; ``名称`` is printed for the buyer
and again for the seller) lists them in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extractor.templates import FieldKind


@dataclass(frozen=True, slots=True)
class LabelInfo:
    """What a printed label announces."""

    names: tuple[str, ...]
    """Field names, in the order the label's occurrences (or values on its row) come."""
    kind: FieldKind
    allowlist: str | None = None
    regex: str | None = None
    per_row: bool = False
    """The names are successive values on the label's row (合计: amount, tax), not occurrences."""
    exact: bool = False
    """Short labels (No, Date): only the whole line, or the label before a value of digits."""
    check: str | None = None
    """The structure check the field gets (:attr:`~extractor.templates.FieldSpec.check`)."""


_CODE = FieldKind.code
_DATE = FieldKind.date
_AMOUNT = FieldKind.amount
_TEXT = FieldKind.text
_NAME = FieldKind.name
_TAX = FieldKind.tax_id
_WORDS = FieldKind.amount_words
_NUMBER = "invoice_number"  # the check of a 数电票's 20-digit number; an 8-digit one passes

KNOWN_LABELS: dict[str, LabelInfo] = {
    # national VAT invoice (增值税发票) and the fully digital one (全电发票)
    "发票代码": LabelInfo(
        ("invoice_code",), _CODE, "digits", r"^(\d{10}|\d{12})$", check="invoice_code"
    ),
    "发票号码": LabelInfo(("invoice_number",), _CODE, "digits", check=_NUMBER),
    "no": LabelInfo(("invoice_number",), _CODE, "digits", exact=True, check=_NUMBER),
    "no.": LabelInfo(("invoice_number",), _CODE, "digits", exact=True, check=_NUMBER),
    "n": LabelInfo(("invoice_number",), _CODE, "digits", exact=True, check=_NUMBER),
    "№": LabelInfo(("invoice_number",), _CODE, "digits", exact=True, check=_NUMBER),
    "开票日期": LabelInfo(("issue_date",), _DATE, "date", check="issue_date"),
    "校验码": LabelInfo(("check_code",), _CODE, "digits", r"^\d{20}$"),
    "名称": LabelInfo(("buyer_name", "seller_name"), _NAME),
    "购买方名称": LabelInfo(("buyer_name",), _NAME),
    "销售方名称": LabelInfo(("seller_name",), _NAME),
    "纳税人识别号": LabelInfo(("buyer_tax_id", "seller_tax_id"), _TAX, "tax_id"),
    "统一社会信用代码/纳税人识别号": LabelInfo(("buyer_tax_id", "seller_tax_id"), _TAX, "tax_id"),
    "合计": LabelInfo(("amount", "tax"), _AMOUNT, "amount", per_row=True),
    "价税合计(大写)": LabelInfo(("total_in_words",), _WORDS, "amount_words"),
    "(小写)": LabelInfo(("total",), _AMOUNT, "amount"),
    # English layouts
    "invoiceno.": LabelInfo(("invoice_number",), _CODE, "alnum"),
    "invoiceno": LabelInfo(("invoice_number",), _CODE, "alnum"),
    "invoicenumber": LabelInfo(("invoice_number",), _CODE, "alnum"),
    "invoice#": LabelInfo(("invoice_number",), _CODE, "alnum"),
    "date": LabelInfo(("issue_date",), _DATE, "date", exact=True),
    "invoicedate": LabelInfo(("issue_date",), _DATE, "date"),
    "subtotal": LabelInfo(("amount",), _AMOUNT, "amount"),
    "tax": LabelInfo(("tax",), _AMOUNT, "amount", exact=True),
    "vat": LabelInfo(("tax",), _AMOUNT, "amount", exact=True),
    "total": LabelInfo(("total",), _AMOUNT, "amount", exact=True),
    "totalamount": LabelInfo(("total",), _AMOUNT, "amount"),
    "amountdue": LabelInfo(("total",), _AMOUNT, "amount"),
}

_NOISE = re.compile(r"[\s:：]")
_BRACKETS = str.maketrans({"（": "(", "）": ")", "＃": "#", "．": "."})


def label_key(text: str) -> str:
    """A line's text as a key of :data:`KNOWN_LABELS`."""
    return _NOISE.sub("", text).translate(_BRACKETS).lower()


def match_label(text: str) -> tuple[str, LabelInfo, str] | None:
    """The known label a line starts with, its info, and the rest of the line (the value,
    when label and value were read as one line). The longest label wins."""
    key = label_key(text)
    best: tuple[str, LabelInfo, str] | None = None
    for label, info in KNOWN_LABELS.items():
        whole = key == label or (key.startswith(label) and _prefix_ok(label, info, key))
        if whole and (best is None or len(label) > len(best[0])):
            best = (label, info, key[len(label) :])
    return best


def _prefix_ok(label: str, info: LabelInfo, key: str) -> bool:
    """A label in front of more text: long labels always; short (exact) ones only before a
    value that is not words (``No12345678``, ``Date2024-05-12``)."""
    if not info.exact:
        return len(label) >= 2
    return value_shape(key[len(label) :]) is not FieldKind.text


def is_label_prefix(text: str) -> bool:
    """Whether a line is the start of a known label split by OCR (名 | 称：)."""
    key = label_key(text)
    return bool(key) and any(
        label.startswith(key) and label != key and not info.exact
        for label, info in KNOWN_LABELS.items()
    )


_DATE_RE = re.compile(r"^\d{4}\s*(年|[-./])\s*\d{1,2}\s*(月|[-./])\s*\d{1,2}\s*日?$")
_AMOUNT_RE = re.compile(r"^[¥￥$€-]?\s*-?\d{1,3}(,?\d{3})*\.\d{2}$")
_DIGITS_RE = re.compile(r"^[\d\s]+$")
_TAX_RE = re.compile(r"^[0-9A-Z]{15,20}$")
_WORDS_CHARS = set("零壹贰叁肆伍陆柒捌玖拾佰仟万亿元圆角分整正")


def value_shape(text: str) -> FieldKind:
    """The kind a value looks like: date, amount, code (digits), tax id, amount in words, text."""
    t = text.strip().lstrip("⊗").strip()
    if _DATE_RE.match(t):
        return FieldKind.date
    if _AMOUNT_RE.match(t):
        return FieldKind.amount
    if _DIGITS_RE.match(t) and sum(c.isdigit() for c in t) >= 4:
        return FieldKind.code
    if _TAX_RE.match(t.replace(" ", "")) and any(c.isdigit() for c in t):
        return FieldKind.tax_id
    if t and sum(c in _WORDS_CHARS for c in t) >= 0.8 * len(t):
        return FieldKind.amount_words
    return FieldKind.text


def fits(kind: FieldKind, text: str) -> bool:
    """Whether ``text`` could be a value of ``kind`` (text takes anything that is not a label)."""
    shape = value_shape(text)
    if kind in (FieldKind.text, FieldKind.name):
        return shape in (FieldKind.text, FieldKind.amount_words) and match_label(text) is None
    if kind is FieldKind.code:
        return shape is FieldKind.code or (
            len(text.strip()) >= 4 and text.strip().isalnum() and text.isascii()
        )
    return shape is kind


def decimals_for(kind: FieldKind, value: str) -> int | None:
    """An amount's decimals as the sample prints them ('¥1,234.50' -> 2), else None."""
    text = "".join(value.split())
    if kind is FieldKind.amount and "." in text:
        return sum(ch.isdigit() for ch in text.rsplit(".", 1)[1])
    return None


def regex_for(kind: FieldKind, value: str) -> str | None:
    """A regex for codes: exactly as many digits as the sample has."""
    if kind is FieldKind.code:
        digits = "".join(value.split())
        if digits.isdigit():
            return rf"^\d{{{len(digits)}}}$"
    return None
