"""A page's fields checked against each other, the QR code and the party registry.

In the order :func:`cross_check` runs them: the QR code settles the fields it states that were
read in doubt or not at all; slips in the amounts (a lost decimal point, the ¥ read as a digit,
one character misread) are mended where the template's rules give the value, and a sum no slip
settles takes the values the recogniser finds likeliest in their print (with a ``judge``); the
rules then flag what disagrees and confirm what they vouch for; codes read as the date's digits
and one tax id read for both parties are flagged; a reading that passed but disagrees with the
QR code is flagged; and each party's name and tax id are checked against the registry. Each
check changes the fields in place and says why in their errors or notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from difflib import SequenceMatcher
from itertools import product

from extractor.doubts import (
    DECIMALS,
    UNCERTAIN_CHARACTER,
    confirm,
    flag,
    only_doubt,
    passes,
    take_for_reading,
)
from extractor.fields import (
    DECIMAL_POINTS,
    LEADING_MARKS,
    FieldValueError,
    amount_to_words,
    check_rules,
    check_value,
    holding_rules,
    implied_values,
    parse_amount_words,
    rule_fields,
    unconfirmed,
)
from extractor.fields.codes import YEAR_RULES
from extractor.fields.normalize import MISPLACED_SEPARATOR, UNEXPECTED_IN_AMOUNT
from extractor.parties import Parties, name_key, same_name
from extractor.qr import qr_values
from extractor.result import FieldResult
from extractor.templates import FieldKind, FieldSpec, SameRule, SumRule, Template

MEND_TERM_CONFIDENCE = 0.8
"""A reading that gives another field its value through a rule, a character of that field's
reading corrected (:func:`_mend_amounts`, :func:`_mend_slips_in_sum`), is read at least this
sure. On the fixtures and 104 fresh pages the terms of every such mend (all right) were read at
0.88 or more; on blurred photos of A4 sheets an e-invoice or a 数电票 was printed on, two wrong
mends leant on a tax read at 0.64 and 0.72 (7 read 5 in the amount and the total alike, 0 read
8)."""
WORDS_SLIPS = 2
"""An amount in words read up to this many characters off (changed, added or lost) the words
of an amount a holding rule vouches for is that amount's words misread (one in five for
shorter words, one at least): the words spell an amount's every digit with its unit, so a
reading that close is of those words (叁拾捌万叁仟壹佰拾元叁角壹分, 柒 and 捌 lost, for
383178.31)."""
PARTY_NAME_SLIPS = 2
"""A name read up to this many characters off (changed, added or lost) the name the party
registry gives its valid tax id takes the registered name (one in five for shorter names); one
further off is flagged (another party's name, or the registry out of date)."""
_NOT_DIGIT = re.compile(r"[^0-9]")  # dropped to compare two readings digit by digit
_YEN = "¥￥"  # the currency mark in front of an amount, half and full width


Judge = Callable[[str, Sequence[str]], list[float | None]]
"""How likely the recogniser finds each of some texts as the print of a field (its name) in the
crop its reading came from: natural logs, None where it cannot tell (no such crop, an engine
that answers only its best class). Built by the pipeline from its crops
(:meth:`~extractor.engines.ctc.CTCLineReader.likelihoods`)."""


def cross_check(
    template: Template,
    qr: str | None,
    fields: dict[str, FieldResult],
    parties: Parties | None = None,
    judge: Judge | None = None,
) -> None:
    """The page's fields checked against each other, the QR code (``qr``, its payload) and the
    party registry: doubts settled or confirmed, slips mended, what disagrees flagged. With a
    ``judge``, a sum that no slip makes hold takes the value for one of its fields that the
    recogniser finds about as likely in its print (:func:`_mend_sums_by_likelihood`)."""
    _leave_out_what_the_form_lacks(template, fields)
    stated = qr_values(template, qr) if qr else {}
    _settle_by_qr(template, stated, fields)
    _mend_amounts(template, fields, stated)
    if judge is not None:
        _mend_sums_by_likelihood(template, fields, judge)
    _mend_words(template, fields)
    _apply_rules(template, fields)
    _require_confirmation(template, fields, stated)
    _apply_rules(template, fields, spare_vouched=True)
    _words_past_reading(template, fields)
    _flag_dates_read_as_codes(template, fields)
    _flag_a_date_its_code_rules_out(template, fields)
    _flag_one_tax_id_for_two_parties(template, fields)
    _cross_check_qr(stated, fields)
    if parties is not None:
        check_parties(template, parties, fields)


def _leave_out_what_the_form_lacks(template: Template, fields: dict[str, FieldResult]) -> None:
    """A field the form does not print where another's value says which form it is
    (``absent_when``: a 专票 carries no check code, and prints its machine number on that line)
    is absent: a reading of its box that fails its checks is left out, ``raw`` and the note
    saying what was read. A reading that passes them is kept."""
    for spec in template.fields:
        field = fields.get(spec.name)
        if not spec.absent_when or field is None or field.value is None or passes(field):
            continue
        for name, pattern in spec.absent_when.items():
            other = fields.get(name)
            if other is None or not passes(other) or not re.fullmatch(pattern, other.value or ""):
                continue
            fields[spec.name] = field.model_copy(
                update={
                    "value": None,
                    "valid": True,
                    "errors": [],
                    "note": f"not printed where {name} reads {other.value}: {field.raw!r}, read "
                    "in its box, left out",
                }
            )
            break


def _settle_by_qr(
    template: Template, stated: Mapping[str, str], fields: dict[str, FieldResult]
) -> None:
    """Flagged fields the QR code states (``stated``): a doubtful reading of the same value is
    confirmed; a reading of another value, or none, takes the QR code's value when it passes
    the field's checks, with ``source`` ``qr`` and ``raw`` as the print was read. A field that
    passed and disagrees with the QR code is left to :func:`_cross_check_qr` (a person looks)."""
    for name, value in stated.items():
        field = fields.get(name)
        if field is None or field.valid:
            continue
        if field.value == value and only_doubt(field):
            confirm(field, "confirmed by the QR code")  # after a mend's note, if any
        elif field.value != value and not check_value(template.field(name), value).errors:
            fields[name] = FieldResult(
                value=value,
                raw=field.raw,
                confidence=1.0,
                valid=True,
                box=field.box,
                source="qr",
                note=f"from the QR code: the print read {field.raw!r}" if field.raw else None,
            )


def _mend_amounts(
    template: Template, fields: dict[str, FieldResult], stated: Mapping[str, str] | None = None
) -> None:
    """An amount whose reading is a slip away from the value the template's rules give it (from
    fields whose own readings passed: amount + tax, the amount in words) takes that value; the
    field's note says which slip and which rule, ``raw`` keeps what was read. The slips:

    - the decimal point lost to blur ('¥5985 24'): the digits are exactly the value's;
    - in a reading that failed its own checks (a doubtful character, not an amount), one
      character read wrong, one too many or one missing ('47443.489'). Two passing readings
      give the value to the cent, so one that differs from it by one character is that value
      misread, not another value. With the ¥ in front read as a digit too ('9140929.58'), the
      value is given flagged (:data:`TWO_SLIPS`);
    - the same in a reading that passed, when the value it is given is surer than it: two rules
      give the same value ('¥16220.84' where amount + tax and the words both say 19220.84), or
      each other field of the rule is vouched for without it (``stated``: the QR code's values;
      or another rule that holds), as a tax read '45.01' where the QR code states the amount
      and the words the total;
    - before those, the ¥ read as a digit, a mark read before the ¥ or a lost point, where
      mending them is the one way the amounts add up (:func:`_mend_slips_in_sum`)."""
    for rule in template.rules:
        if isinstance(rule, SumRule):
            _mend_slips_in_sum(rule, template, fields)
    stated = stated or {}
    values = {name: f.value if _gives_values(f) else None for name, f in fields.items()}
    for rule in template.rules:
        for name, implied in implied_values(rule, values).items():
            field = fields.get(name)
            spec = template.field(name)
            if (
                field is None
                or spec.kind is not FieldKind.amount
                or field.value == implied
                or field.source == "qr"  # what the code states is no reading to mend
            ):
                continue
            surer: str | None = None
            slip = _stars_misread(field, spec, implied)
            if slip is None and field.value is not None:
                if not field.errors:
                    surer = _surer(template, values, stated, rule, name, implied)
                slip = _slip(field, implied, passed_over=surer is not None)
            if slip is None or (surer is None and _holds_as_read(rule, template, fields, name)):
                continue
            field.value = values[name] = implied
            field.note = f"{slip} from {surer or _describe(rule)}"
            if slip in _POINT_SLIPS:  # which explain the decimals (and the comma) read
                field.errors = [e for e in field.errors if not e.startswith(_POINT_SLIPS[slip])]
                field.valid = not field.errors
            else:
                field.errors, field.valid = [], True
                if surer is None:
                    _doubt_two_slips(field, slip)


SUM_SURE_COST = 3.0
"""How much less likely (natural log) than their readings the recogniser may find, in their
crops, the values a sum's mend by likelihood gives its fields, for them to pass: e^3, 20 times
(:func:`_mend_sums_by_likelihood`)."""
SUM_REPAIR_COST = 5.0
"""Up to this much less likely (e^5, ~150 times), the values are given in doubt
(:data:`LESS_LIKELY`)."""
SUM_MARGIN = 5.0
"""How much likelier (natural log) the values taken must be than any other way to make the sum
hold by changing one of its fields (its others read as they are, or with a slip)."""
LESS_LIKELY = "taken for the value its sum gives, which the recogniser finds less likely"
"""A sum's field given the value the others make it (:func:`_mend_sums_by_likelihood`) that the
recogniser finds less likely in its print than what it read, if not by much: the sum holds with
it by construction, so it vouches for none of the others."""


def _mend_sums_by_likelihood(
    template: Template, fields: dict[str, FieldResult], judge: Judge
) -> None:
    """A sum rule of amounts that no slip makes hold (:func:`_mend_slips_in_sum`): each way to
    make it hold by giving one field the value the others make it (the others as read, or with
    a slip of :func:`_readings`) is scored by how much less likely the recogniser finds, in each
    changed field's crop, the new value's print than what it read. The cheapest way is taken
    where it costs little (:data:`SUM_SURE_COST`; up to :data:`SUM_REPAIR_COST` in doubt) and
    every other way costs clearly more (:data:`SUM_MARGIN`): a tax read '22.43' in the print of
    12.41 beside an amount and a total read right. Not where the sum then holds another way too
    (:func:`another_way`): with a tax read '17.30' for 7.36, '9245.19 + 7.36 = 9252.55' and
    '245.19 + 7.36 = 252.55' both hold, the ¥ read as the 9 of both. A sum that holds several
    ways with slips of :func:`_readings` (none as read), which :func:`_mend_slips_in_sum`
    leaves, is settled the same way among those: '32.30' + '13.66' = '35.96' holds as 32.30 +
    3.66 = 35.96 (the tax's ¥ read as a 1) and as 2.30 + 3.66 = 5.96 (every ¥ a digit); the
    fields the way taken leaves as read are confirmed by it. The fields the QR code states are
    not changed; one the fallback read (another crop) is not scored."""
    for rule in template.rules:
        if not isinstance(rule, SumRule):
            continue
        names = rule_fields(rule)
        options = _slip_options(rule, template, fields)
        if options is None or any(fields[n].source not in ("roi", "qr") for n in names):
            continue
        readings = list(_ways(rule, options))
        holding = [
            c for c, values, implied in readings if implied.get(rule.equals) == values[rule.equals]
        ]
        if len(holding) == 1 or any(not any(slip for _, slip in combo) for combo in holding):
            continue  # it holds as read, or one way with slips: mended before, or left as it is
        if holding:  # several ways with slips, which the readings cannot tell apart
            ways = {tuple(value for value, _ in combo) for combo in holding}
        else:
            ways = {
                tuple(value if n == name else values[n] for n in names)
                for _, values, implied in readings
                for name, value in implied.items()
                if fields[name].source != "qr" and value != values[name]
            }
        costs = _costs(fields, names, sorted(ways), judge)
        if not costs:
            continue
        best, way = costs[0]
        if best > SUM_REPAIR_COST or (len(costs) > 1 and costs[1][0] - best < SUM_MARGIN):
            continue
        taken = {
            n: fields[n].model_copy(update={"value": v}) for n, v in zip(names, way, strict=True)
        }
        if not holding and another_way(rule, template, taken) is not None:
            continue  # the ¥ read as the same digit in a term and the total: it cannot tell
        for name, value in zip(names, way, strict=True):
            field = fields[name]
            if value == field.value:
                if holding and best <= SUM_SURE_COST:  # the way read otherwise lost to this one
                    confirm(field, f"confirmed by {_describe(rule)} as the recogniser reads it")
                continue
            note = (
                f"read {field.raw!r}: taken as {value}, the value {_describe(rule)} gives it, "
                "which the recogniser finds about as likely in its print"
            )
            take_for_reading(field, value, note, best, SUM_SURE_COST, LESS_LIKELY)


def _costs(
    fields: Mapping[str, FieldResult],
    names: Sequence[str],
    ways: Sequence[tuple[str, ...]],
    judge: Judge,
) -> list[tuple[float, tuple[str, ...]]]:
    """Each way's cost, cheapest first: how much less likely (natural log, summed over the
    fields it changes) the recogniser finds the way's values than what it read. A way with a
    field the judge cannot score is left out."""
    asked: dict[str, dict[str, list[str]]] = {}  # field -> value -> the texts that print it
    for way in ways:
        for name, value in zip(names, way, strict=True):
            if value != fields[name].value:
                asked.setdefault(name, {})[value] = _printed(fields[name].raw, value)
    scores: dict[str, dict[str, float]] = {}
    for name, printed in asked.items():
        read = "".join(fields[name].raw.split())
        texts = [read, *(text for forms in printed.values() for text in forms)]
        got = iter(judge(name, texts))
        base = next(got)
        by_text = dict(zip(texts[1:], got, strict=True))
        if base is None:
            continue
        scores[name] = {}
        for value, forms in printed.items():
            likely = [s for s in (by_text[text] for text in forms) if s is not None]
            if likely:
                scores[name][value] = base - max(likely)
    costs = []
    for way in ways:
        changed = [(n, v) for n, v in zip(names, way, strict=True) if v != fields[n].value]
        if all(v in scores.get(n, {}) for n, v in changed):
            costs.append((sum(scores[n][v] for n, v in changed), way))
    return sorted(costs)


def _printed(raw: str, value: str) -> list[str]:
    """How ``value`` would read in the print ``raw`` was read from: after the ¥ (and whatever
    was read before it) where one was read, else with a ¥ and without (the ¥ read as a digit,
    or none printed)."""
    raw = "".join(raw.split())
    yen = max(raw.rfind(mark) for mark in _YEN)
    return [raw[: yen + 1] + value] if yen >= 0 else [f"¥{value}", value]


def _holds_as_read(
    rule: SumRule | SameRule, template: Template, fields: dict[str, FieldResult], name: str
) -> bool:
    """Whether a sum rule holds with ``name`` as read and a slip in another field's reading
    (:func:`_readings`): fresh worn-ribbon 20297704 read ¥32.30 + ¥3.66 = ¥35.96 as '32.30'
    (in doubt of its 3), '13.66' (the ¥ a 1, sure) and '35.96'; the tax's value would have
    corrected the amount to 22.30, where dropping its 1 makes the sum hold as the amount reads.
    Which slip it was the rule cannot say, so the reading is not mended."""
    if not isinstance(rule, SumRule) or (options := _slip_options(rule, template, fields)) is None:
        return False
    at = rule_fields(rule).index(name)
    return any(
        combo[at][1] == "" and implied.get(rule.equals) == values[rule.equals]
        for combo, values, implied in _ways(rule, options)
    )


def _gives_values(field: FieldResult) -> bool:
    """Whether a reading may give another field its value through a rule: it passed its checks
    and was read sure enough (:data:`MEND_TERM_CONFIDENCE`)."""
    return not field.errors and field.confidence >= MEND_TERM_CONFIDENCE


def _surer(
    template: Template,
    values: Mapping[str, str | None],
    stated: Mapping[str, str],
    rule: SumRule | SameRule,
    name: str,
    implied: str,
) -> str | None:
    """How the value ``rule`` gives ``name`` is surer than its passing reading, or None: another
    rule gives the same value, or every other field ``rule`` names is vouched for without
    ``name`` (the QR code states it, or a rule that holds and does not name ``name``)."""
    others = [r for r in template.rules if r is not rule and name in rule_fields(r)]
    agreeing = [r for r in others if implied_values(r, values).get(name) == implied]
    if agreeing:
        return " and ".join(_describe(r) for r in [rule, *agreeing])
    vouchers: dict[str, str] = {
        field: "the QR code" for field, value in stated.items() if values.get(field) == value
    }
    for holding in holding_rules(template, values):
        if name not in rule_fields(holding):
            for field in rule_fields(holding):
                vouchers.setdefault(field, _describe(holding))
    rest = [field for field in rule_fields(rule) if field != name]
    if not all(field in vouchers for field in rest):
        return None
    return f"{_describe(rule)} ({'; '.join(f'{f} vouched for by {vouchers[f]}' for f in rest)})"


def _mend_slips_in_sum(rule: SumRule, template: Template, fields: dict[str, FieldResult]) -> None:
    """Blur makes the ¥ in front of an amount a 4 or a 9 ('¥153613.24' read '4153613.24'), a
    rule or a speck before it a character ('1¥2965.60'), and its decimal point vanish. When a
    sum rule's amounts do not add up as read, and there is exactly one way to make them add up
    with such slips (:func:`_readings`; to the cent, or with one character of one doubtful
    reading off, as in :func:`_slip`), it is taken; each changed field says so."""
    names = rule_fields(rule)
    options = _slip_options(rule, template, fields)
    if options is None:
        return
    # every way, the readings as they are too: dropping the same leading digit from a term and
    # the total keeps a sum that holds (44758.00 + 2685.48 = 47443.48 and 4758.00 + ... =
    # 7443.48), so a way is taken only when no other way, as read included, fits as well
    solutions: list[tuple[tuple[tuple[str, str], ...], str | None]] = []
    for combo, values, implied in _ways(rule, options):
        if implied.get(rule.equals) == values[rule.equals]:
            solutions.append((combo, None))
            continue
        for name in names:
            field = fields[name]
            if not (field.errors and name in implied and _one_edit(values[name], implied[name])):
                continue
            # its value comes from the others: each must be sure, or its doubt explained by a
            # slip ('¥54.3', doubted for its one decimal and taken as 54.30, is no sure term),
            # and read well enough to give another its value (MEND_TERM_CONFIDENCE)
            others = [(o, slip) for o, (_, slip) in zip(names, combo, strict=True) if o != name]
            if all(
                (slip or not fields[o].errors) and fields[o].confidence >= MEND_TERM_CONFIDENCE
                for o, slip in others
            ):
                solutions.append((combo, name))
    exact = [solution for solution in solutions if solution[1] is None]
    chosen = exact if exact else solutions
    if len(chosen) != 1 or all(slip in ("", _POINT_RESTORED) for _, slip in chosen[0][0]):
        return  # none, more than one way, or no ¥ in it: left to the other mends (:func:`_slip`)
    combo, mended = chosen[0]
    values = {name: value for name, (value, _) in zip(names, combo, strict=True)}
    if mended is not None:
        values[mended] = implied_values(rule, values)[mended]
    for name, (_, slip) in zip(names, combo, strict=True):
        field = fields[name]
        if not slip and name != mended:
            continue
        if name == mended:
            slip += (", " if slip else "") + _CHARACTER_CORRECTED
        # the rule holds with the value, which settles the reading's doubt (as confirmation does)
        field.value, field.errors, field.valid = values[name], [], True
        field.note = f"{slip} from {_describe(rule)}"
        _doubt_two_slips(field, slip)


def _slip_options(
    rule: SumRule, template: Template, fields: dict[str, FieldResult]
) -> list[list[tuple[str, str]]] | None:
    """For each field of a sum rule of amounts, the values its reading may stand for, with the
    slip behind each (:func:`_readings`), or None when the rule is not of read amounts."""
    names = rule_fields(rule)
    if any(template.field(n).kind is not FieldKind.amount or n not in fields for n in names):
        return None
    options = [list(_readings(fields[n], template.field(n)).items()) for n in names]
    return options if all(options) else None


def _ways(
    rule: SumRule, options: list[list[tuple[str, str]]]
) -> Iterator[tuple[tuple[tuple[str, str], ...], dict[str, str], dict[str, str]]]:
    """Every way to read a sum rule's fields (one of each field's ``options``, with its slip):
    the combination, its values by field, and the values the rule implies from them."""
    names = rule_fields(rule)
    for combo in product(*options):
        values = {name: value for name, (value, _) in zip(names, combo, strict=True)}
        yield combo, values, implied_values(rule, values)


def another_way(rule: SumRule, template: Template, fields: dict[str, FieldResult]) -> str | None:
    """A sum rule that holds as read, holding too with slips in the readings ('472.67 + 6.54 =
    479.21' and, the ¥ read as the 4 of both, '72.67 + 6.54 = 79.21'): that way, written out,
    or None when the readings as they are are the only way it holds."""
    options = _slip_options(rule, template, fields)
    for combo, values, implied in _ways(rule, options) if options else ():
        if any(slip for _, slip in combo) and implied.get(rule.equals) == values[rule.equals]:
            return f"{' + '.join(values[name] for name in rule.terms)} = {values[rule.equals]}"
    return None


_YEN_AS_DIGIT = "the ¥ read as a digit"
_BEFORE_YEN = "what was read before the ¥ dropped"
_WHOLE_AMOUNT = re.compile(r"(0|[1-9][0-9]*)\.[0-9]{1,2}")


def _readings(field: FieldResult, spec: FieldSpec) -> dict[str, str]:
    """The values an amount's reading may stand for, each with the slip that explains it (''
    for the value as read): the ¥ read as a leading digit; what was read before the ¥ (a rule,
    a speck); the decimal point lost (the digits of an amount printed with ``spec.decimals``).
    A slip must leave a whole amount: digits, a point, no leading zero. The QR code's value
    stands for itself alone."""
    out = {field.value: ""} if field.value is not None else {}
    if field.source == "qr":
        return out
    raw = "".join(field.raw.split())
    yen = max(raw.rfind(mark) for mark in _YEN)
    if yen > 0:
        bases = [(raw[yen + 1 :], _BEFORE_YEN)]
    elif yen < 0 and raw[:1].isdigit():
        bases = [(raw, ""), (raw[1:], _YEN_AS_DIGIT)]
    else:
        bases = [(raw[yen + 1 :], "")]
    for text, slip in bases:
        ways = [(text, slip)]
        if spec.decimals and text.isdigit() and len(text) > spec.decimals:
            point = len(text) - spec.decimals
            restored = ", ".join(filter(None, (slip, _POINT_RESTORED)))
            ways.append((f"{text[:point]}.{text[point:]}", restored))
        for candidate, why in ways:
            if why and _WHOLE_AMOUNT.fullmatch(candidate):
                checked = check_value(spec, candidate)
                if checked.value is not None and not checked.errors:
                    out.setdefault(checked.value, why)
    return out


_POINT_RESTORED = "decimal point restored"
_COMMA_FOR_POINT = "decimal point read as a comma"
_DASH_FOR_POINT = "decimal point read as a dash"
_POINT_SLIPS = {
    _POINT_RESTORED: (DECIMALS,),
    _COMMA_FOR_POINT: (DECIMALS, MISPLACED_SEPARATOR, f"{UNCERTAIN_CHARACTER} ','"),
    _DASH_FOR_POINT: (DECIMALS, f"{UNEXPECTED_IN_AMOUNT} '-'", f"{UNCERTAIN_CHARACTER} '-'"),
}
"""The slips of the point, each with the errors it explains: the others (a doubtful digit)
stay."""
_MARKS_FOR_POINT = {",": _COMMA_FOR_POINT, "-": _DASH_FOR_POINT}
"""What a blurred decimal point is read as, where it is printed ('¥1366,12', '¥13358-87')."""
_NOT_AMOUNT = re.compile(r"[^0-9.-]")  # a red-letter amount keeps its minus


def _slip(field: FieldResult, implied: str, passed_over: bool = False) -> str | None:
    """The slip that makes ``implied`` read as the field's reading, or None. A reading that
    passed its checks is mended only when ``passed_over`` (the value is surer, see
    :func:`_surer`); else it is flagged by the rule, not mended."""
    raw = field.raw
    if not any(p in raw for p in DECIMAL_POINTS) and _NOT_DIGIT.sub("", raw) == _NOT_DIGIT.sub(
        "", implied
    ):
        for mark, slip in _MARKS_FOR_POINT.items():
            if raw.count(mark) == 1 and _NOT_AMOUNT.sub("", raw.replace(mark, ".")) == implied:
                return slip
        return _POINT_RESTORED
    if not field.errors and not passed_over:
        return None
    read = _NOT_AMOUNT.sub("", raw)
    for text, yen in ((read, ""), (read[1:], f"{_YEN_AS_DIGIT}, ")):
        if yen and (not raw[:1].isdigit() or any(mark in raw for mark in _YEN)):
            continue
        if yen and text == implied:
            return _YEN_AS_DIGIT
        if _one_edit(text, implied):
            return f"{yen}{_CHARACTER_CORRECTED}"
        past = text[len(implied) :]
        if field.errors and "." in implied and text.startswith(implied) and past.isdigit():
            return f"{yen}{_PAST_ITS_END}"
    return None


STARS_MISREAD = "its *** (none due) read otherwise or lost"
STARS_READ = 4
"""At most this many characters in a reading of a tax's ``***`` (three stars, a rule or a speck
beside them) that :func:`_stars_misread` takes for them."""


def _stars_misread(field: FieldResult, spec: FieldSpec, implied: str) -> str | None:
    """:data:`STARS_MISREAD` where a tax the form prints ``***`` when none is due (exempt, 免税;
    not taxed, 不征税: the ``tax`` normaliser's) failed its checks, read as what blur and a
    ruling through the stars make of them ('***1', '*4*', '8', '049') or as nothing (faint
    stars lost to blur), and amount + tax = total says none is due (the amount and the total
    read alike, sure). A few characters, no ¥ and no decimal point: a tax printed as an amount
    shows both."""
    if spec.normalizer != "tax" or not field.errors or Decimal(implied) != 0:
        return None
    text = "".join(field.raw.split())
    if len(text) <= STARS_READ and not any(mark in text for mark in DECIMAL_POINTS + _YEN):
        return STARS_MISREAD
    return None


_CHARACTER_CORRECTED = "one character corrected"
TWO_SLIPS = "two slips mended (the ¥ read as a digit, a character misread)"
"""A reading taken as a sum's value with the ¥ dropped and a character corrected: two slips
fit a sum whose other term was misread as well ('¥14125.94' read '414125.94' and taken as
14125.95, to fit a tax the fallback misread 1625.12 for 1625.11; on ~2,000 fresh pages 4 of 8
such mends were wrong, and the fixtures' 2 right). The value is given, flagged for a person;
where another rule or the QR code gives the same value (a surer one), it passes."""


def _doubt_two_slips(field: FieldResult, slip: str) -> None:
    """Flag ``field``, just mended by ``slip``, where that is :data:`TWO_SLIPS`."""
    if slip.startswith(_YEN_AS_DIGIT) and slip.endswith(_CHARACTER_CORRECTED):
        flag(field, f"{TWO_SLIPS}: another term misread would fit as well")


def _two_slipped(field: FieldResult) -> bool:
    """Whether ``field`` was given a sum's value with two slips mended (:data:`TWO_SLIPS`), or
    one the recogniser finds less likely than its reading (:data:`LESS_LIKELY`)."""
    return any(error.startswith((TWO_SLIPS, LESS_LIKELY)) for error in field.errors)


_PAST_ITS_END = "digits read past its last decimal dropped"
"""A failed reading whose start is exactly the value a rule gives, more digits after it
('¥757.02617' where amount + tax make 757.02: the crop caught the ink past the amount's end)."""


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by changing, adding or removing at most one character."""
    if len(a) < len(b):
        a, b = b, a
    if len(a) - len(b) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    return any(a[:i] + a[i + 1 :] == b for i in range(len(a)))


def _describe(rule: SumRule | SameRule) -> str:
    if isinstance(rule, SumRule):
        return f"{' + '.join(rule.terms)} = {rule.equals}"
    return " = ".join(rule.fields)


def _mend_words(template: Template, fields: dict[str, FieldResult]) -> None:
    """An amount in words whose reading failed, a character or two off the words of the amount
    it states ('叁万伍仟玖佰壹拾陆元角肆分', the 柒 before 角 lost to blur; :data:`WORDS_SLIPS`),
    takes that amount's value when another rule that holds vouches for the amount (amount + tax
    = total); the note says so. Names of the words' fields come from the template (kind
    ``amount_words``). Not words that state another amount but for characters lost: blur and
    wear read a faint character as nothing, not as another sure of itself, and words read
    whole (叁拾壹万伍仟零肆拾玖圆, failed for a doubt at 壹) that say otherwise than a sum
    read alike wrong twice (26013.27 and 315049.55 read with 9 for 0, adding up) are flagged,
    as where they pass."""
    failed = [  # (a doubtful reading of the right value is confirmed later, not mended)
        name
        for name, field in fields.items()
        if not field.valid and template.field(name).kind is FieldKind.amount_words
    ]
    if not failed:
        return
    values = {name: f.value if not f.errors else None for name, f in fields.items()}
    holding = holding_rules(template, values)
    for rule in template.rules:
        if not isinstance(rule, SameRule):
            continue
        for name in (n for n in failed if n in rule.fields):
            field = fields[name]
            for other in rule.fields:
                value = values.get(other)
                if other == name or value is None or value == field.value:
                    continue
                vouching = _vouching(holding, other, name)
                if vouching is None:
                    continue
                words, read = _plain_words(amount_to_words(value)), _plain_words(field.raw)
                stated = _amount_stated(field.raw)
                if stated is not None and not _only_lost(read, words):
                    flag(field, f"{name} and {other} differ: {stated} vs {value}")
                    continue
                slips = _slips(read, words)
                if slips <= max(1, min(WORDS_SLIPS, len(words) // 5)):
                    field.value, field.errors, field.valid = value, [], True
                    corrected = "one character" if slips == 1 else f"{slips} characters"
                    field.note = (
                        f"{corrected} corrected from {_describe(rule)} "
                        f"({other} vouched for by {_describe(vouching)})"
                    )
                    break


def _amount_stated(raw: str) -> str | None:
    """The amount words read as ``raw`` state, or None where they state none."""
    try:
        return parse_amount_words(raw)
    except FieldValueError:
        return None


def _only_lost(read: str, words: str) -> bool:
    """Whether ``read`` is ``words`` with characters lost (blur or wear reads a faint one as
    nothing; it does not read one as another sure of itself where it states an amount)."""
    rest = iter(words)
    return all(ch in rest for ch in read)


def _vouching(
    rules: Sequence[SumRule | SameRule], vouched: str, without: str
) -> SumRule | SameRule | None:
    """The first of ``rules`` (rules that hold) naming ``vouched`` and not ``without``: one that
    vouches for that field without the field it is to give its value to."""
    return next(
        (r for r in rules if vouched in rule_fields(r) and without not in rule_fields(r)), None
    )


def _plain_words(text: str) -> str:
    """Capitals as compared: no spaces or leading ⊗, 圆 as 元, 正 as 整 (both are printed)."""
    text = "".join(text.split()).lstrip(LEADING_MARKS)
    return text.replace("圆", "元").replace("正", "整")


def _apply_rules(
    template: Template, fields: dict[str, FieldResult], spare_vouched: bool = False
) -> None:
    """Flags the fields of a rule that does not hold, but for the QR code's values: the others
    are what is wrong. Run again once doubts are confirmed (``spare_vouched``), it checks the
    rules a doubtful value kept from being checked with the values confirmed since, and flags
    the fields of one that does not hold but those a rule that holds vouches for: a total its
    words confirmed stays, the amount and the tax that do not add up to it are flagged (a tax
    read '¥31752.19' for 31752.10 passed beside a total read in doubt, fresh heavy 20279007)."""
    values = {name: f.value if not f.errors else None for name, f in fields.items()}
    holding = holding_rules(template, values) if spare_vouched else []
    vouched = {name for rule in holding for name in rule_fields(rule)}
    for name, errors in check_rules(template, values).items():
        if fields[name].source != "qr" and name not in vouched:
            for error in errors:
                flag(fields[name], error)


def _require_confirmation(
    template: Template, fields: dict[str, FieldResult], stated: dict[str, str]
) -> None:
    """Rules vouch for the fields they name, or withhold it.

    A field flagged only for doubt (a weak character, low confidence) whose rule holds with its
    value (``amount + tax = total`` to the cent, or the total in words stating the total) is
    confirmed: two readings do not agree by chance. Unless the sum holds another way too, with
    slips in the readings (the ¥ read as the same leading digit of a term and the total): then
    the rule cannot tell which, and the field stays flagged. A field that only a rule could
    vouch for (any number passes as an amount) is flagged when none of its rules could be
    checked, unless the QR code states the same value (``stated``: the values it states). A
    value mended with two slips (:data:`TWO_SLIPS`) is the rule's own sum, no reading: the rule
    holds with it by construction and vouches for none of its other fields."""
    values = {name: None if _two_slipped(f) else f.value for name, f in fields.items()}
    for rule in holding_rules(template, values):
        doubtful = [fields[n] for n in rule_fields(rule)]
        doubtful = [field for field in doubtful if not field.valid and only_doubt(field)]
        if not doubtful:
            continue
        other = another_way(rule, template, fields) if isinstance(rule, SumRule) else None
        for field in doubtful:
            if other is not None:  # the sum cannot tell the two apart
                field.errors.append(f"{_describe(rule)} holds read otherwise too: {other}")
                continue
            confirm(field, f"confirmed by {_describe(rule)}")
    flagged = {name for name, f in fields.items() if not f.valid}
    for name, why in unconfirmed(template, values, flagged).items():
        field = fields.get(name)  # a caller may pass some of the template's fields only
        if field is not None and field.value is not None and stated.get(name) != field.value:
            field.errors.append(why)
            field.valid = False


def _words_past_reading(template: Template, fields: dict[str, FieldResult]) -> None:
    """An amount in words read past recognising (no amount: '分分', '万整仟贰佰元角'; more than
    the slip or two :func:`_mend_words` mends) takes the value of the amount it repeats where a
    sum that holds vouches for that amount, every field of it read valid unaided (neither
    mended nor confirmed by a rule) and sure (:data:`MEND_TERM_CONFIDENCE`). The words can
    tell nothing more then, as where they are not read at all (the QR code states the amount
    and the sum holds: :meth:`~extractor.pipeline.Extractor.recognize`); the note says what
    was read. Words that read an amount, in doubt or another, are left to the rules."""
    values = {name: f.value if f.valid else None for name, f in fields.items()}
    unaided = [
        rule
        for rule in holding_rules(template, values)
        if isinstance(rule, SumRule)
        and all(_read_unaided(fields.get(n)) for n in rule_fields(rule))
    ]
    for rule in template.rules:
        if not isinstance(rule, SameRule):
            continue
        for name in rule.fields:
            field, spec = fields.get(name), template.field(name)
            if field is None or field.valid or spec.kind is not FieldKind.amount_words:
                continue
            if not check_value(spec, field.raw).errors:
                continue  # an amount: the rules tell whether it is the total's
            for other in (o for o in rule.fields if o != name and o in fields):
                vouching = _vouching(unaided, other, name)
                if vouching is None:
                    continue
                source = fields[other]
                fields[name] = field.model_copy(
                    update={
                        "value": source.value,
                        "confidence": source.confidence,
                        "valid": True,
                        "errors": [],
                        "note": f"taken from {other}, which {_describe(vouching)} vouches for: "
                        f"its print read {field.raw!r}, no amount",
                    }
                )
                break


def _read_unaided(field: FieldResult | None) -> bool:
    """Whether a field was read valid as it is (or taken from the QR code) and sure enough to
    vouch for another (:data:`MEND_TERM_CONFIDENCE`): no mend, no rule's confirmation."""
    return (
        field is not None
        and field.valid
        and (field.note is None or field.source == "qr")
        and field.confidence >= MEND_TERM_CONFIDENCE
    )


