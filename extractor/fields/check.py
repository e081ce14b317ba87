"""What the pipeline calls: check one field's raw text, then the template's cross-field rules."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from difflib import SequenceMatcher
from functools import cache
from types import MappingProxyType

import opencc

from extractor.fields.charsets import (
    CLOSING_BRACKETS,
    HALF_WIDTH_BRACKETS,
    OPENING_BRACKETS,
    ideograph,
    plain_character,
)
from extractor.fields.codes import digital_number_errors, invoice_code_errors
from extractor.fields.errors import FieldValueError
from extractor.fields.money import format_money
from extractor.fields.normalize import get_normalizer
from extractor.fields.persons import NAME_ENDS
from extractor.fields.taxid import USCC_LENGTH, look_alike_check_char, tax_id_errors, uscc_error
from extractor.templates import FieldKind, FieldSpec, SameRule, SumRule, Template

_MONEY = re.compile(r"-?[0-9]+\.[0-9]{2}")
_DIGITS = re.compile(r"[0-9]+")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_IDENTIFIER = re.compile(r"(?=(?:[A-Z]*[0-9]){4})[0-9A-Z]{8,}")
_GLUED_ID = re.compile(r".*[^0-9A-Z](?=(?:[A-Z]*[0-9]){6})[0-9A-Z]{15,}")


@dataclass(frozen=True)
class FieldCheck:
    value: str | None
    """The normalised value; the stripped raw text when it could not be normalised; ``None``
    when the raw text is empty."""
    errors: list[str]
    """Empty when the value is valid."""
    note: str | None = None
    """What was left out of the reading to give the value, when something was (a seal's
    print read on after it), or what the value stands for (a tax printed ``***``: none)."""
    left_out: int = 0
    """How many characters (spaces aside) were left out at the end of the reading."""

    @property
    def ok(self) -> bool:
        return not self.errors


def _money_errors(value: str) -> list[str]:
    return [] if _MONEY.fullmatch(value) else [f"{value!r} is not an amount with 2 decimals"]


def _code_errors(value: str) -> list[str]:
    return [] if _DIGITS.fullmatch(value) else [f"{value!r} is not all digits"]


_LONG_NUMBER = re.compile(r"\d{7,}")
_CAPITAL_DIGITS = frozenset("零壹贰叁肆伍陆柒捌玖拾佰仟")
"""Digits and units of an amount in capitals (大写金额): a name is written in everyday
characters (一二三, 万达), and a 'name' of them is the total in words, printed above the
seller's row, in its box (a page sagging or folded)."""
_TRAILING_DIGITS = re.compile(r"[^\x00-\x7f](?=[A-Z]*[0-9])[0-9A-Z]{2,}$")
"""Ideographs followed by a short run of digits and capitals at the end: the start of the tax id
printed below, run into the name's line (a company's name ends in its legal form, a school's
or shop's in a word)."""
_STRAY_END = re.compile(r"[^\x00-\x7f][0-9A-Z]$")
"""A name's words followed by one digit or capital: where the words end as a name does
(:data:`~extractor.fields.persons.NAME_ENDS`: …公司3), the top of the tax id printed below
or a speck, read into its line (a run of two or more is :data:`_TRAILING_DIGITS`)."""
_FORM_LABELS = ("开户行", "账号", "地址", "电话", "识别号", "名称")
"""Words of the labels printed beside a buyer's or seller's name, never in a company's name."""
_CUT_LEGAL_FORM = re.compile(r"(?:有限|有限责|有限责任|股|股份|股份有|[限任份分]公)$")
"""The end of a name cut inside its legal form (有限公司, 有限责任公司, 股份有限公司, 分公司): no
company's name ends so (a holding's full name goes on: …控股有限公司, …控股集团); a text line
found a few characters short does (…医药股 for …医药股份有限公司)."""

_LEGAL_FORM = re.compile(r"有限责任公司|股份有限公司|有限公司")
_LEGAL_FORM_ALONE = re.compile(r"(?:(?:有限责任|股份有限|有限|股份|集团|控股|分)?公司|集团|企业)")
"""A legal form with nothing before it (公司, 有限公司, 集团): a name's words lost (too faint, cut
off at the crop's start) and its end read, which no check of its characters faults."""
_BRANCH = re.compile(r"(?:分公司|分行|支行|分店|分厂|分部|分所|办事处|营业部|经营部)$")
"""A branch's name goes on past its company's legal form (…有限公司上海分公司)."""


