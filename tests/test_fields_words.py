import random
from decimal import Decimal

import pytest

from extractor.fields import FieldValueError, amount_to_words, parse_amount_words

# Canonical pairs; the regulation examples (正确填写票据和结算凭证的基本规定) among them.
CANONICAL = [
    ("1234.56", "壹仟贰佰叁拾肆元伍角陆分"),
    ("1409.50", "壹仟肆佰零玖元伍角"),
    ("325.04", "叁佰贰拾伍元零肆分"),
    ("6007.14", "陆仟零柒元壹角肆分"),
    ("16409.02", "壹万陆仟肆佰零玖元零贰分"),
    ("1680.32", "壹仟陆佰捌拾元叁角贰分"),
    ("107000.53", "壹拾万柒仟元伍角叁分"),
    ("1999.00", "壹仟玖佰玖拾玖元整"),
    ("100000.00", "壹拾万元整"),
    ("100001.00", "壹拾万零壹元整"),
    ("10010.01", "壹万零壹拾元零壹分"),
    ("1000000.10", "壹佰万元壹角"),
    ("10500.00", "壹万零伍佰元整"),
    ("1050000.00", "壹佰零伍万元整"),
    ("10005000.00", "壹仟万伍仟元整"),
    ("10050000.00", "壹仟零伍万元整"),
    ("10000500.00", "壹仟万零伍佰元整"),
    ("110000000.00", "壹亿壹仟万元整"),
    ("20300000.00", "贰仟零叁拾万元整"),
    ("100000005.00", "壹亿零伍元整"),
    ("120000005.00", "壹亿贰仟万零伍元整"),
    ("100000000.00", "壹亿元整"),
    ("100010000.00", "壹亿零壹万元整"),
    ("99999999.99", "玖仟玖佰玖拾玖万玖仟玖佰玖拾玖元玖角玖分"),
    ("10.00", "壹拾元整"),
    ("1.00", "壹元整"),
    ("0.50", "伍角"),
    ("0.56", "伍角陆分"),
    ("0.05", "伍分"),
    ("0.00", "零元整"),
    ("-12.30", "负壹拾贰元叁角"),
]


@pytest.mark.parametrize(("figures", "words"), CANONICAL)
def test_canonical_pairs(figures: str, words: str) -> None:
    assert amount_to_words(figures) == words
    assert amount_to_words(Decimal(figures)) == words
    assert parse_amount_words(words) == figures


@pytest.mark.parametrize(
    ("words", "figures"),
    [
        ("壹仟玖佰玖拾玖圆整", "1999.00"),
        ("壹仟玖佰玖拾玖元正", "1999.00"),
        ("拾元整", "10.00"),
        ("拾伍元整", "15.00"),
        ("拾万元整", "100000.00"),
        ("壹仟陆佰捌拾元零叁角贰分", "1680.32"),  # optional 零 for a zero 元 digit
        ("壹拾万柒仟元零伍角叁分", "107000.53"),
        ("壹仟肆佰零玖元伍角整", "1409.50"),  # 整 may follow 角
        ("⊗壹仟贰佰叁拾肆元伍角陆分", "1234.56"),
        ("⊗⊗壹佰元整", "100.00"),
        ("⊗负壹佰元整", "-100.00"),
        ("ⓧ壹佰元整", "100.00"),  # the mark as a PDF font's ToUnicode map may name it
        ("Ⓧ 壹佰元整", "100.00"),
        ("⨂负壹佰元整", "-100.00"),
        ("⊗（负数）壹佰元整", "-100.00"),  # a red-letter invoice, as tax-control software prints it
        ("(负数)壹佰元整", "-100.00"),
        ("负伍角", "-0.50"),
        ("壹 仟 贰佰叁拾肆元 伍角陆分", "1234.56"),
        ("零元伍角", "0.50"),
        ("零元伍分", "0.05"),
        ("零元零伍分", "0.05"),
        ("壹仟亿元整", "100000000000.00"),
        ("壹拾万零柒仟元伍角叁分", "107000.53"),  # optional 零 for a zero 万 digit
        ("壹仟万零伍仟元整", "10005000.00"),
        ("壹拾亿零柒仟万元整", "1070000000.00"),
        ("壹拾亿柒仟万元整", "1070000000.00"),
    ],
)
def test_accepted_variants(words: str, figures: str) -> None:
    assert parse_amount_words(words) == figures


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ("", "no amount"),
        ("⊗", "no amount"),
        ("负零元整", "负 before a zero amount"),
        ("壹元元整", "元 appears more than once"),
        ("壹元圆整", "元 appears more than once"),
        ("伍角壹元", "角 comes before 元"),
        ("伍分壹元整", "分 comes before 元"),
        ("壹伍元整", "digit 壹 has no unit before 伍"),
        ("壹仟伍元伍角", "missing 零 for the zeros before 伍"),
        ("壹仟肆佰玖元整", "missing 零"),
        ("壹拾万壹元整", "missing 零"),
        ("壹仟万伍佰元整", "missing 零"),
        ("壹亿伍元整", "missing 零"),
        ("壹万零伍仟元整", "零 before 伍 stands for no zero"),
        ("壹亿零壹仟万元整", "零 before 壹 stands for no zero"),
        ("壹仟零肆佰元整", "零 before 肆 stands for no zero"),
        ("壹仟零零玖元整", "零零"),
        ("壹佰零元整", "零 must be followed by a digit"),
        ("零壹佰元整", "cannot start with 零"),
        ("伍拾壹佰元整", "descending order"),
        ("壹拾拾元整", "unit 拾 has no digit before it"),
        ("壹佰佰元整", "unit 佰 has no digit before it"),
        ("壹万伍亿元整", "group units out of order"),
        ("壹万伍万元整", "group units out of order"),
        ("壹亿万元整", "万 must follow a digit"),
        ("万元整", "万 must follow a digit"),
        ("元整", "nothing before 元"),
        ("壹佰元", "ends in 元整"),
        ("壹佰元零整", "ends in 元整"),
        ("壹佰元贰分", "零 is required between 元 and 分"),
        ("壹佰零玖元零伍角", "零 before 角 only stands for a zero 元 digit"),
        ("零元零伍角", "零 before 角"),
        ("壹佰元伍角陆分整", "整 cannot follow 分"),
        ("壹佰元陆分伍角", "cannot read '陆分伍角'"),
        ("壹佰元伍角角", "cannot read"),
        ("壹佰伍角", "missing 元"),
        ("零伍分", "cannot start with 零"),
        ("伍", "cannot read"),
        ("两元整", "unexpected characters in an amount in capitals: '两'"),
        ("壹佰元整1", "unexpected characters"),
        ("壹佰负元整", "unexpected characters"),
    ],
)
def test_malformed_is_rejected(words: str, message: str) -> None:
    with pytest.raises(FieldValueError, match=message):
        parse_amount_words(words)