def _flag_dates_read_as_codes(template: Template, fields: dict[str, FieldResult]) -> None:
    """A code that reads as a date field's digits (the national form prints 开票日期 just
    below the invoice number: a crop that slid onto it, on a page bent or aligned by its
    labels, reads ``20230525`` under the digits' allowlist, which passes as a number) is
    flagged, in place: no invoice's number is its own date but by a chance of about one in a
    hundred million. The QR code's values are left alone."""

    def read(kind: FieldKind) -> dict[str, FieldResult]:
        kept = ((spec.name, fields.get(spec.name)) for spec in template.fields if spec.kind is kind)
        return {name: field for name, field in kept if field is not None and field.value}

    dates = {name: str(date.value).replace("-", "") for name, date in read(FieldKind.date).items()}
    for field in read(FieldKind.code).values():
        for date, digits in dates.items():
            if field.value == digits and field.source != "qr":
                flag(field, f"reads as {date}'s digits: its crop may hold the date")


def _flag_a_date_its_code_rules_out(template: Template, fields: dict[str, FieldResult]) -> None:
    """A code or number whose ``check`` reads a year (:data:`YEAR_RULES`) against an issue
    date it rules out: one of the two was misread (a 专票 of 3400181196, printed in 2018, read
    issued 2010-06-18). Both readings pass their own checks; each read from print is flagged
    (the QR code's values are left alone)."""
    codes = [spec for spec in template.fields if spec.check in YEAR_RULES]
    dates = [spec.name for spec in template.fields if spec.kind is FieldKind.date]
    for spec, date_name in product(codes, dates):
        code, date = fields.get(spec.name), fields.get(date_name)
        if code is None or date is None or not (passes(code) and passes(date)):
            continue
        issued = (date.value or "")[:4]
        if not issued.isdigit():
            continue
        ruled_out = YEAR_RULES[spec.check](code.value or "", int(issued))
        if ruled_out is None:
            continue
        why = f"{spec.name} {code.value} {ruled_out}, {date_name} {issued}"
        for field in (code, date):
            if field.source != "qr":
                flag(field, why)