def _own_again(value: str) -> str | None:
    """What ``value`` goes on with past its legal form when that is its own characters again,
    in order (digits and letters aside), and no branch's name: the seller's seal prints the name
    around its rim and the tax id across it, and on a black-and-white scan the seal is as black
    as the print (…乾贸易有限公司乾贸易有, …印务有限公司印3); None otherwise."""
    legal = _LEGAL_FORM.search(value)
    if legal is None:
        return None
    tail = value[legal.end() :]
    ideographs = [ch for ch in tail if ideograph(ch)]
    if not ideographs or _BRANCH.search(tail):
        return None
    head = iter(value[: legal.end()])
    return tail if all(ch in head for ch in ideographs) else None


@cache
def _converters() -> tuple[opencc.OpenCC, opencc.OpenCC]:
    """OpenCC's traditional-to-simplified and simplified-to-traditional converters."""
    return opencc.OpenCC("t2s"), opencc.OpenCC("s2t")


def _traditional(value: str) -> dict[str, str]:
    """The characters of ``value`` that are traditional forms only, each with its simplified
    one: those that convert to a simplified character which converts back to them (凱 -> 凯 ->
    凱; not 乾, a simplified character of names too, which OpenCC converts to 干, and 干 back to
    幹). A mainland company is registered in simplified characters; a recogniser that knows
    both answers 凱 for a blurred 凯, sure of itself."""
    to_simplified, to_traditional = _converters()
    out = {}
    for ch in dict.fromkeys(value):
        if ideograph(ch):
            simple = to_simplified.convert(ch)
            if simple != ch and len(simple) == 1 and to_traditional.convert(simple) == ch:
                out[ch] = simple
    return out


SEAL_ID_RUN = 4
"""Characters in a row that what follows an 18-character id must share with it to be the
seal's print of the id (read in part, or a character off), not another line's."""


def _seal_id_after(value: str) -> bool:
    """Whether ``value`` is a unified social credit code that passes its check character, read
    on with the seller's seal's print of it (the seal prints the id across its middle, and on a
    black-and-white scan it is as black as the print: '914419004035343224914419004035343224',
    '9111010174465637983798')."""
    head, tail = value[:USCC_LENGTH], value[USCC_LENGTH:]
    if not tail or uscc_error(head):
        return False
    common = SequenceMatcher(None, head, tail, autojunk=False).find_longest_match()
    return common.size >= min(SEAL_ID_RUN, len(tail))


def _brackets_pair(value: str) -> bool:
    """Whether each closing bracket of ``value`` closes one opened before it, and every one
    opened is closed (a full-width and a half-width one pair: print does not tell them apart)."""
    depth = 0
    for ch in value:
        depth += (ch in OPENING_BRACKETS) - (ch in CLOSING_BRACKETS)
        if depth < 0:
            return False
    return depth == 0


def _not_text(value: str) -> str:
    """The characters of ``value`` no name is written with (:func:`plain_character`: a PDF's
    glyphs its font does not map come out as ⋹䤪电子商务有限公司 for 中瑞电子商务有限公司)."""
    return "".join(ch for ch in value if not plain_character(ch))