@pytest.mark.parametrize("bad", ["1.005", "abc", "NaN", "Infinity", "1000000000000", "1,000"])
def test_amount_to_words_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        amount_to_words(bad)


EDGE_CENTS = [
    1, 9, 10, 11, 99, 100, 101, 110, 1000, 1001, 1010, 10000, 10001, 10100,
    10000000, 10000100, 1001001, 1000010, 100000000, 100000001,
    9_999_999_999, 1_000_000_000, 1_000_000_001, 100_000_000_000 // 10,
]  # fmt: skip


def _random_cents(rng: random.Random) -> int:
    """Values in 0.01..99,999,999.99, half of them with zero-heavy digits."""
    if rng.random() < 0.5:
        return rng.randint(1, 9_999_999_999)
    digits = [rng.choice("0000000123456789") for _ in range(10)]
    return int("".join(digits)) or 1


def test_round_trip() -> None:
    rng = random.Random(20240512)
    cents_values = EDGE_CENTS + [_random_cents(rng) for _ in range(5000)]
    for cents in cents_values:
        figures = f"{Decimal(cents) / 100:.2f}"
        words = amount_to_words(figures)
        assert parse_amount_words(words) == figures, (figures, words)
        assert parse_amount_words("负" + words) == "-" + figures


def test_dropping_any_zero_from_a_canonical_form_is_caught() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(2000):
        figures = f"{Decimal(_random_cents(rng)) / 100:.2f}"
        words = amount_to_words(figures)
        for i, ch in enumerate(words):
            if ch == "零":
                with pytest.raises(FieldValueError):
                    parse_amount_words(words[:i] + words[i + 1 :])
                checked += 1
    assert checked > 500


def _reference_words(cents: int) -> str:
    """An independent, group-by-group writer of the standard form, to check amount_to_words."""
    digits, units, groups = "零壹贰叁肆伍陆柒捌玖", ["", "拾", "佰", "仟"], ["", "万", "亿"]

    def group_words(g: int) -> str:
        text = "".join(
            digits[int(d)] + units[3 - i] if d != "0" else "零" for i, d in enumerate(f"{g:04d}")
        )
        while "零零" in text:
            text = text.replace("零零", "零")
        return text.strip("零")

    integer, fraction = divmod(cents, 100)
    parts: list[str] = []
    zero_due = False
    for k in range(2, -1, -1):
        g = integer // 10 ** (4 * k) % 10000
        if g == 0:
            zero_due = zero_due or bool(parts)
            continue
        if parts and (zero_due or g < 1000):
            parts.append("零")
        parts.append(group_words(g) + groups[k])
        zero_due = False
    words = "".join(parts) + ("元" if integer else "")
    jiao, fen = divmod(fraction, 10)
    if jiao:
        return words + digits[jiao] + "角" + (digits[fen] + "分" if fen else "")
    if fen:
        return words + ("零" if integer else "") + digits[fen] + "分"
    return (words or "零元") + "整"


def test_amount_to_words_agrees_with_a_reference_writer() -> None:
    rng = random.Random(99)
    for cents in EDGE_CENTS + [_random_cents(rng) for _ in range(3000)]:
        figures = f"{Decimal(cents) / 100:.2f}"
        assert amount_to_words(figures) == _reference_words(cents), figures