def _flag_one_tax_id_for_two_parties(template: Template, fields: dict[str, FieldResult]) -> None:
    """The parties' tax ids read alike flagged, in place: no taxpayer issues an invoice to
    itself, and one party's id was taken for the other's (a sticky note over the seller's, the
    fallback found the buyer's beside its label)."""
    ids = [fields.get(party.tax_id) for party in template.parties]
    for field in ids:
        if field is None or not field.value:
            continue
        if any(other is not field and other and other.value == field.value for other in ids):
            flag(field, "the same tax id as the other party's: one read for the other?")


def _cross_check_qr(stated: dict[str, str], fields: dict[str, FieldResult]) -> None:
    """A field read otherwise than the QR code states (``stated``) flagged: what it settled
    took the code's value (:func:`_settle_by_qr`); what is left passed as read."""
    for name, value in stated.items():
        field = fields[name]
        if field.value != value:
            field.errors.append(f"the QR code says {value}")
            field.valid = False


def check_parties(template: Template, parties: Parties, fields: dict[str, FieldResult]) -> None:
    """Each party's name and tax id (the template's ``parties``) against the registry, in place
    (twice on a page that takes the fallback: before it, so that it does not read again what
    the registry settles, and on what it returns). A tax id that passes its checks and is
    registered vouches for the name registered with it: a name read so
    (:func:`~extractor.parties.same_name`: whatever its width and spaces; it is then given as
    registered) is confirmed with it, one read close to it (:func:`close_to_registered`) takes the
    registered name (the tax id valid), one further off is flagged. Else a name read as
    registered vouches for its tax id: one read a character off takes the registered one (and
    confirms the name in doubt), one further off is flagged (the name valid)."""
    for party in template.parties:
        name, tax_id = fields.get(party.name), fields.get(party.tax_id)
        if name is None or tax_id is None:  # an unaligned page: only what the fallback found
            continue
        registered = parties.name_for(tax_id.value) if passes(tax_id) else None
        if registered is not None:
            source = parties.source(tax_id.value or "")
            how = f"{source}'s name for tax id {tax_id.value}"
            if same_name(name.value, registered):  # as registered, but for width or spaces
                if name.value != registered:
                    fields[party.name] = name = _registered(name, registered, how)
                for field in (name, tax_id):
                    confirm(field, f"confirmed by {source}")
            elif tax_id.valid and close_to_registered(name.value or "", registered):
                fields[party.name] = _registered(name, registered, how)
            elif tax_id.valid:
                flag(name, f"{source} names {tax_id.value} {registered!r}")
            continue
        owner = parties.tax_id_for(name.value) if passes(name) else None
        if owner is None or owner == tax_id.value:
            continue
        source = parties.source(owner)
        if tax_id.value and _one_edit(tax_id.value, owner):  # the pair as registered, but one slip
            how = f"{source}'s tax id for {name.value!r}"
            fields[party.tax_id] = _registered(tax_id, owner, how)
            confirm(name, f"confirmed by {source}")
        elif name.valid:
            flag(tax_id, f"{source} gives {name.value!r} the tax id {owner}")


def close_to_registered(read: str, registered: str) -> bool:
    """Whether a name read is the registered one misread: off by one character in five, at
    most :data:`PARTY_NAME_SLIPS` (a short name by none: 张三 read 李四 is another name), or
    holding it whole with more text glued on (the next printed line read with it)."""
    read, registered = name_key(read), name_key(registered)
    slips = min(PARTY_NAME_SLIPS, len(registered) // 5)
    return _slips(read, registered) <= slips or (len(registered) >= 5 and registered in read)


def _slips(read: str, registered: str) -> int:
    """How many characters ``read`` differs from ``registered`` by (changed, added, lost)."""
    blocks = SequenceMatcher(None, read, registered, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in blocks if tag != "equal")


def _registered(field: FieldResult, value: str, how: str) -> FieldResult:
    note = f"{how}: read as {field.value or field.raw!r}"
    return field.model_copy(update={"value": value, "valid": True, "errors": [], "note": note})