def _name_errors(value: str) -> list[str]:
    """A name with a character no name is written with (:func:`_not_text`: a PDF's glyphs its
    font does not map, a symbol read into it) is not read, nor one of a single character. A
    name that is one run of digits and capitals is an identifier read in the wrong box (a tax
    id printed just below a name); one that ends in such a run of 15 or more has a tax id glued
    on (two printed lines read as one); one with no letter at all is not a name; nor is one
    with a run of 7 digits or more (the address-and-phone line), a word of the form's labels
    (名称, 地址、电话, 开户行及账号) or a colon (a label's end: '称：') in it; nor one that ends
    inside its legal form (…有限公: a line found short), nor one that is a legal form alone
    (公司: :data:`_LEGAL_FORM_ALONE`), nor in a few digits after its words (a
    tax id's start: :data:`_TRAILING_DIGITS`); nor one half of whose characters, three or more,
    are an amount's capitals (:data:`_CAPITAL_DIGITS`); nor one whose brackets do not pair (a
    bracket lost under a highlighter's edge or a seal: 销售服务福州）有限公司)."""
    if odd := _not_text(value):
        why = "a misread, or glyphs a PDF's font leaves unmapped"
        return [f"{value!r} holds {odd!r}, no name's text ({why})"]
    if not any(ch.isalpha() for ch in value):
        return [f"{value!r} has no letters"]
    if len(value) < 2:
        return [f"{value!r}: one character is no name (a label's, or a line cut short)"]
    if _IDENTIFIER.fullmatch(value):
        return [f"{value!r} looks like an identifier, not text"]
    if _GLUED_ID.fullmatch(value) or _TRAILING_DIGITS.search(value):
        return [f"{value!r} ends with what looks like an identifier"]
    if _LONG_NUMBER.search(value):
        return [f"{value!r} holds a long number (a phone or account number?), not a name"]
    label = next((word for word in _FORM_LABELS if word in value), None)
    if label:
        return [f"{value!r} holds the form's label {label!r}, not a name"]
    if ":" in value or "：" in value:
        return [f"{value!r} holds a colon, the end of a label, not a name"]
    capitals = sum(ch in _CAPITAL_DIGITS for ch in value)
    if capitals >= 3 and 2 * capitals >= len(value):
        return [f"{value!r} reads as an amount in capitals (the total in words?), not a name"]
    if not _brackets_pair(value):
        return [f"{value!r}: its brackets do not pair (one lost or misread)"]
    cut = _CUT_LEGAL_FORM.search(value)
    if cut:
        return [f"{value!r} ends in {cut.group()!r}: its legal form cut short (有限公司?)"]
    if _LEGAL_FORM_ALONE.fullmatch(value):
        return [f"{value!r} is a legal form alone: the name before it was not read"]
    return []


def _date_errors(value: str) -> list[str]:
    if _ISO_DATE.fullmatch(value):
        try:
            dt.date.fromisoformat(value)
            return []
        except ValueError:
            return [f"{value} is not a calendar date"]
    return [f"{value!r} is not a YYYY-MM-DD date"]


ISSUE_SLACK = dt.timedelta(days=1)
"""How far after today (this machine's) an issue date may lie: time zones."""


def _issue_date_errors(value: str) -> list[str]:
    """Why ``value`` (an ISO date) cannot be the day an invoice was issued: it is after today,
    and no invoice is issued ahead of its day (2073 read for 2023). Other dates (a payment's
    due day) may lie ahead: a template names this check for the issue date only."""
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        return []  # the kind's check says what is wrong with it
    today = dt.date.today()
    if day > today + ISSUE_SLACK:
        return [f"{value} is after today ({today}): no invoice is issued ahead of its day"]
    return []


Validator = Callable[[str], list[str]]

VALIDATORS: Mapping[FieldKind, Validator] = MappingProxyType(
    {
        FieldKind.text: lambda value: [],
        FieldKind.name: _name_errors,
        FieldKind.code: _code_errors,
        FieldKind.amount: _money_errors,
        FieldKind.amount_words: _money_errors,
        FieldKind.date: _date_errors,
        FieldKind.tax_id: tax_id_errors,
    }
)


STRUCTURE_CHECKS: Mapping[str, Validator] = MappingProxyType(
    {
        "invoice_code": invoice_code_errors,
        "invoice_number": digital_number_errors,
        "issue_date": _issue_date_errors,
    }
)
"""The checks a template names in a field's ``check``, after its kind's."""


