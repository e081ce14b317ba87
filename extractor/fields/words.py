"""Amounts in Chinese capitals (大写金额): parse to a money string, and write them.

The accepted form follows the People's Bank rules for writing amounts
(正确填写票据和结算凭证的基本规定), read strictly:

* digits 零壹贰叁肆伍陆柒捌玖, units 拾佰仟 within a group of four, 万 and 亿 after a group;
  ``元`` or ``圆``; ``角``, ``分``; ``整`` or ``正`` closes an amount with no 角/分 and may
  follow a 角, never a 分.
* zeros follow the rule for reading numbers: within a group of four, a run of zeros between
  two non-zero digits is one 零; zeros at the end of a group are not written; zeros at the
  start of a group (and whole zero groups) after a non-zero group are one 零 (壹拾万零壹元,
  壹亿零伍元). Such a 零 is never left out, and no 零 is written where no zero is; no 零 at
  the start or end of the integer part.
* the 万 (or 亿) digit zero and the next digit not (107000, 10005000): 零 is optional
  (壹拾万[零]柒仟元), as the rules allow; the same for a zero 元 digit before 角 (below).
* 角 zero and 分 not: 零 between 元 and the 分 is required (叁佰贰拾伍元零肆分).
* the 元 digit zero and 角 not: 零 after 元 is optional (壹仟陆佰捌拾元[零]叁角贰分).
* below one yuan the integer part may be left out (伍角, 伍分) or written 零元.
* a bare 拾 (no 壹) is accepted only at the very start (拾元整 = 10).
* leading ⊗ marks (printed before the 大写 on invoices; a PDF's text layer may give the glyph
  as ⓧ, Ⓧ or ⨂) are ignored; 负 after them, or (负数) as tax-control software prints it on a
  red-letter invoice, makes the amount negative.
* ``零元整`` parses to ``"0.00"`` (a well-formed zero); ``负零元整`` is rejected.

Amounts go up to 9999亿 (below 10**12 yuan).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from extractor.fields.charsets import WORDS_MARKS
from extractor.fields.errors import FieldValueError
from extractor.fields.money import format_money

DIGIT_CHARS = "零壹贰叁肆伍陆柒捌玖"
_DIGIT = {ch: i for i, ch in enumerate(DIGIT_CHARS)}
_SMALL_UNIT = {"拾": 1, "佰": 2, "仟": 3}
_GROUP_UNIT = {"万": 4, "亿": 8}
_YUAN = "元圆"
_WHOLE = "整正"
_NEGATIVE = re.compile(r"负|[(（]负数[)）]")
_MAX = Decimal(10) ** 12
_ALLOWED = set(DIGIT_CHARS) | set(_SMALL_UNIT) | set(_GROUP_UNIT) | set(_YUAN + "角分" + _WHOLE)

_FRACTION = re.compile(
    r"(?P<zero>零)?"
    r"(?:(?P<jiao>[壹贰叁肆伍陆柒捌玖])角)?"
    r"(?:(?P<fen>[壹贰叁肆伍陆柒捌玖])分)?"
    r"(?P<whole>[整正])?"
)


def _zero_between(high: int, low: int) -> bool | None:
    """Is 零 written between non-zero digits at positions ``high > low``? None: optional."""
    if high - low == 1:
        return False
    if high // 4 == low // 4:
        return True  # zeros inside one group of four
    # Zeros at the end of high's group are not read; those below its group are.
    top_of_lower = 4 * (high // 4) - 1
    return None if low == top_of_lower else True


def _parse_integer(text: str) -> int:
    """The integer part (before 元) of a capital amount, checked strictly."""
    if text == "零":
        return 0
    if text.startswith("零"):
        raise FieldValueError("the amount cannot start with 零")
    # Pass 1: nonzero digits with their position inside their group of four, 零 markers
    # and group markers, in reading order.
    items: list[tuple[str, int, int]] = []  # ("d", digit, small_pos) | ("0", 0, 0) | ("g", 0, pos)
    i = 0
    while i < len(text):
        ch = text[i]
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if ch == "零":
            if nxt == "零":
                raise FieldValueError("a run of zeros is written as one 零, found 零零")
            if nxt not in _DIGIT:
                raise FieldValueError(f"零 must be followed by a digit, found {nxt or 'the end'!r}")
            items.append(("0", 0, 0))
            i += 1
        elif ch in _DIGIT:
            if nxt in _SMALL_UNIT:
                items.append(("d", _DIGIT[ch], _SMALL_UNIT[nxt]))
                i += 2
            elif nxt and nxt not in _GROUP_UNIT:
                raise FieldValueError(f"digit {ch} has no unit before {nxt}")
            else:
                items.append(("d", _DIGIT[ch], 0))
                i += 1
        elif ch == "拾" and i == 0:
            items.append(("d", 1, 1))  # bare 拾 = 壹拾, only at the very start
            i += 1
        elif ch in _GROUP_UNIT:
            if not items or items[-1][0] != "d":
                raise FieldValueError(f"{ch} must follow a digit")
            items.append(("g", 0, _GROUP_UNIT[ch]))
            i += 1
        elif ch in _SMALL_UNIT:
            raise FieldValueError(f"unit {ch} has no digit before it")
        else:
            raise FieldValueError(f"{ch!r} cannot appear before 元")
    groups = [pos for kind, _, pos in items if kind == "g"]
    if groups not in ([], [4], [8], [8, 4]):
        names = "".join("亿" if p == 8 else "万" for p in groups)
        raise FieldValueError(f"group units out of order or repeated: {names}")
    # Pass 2: absolute positions (a digit's group is set by the next group marker after it).
    offset = 0
    absolute: list[tuple[str, int, int]] = []
    for kind, digit, pos in reversed(items):
        if kind == "g":
            offset = pos
        else:
            absolute.append((kind, digit, pos + offset))
    absolute.reverse()
    value = 0
    last_pos: int | None = None
    zero_pending = False
    for kind, digit, pos in absolute:
        if kind == "0":
            zero_pending = True
            continue
        if last_pos is not None:
            if pos >= last_pos:
                raise FieldValueError("digits are not in descending order of units")
            needed = _zero_between(last_pos, pos)
            if needed and not zero_pending:
                raise FieldValueError(f"missing 零 for the zeros before {DIGIT_CHARS[digit]}")
            if zero_pending and needed is False:
                raise FieldValueError(f"零 before {DIGIT_CHARS[digit]} stands for no zero")
        value += digit * 10**pos
        last_pos = pos
        zero_pending = False
    return value


def _parse_fraction(text: str, integer: int, has_yuan: bool) -> int:
    """Cents written after 元 (or the whole string when there is no 元)."""
    m = _FRACTION.fullmatch(text)
    if m is None:
        raise FieldValueError(f"cannot read {text!r} as 角/分")
    zero, jiao, fen, whole = m["zero"], m["jiao"], m["fen"], m["whole"]
    if not jiao and not fen:
        if not has_yuan:
            raise FieldValueError("no 元, 角 or 分")
        if zero or not whole:
            raise FieldValueError("an amount with no 角/分 ends in 元整")
        return 0
    if fen and whole:
        raise FieldValueError(f"{whole} cannot follow 分")
    if jiao and zero and not (has_yuan and integer > 0 and integer % 10 == 0):
        raise FieldValueError("零 before 角 only stands for a zero 元 digit")
    if fen and not jiao:
        if not has_yuan and zero:
            raise FieldValueError("an amount cannot start with 零")
        if has_yuan and integer > 0 and not zero:
            raise FieldValueError("零 is required between 元 and 分 when 角 is zero")
    return 10 * (_DIGIT[jiao] if jiao else 0) + (_DIGIT[fen] if fen else 0)


def parse_amount_words(raw: str) -> str:
    """壹仟贰佰叁拾肆元伍角陆分 -> ``"1234.56"``; raises FieldValueError on a malformed amount."""
    text = "".join(raw.split())
    text = text.lstrip(WORDS_MARKS)
    negative = _NEGATIVE.match(text)
    if negative:
        text = text[negative.end() :]
    if not text:
        raise FieldValueError("no amount in capitals")
    bad = "".join(dict.fromkeys(ch for ch in text if ch not in _ALLOWED))
    if bad:
        raise FieldValueError(f"unexpected characters in an amount in capitals: {bad!r}")
    yuan_count = sum(text.count(ch) for ch in _YUAN)
    if yuan_count > 1:
        raise FieldValueError("元 appears more than once")
    if yuan_count == 1:
        cut = next(i for i, ch in enumerate(text) if ch in _YUAN)
        head, tail = text[:cut], text[cut + 1 :]
        if not head:
            raise FieldValueError("nothing before 元")
        for unit in "角分" + _WHOLE:
            if unit in head:
                raise FieldValueError(f"{unit} comes before 元")
        integer = _parse_integer(head)
        cents = _parse_fraction(tail, integer, has_yuan=True)
    else:
        if any(ch in text for ch in _SMALL_UNIT | _GROUP_UNIT):
            raise FieldValueError("missing 元 after the integer part")
        integer = 0
        cents = _parse_fraction(text, 0, has_yuan=False)
    value = Decimal(integer * 100 + cents) / 100
    if negative:
        if value == 0:
            raise FieldValueError("负 before a zero amount")
        value = -value
    return format_money(value)


def _integer_words(n: int) -> str:
    out: list[str] = []
    last_pos: int | None = None
    group_has_digit = False
    for pos in range(len(str(n)) - 1, -1, -1):
        digit = n // 10**pos % 10
        if digit:
            if last_pos is not None and _zero_between(last_pos, pos):
                out.append("零")
            out.append(DIGIT_CHARS[digit] + ("", "拾", "佰", "仟")[pos % 4])
            last_pos = pos
            group_has_digit = True
        if pos in (4, 8):
            if group_has_digit:
                out.append("万" if pos == 4 else "亿")
            group_has_digit = False
    return "".join(out)


def amount_to_words(value: Decimal | str) -> str:
    """The standard capital form: ``Decimal("325.04")`` -> ``"叁佰贰拾伍元零肆分"``.

    Uses 元 and 整, 壹拾 (never a bare 拾), no 零 between a zero 元 digit and 角, no
    integer part below one yuan (``"0.50"`` -> 伍角) and ``"负"`` for a negative amount.
    Raises ``ValueError`` for more than two decimals or ``abs(value) >= 10**12``.
    """
    try:
        amount = Decimal(value)
    except InvalidOperation as exc:
        raise ValueError(f"not a number: {value!r}") from exc
    if not amount.is_finite():
        raise ValueError(f"not a finite amount: {value!r}")
    text = format_money(amount)  # raises on more than two decimals
    if abs(amount) >= _MAX:
        raise ValueError(f"{text} is too large (limit 10**12)")
    negative = text.startswith("-")
    integer_text, cents_text = text.lstrip("-").split(".")
    integer, jiao, fen = int(integer_text), int(cents_text[0]), int(cents_text[1])
    words = _integer_words(integer) + "元" if integer else ""
    if jiao:
        words += DIGIT_CHARS[jiao] + "角"
        if fen:
            words += DIGIT_CHARS[fen] + "分"
    elif fen:
        words += ("零" if integer else "") + DIGIT_CHARS[fen] + "分"
    else:
        words = (words or "零元") + "整"
    return ("负" if negative else "") + words