def check_value(spec: FieldSpec, raw: str) -> FieldCheck:
    """Normalise ``raw`` for ``spec``, then validate it (kind's validator, then ``spec.regex``).

    * empty (or whitespace) raw: ``value=None``, errors ``["empty"]`` if required, else none;
    * raw that cannot be normalised: ``value`` is the stripped raw text, errors the reason;
    * otherwise ``value`` is the normalised value and errors every validation failure (the
      kind's, ``spec.regex``'s, ``spec.check``'s); a name
      read on past its legal form with its own characters again (:func:`_own_again`: a seal's
      text), and faultless else, is given without them, in doubt; one read with traditional-only
      forms (:func:`_traditional`) in simplified, in doubt; a tax id read on with its seal's
      print (:func:`_seal_id_after`) is the id, with a note, and one whose check character was
      read as a look-alike of its own (:func:`look_alike_check_char`) takes its own, with a note.

    An unknown ``spec.normalizer`` is a template error and raises ``ValueError``.
    """
    normalize = get_normalizer(spec.normalizer, spec.kind)
    text = _without_label_tail(raw.strip(), spec.label)
    if not text:
        return FieldCheck(None, ["empty"] if spec.required else [])
    try:
        value = normalize(text)
    except FieldValueError as exc:
        return FieldCheck(text, [str(exc)])
    note, left_out = None, 0
    if spec.kind is FieldKind.name and _STRAY_END.search(value) and value[:-1].endswith(NAME_ENDS):
        note = f"{value[-1]!r} read after its end left out (the tax id below, a speck)"
        value, left_out = value[:-1], 1
    errors = list(VALIDATORS[spec.kind](value))
    if spec.kind is FieldKind.name and not errors and (seal := _own_again(value)):
        value, left_out = value[: -len(seal)], left_out + len(seal)
        errors.append(f"read on with {seal!r}, its own characters again (a seal's text?): left out")
    if spec.kind is FieldKind.name and not errors and (forms := _traditional(value)):
        value = "".join(forms.get(ch, ch) for ch in value)
        read = ", ".join(f"{t} for {s}" for t, s in forms.items())
        errors.append(f"read with traditional forms ({read}): given in simplified, to be looked at")
    if spec.kind is FieldKind.tax_id and errors and _seal_id_after(value):
        note = "the seal's print of it, read on after it, left out"
        return FieldCheck(value[:USCC_LENGTH], [], note, len(value) - USCC_LENGTH)
    if spec.kind is FieldKind.tax_id and errors and (mended := look_alike_check_char(value)):
        note = f"check character read {value[-1]!r}, taken as {mended[-1]!r}: the two look alike"
        value, errors = mended, []
    if spec.regex is not None and re.fullmatch(spec.regex, value) is None:
        errors.append(f"does not match {spec.regex}")
    if spec.check is not None:
        errors.extend(STRUCTURE_CHECKS[spec.check](value))
    if spec.kind is FieldKind.amount and not any(ch.isdigit() for ch in text):
        note = f"printed {text!r}: none (a sale exempt from tax, 免税)"  # normalize_tax's ***
    return FieldCheck(value, errors, note, left_out)


def _without_label_tail(text: str, label: str | None) -> str:
    """The text without the end of the field's printed label and its colon in front ('称：'
    from 名称 printed just left of the box, a lone '：'): a value never starts with a colon.
    Without its colon too, when the print lies over it ('称' before a name printed a few
    millimetres left: no value starts with its own label's end). Brackets of either width are
    the label's ('(小写)' for （小写）: print does not tell them apart)."""
    label = label.translate(HALF_WIDTH_BRACKETS) if label else label
    folded = text.translate(HALF_WIDTH_BRACKETS)  # as long as ``text``: cut at the same place
    tails = [label[i:] for i in range(len(label))] if label else []
    for tail in tails:
        for colon in ":：":
            if folded.startswith(tail + colon):
                return text[len(tail) + 1 :].strip()
    if text[:1] in ":：":
        return text[1:].strip()
    tail = next((tail for tail in tails if folded.startswith(tail)), "")
    return text[len(tail) :].strip() or text


def _as_decimal(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _money(value: Decimal) -> str:
    try:
        return format_money(value)
    except ValueError:
        return str(value)


def _sum_error(rule: SumRule, values: Mapping[str, str | None]) -> str | None:
    terms = [_as_decimal(values.get(name)) for name in rule.terms]
    equals = _as_decimal(values.get(rule.equals))
    if equals is None or any(t is None for t in terms):
        return None  # the field with no usable value already carries its own error
    total = sum((t for t in terms if t is not None), Decimal(0))
    if total.quantize(Decimal("0.01")) == equals.quantize(Decimal("0.01")):
        return None
    return f"{' + '.join(rule.terms)} = {_money(total)} but {rule.equals} is {_money(equals)}"


def _same_error(rule: SameRule, values: Mapping[str, str | None]) -> str | None:
    raw = [values.get(name) for name in rule.fields]
    if any(v is None for v in raw):
        return None
    texts = [v for v in raw if v is not None]
    numbers = [_as_decimal(v) for v in texts]
    if all(n is not None for n in numbers):
        if len(set(numbers)) == 1:
            return None
    elif len(set(texts)) == 1:
        return None
    names = ", ".join(rule.fields[:-1]) + f" and {rule.fields[-1]}"
    return f"{names} differ: {' vs '.join(texts)}"


def implied_values(rule: SumRule | SameRule, values: Mapping[str, str | None]) -> dict[str, str]:
    """What each field a rule names must hold, given the other fields' values (those that are
    numbers): the sum of the terms for the total, the total less the other terms for a term
    (none, where the sale is exempt from tax; negative only where the total is, as every amount
    of a red-letter invoice), another field's value for a "same" rule."""
    numbers = {name: _as_decimal(values.get(name)) for name in rule_fields(rule)}
    implied: dict[str, str] = {}
    if isinstance(rule, SumRule):
        terms = [numbers[t] for t in rule.terms]
        equals = numbers[rule.equals]
        if all(t is not None for t in terms):
            implied[rule.equals] = _money(sum((t for t in terms if t is not None), Decimal(0)))
        for i, name in enumerate(rule.terms):
            others = [t for j, t in enumerate(terms) if j != i]
            if equals is not None and all(t is not None for t in others):
                rest = equals - sum((t for t in others if t is not None), Decimal(0))
                if rest >= 0 or equals < 0:
                    implied[name] = _money(rest)
    else:
        for name in rule.fields:
            others = {numbers[o] for o in rule.fields if o != name and numbers[o] is not None}
            if len(others) == 1:
                implied[name] = _money(others.pop())
    return implied


def rule_fields(rule: SumRule | SameRule) -> list[str]:
    """The fields a rule names."""
    return [*rule.terms, rule.equals] if isinstance(rule, SumRule) else list(rule.fields)


def check_rules(template: Template, values: Mapping[str, str | None]) -> dict[str, list[str]]:
    """Apply ``template.rules`` to normalised values; field name -> errors (failing fields only).

    A failing rule adds its message to every field it names. A rule that names a field whose
    value is missing (``None`` or absent) or, for a sum, not a number, is skipped.
    """
    errors: dict[str, list[str]] = {}
    for rule in template.rules:
        message = (
            _sum_error(rule, values) if isinstance(rule, SumRule) else _same_error(rule, values)
        )
        if message is None:
            continue
        for name in dict.fromkeys(rule_fields(rule)):
            errors.setdefault(name, []).append(message)
    return errors


def unconfirmed(
    template: Template, values: Mapping[str, str | None], flagged: Collection[str]
) -> dict[str, str]:
    """Fields that only the template's rules can vouch for, none of which did: field name ->
    why. A field is vouched for by a rule that holds with every value it names (``values``
    holds flagged fields' values too: a total in words that states the flagged total still
    agrees with it). A rule naming a ``flagged`` field that does not hold vouches for nothing,
    so a field all of whose rules are like that (``amount`` when ``total`` is flagged: any
    number passes as an amount) is unconfirmed. Fields in no rule, and flagged ones, are not
    listed."""
    held = {name for rule in holding_rules(template, values) for name in rule_fields(rule)}
    blocked: dict[str, list[str]] = {}
    for rule in template.rules:
        names = rule_fields(rule)
        stuck = [name for name in names if name in flagged]
        for name in names:
            if stuck and name not in flagged:
                blocked.setdefault(name, []).extend(stuck)
    return {
        name: f"not cross-checked: {', '.join(dict.fromkeys(stuck))} flagged"
        for name, stuck in blocked.items()
        if name not in held
    }


def holding_rules(template: Template, values: Mapping[str, str | None]) -> list[SumRule | SameRule]:
    """The template's rules that every field they name has a value for (a number, for a sum),
    and that hold."""
    return [rule for rule in template.rules if _holds(rule, values)]


def _holds(rule: SumRule | SameRule, values: Mapping[str, str | None]) -> bool:
    if isinstance(rule, SumRule):
        numbers = [_as_decimal(values.get(name)) for name in rule_fields(rule)]
        return all(n is not None for n in numbers) and _sum_error(rule, values) is None
    return all(values.get(n) is not None for n in rule.fields) and _same_error(rule, values) is None
