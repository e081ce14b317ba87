import pytest

from extractor.errors import RoiError
from extractor.fields import (
    FieldValueError,
    get_normalizer,
    normalize_amount,
    normalize_date,
    normalize_digits,
    normalize_name,
    normalize_tax,
    normalize_tax_id,
    normalize_text,
)
from extractor.templates import FieldKind


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("¥1,234.56", "1234.56"),
        ("￥ 1234.5", "1234.50"),
        ("１２３４．５６", "1234.56"),
        ("￥１，２３４．５", "1234.50"),
        ("1234", "1234.00"),
        ("0", "0.00"),
        ("0.5", "0.50"),
        ("-12", "-12.00"),
        ("¥-12.3", "-12.30"),
        ("-¥12.30", "-12.30"),
        ("－１２", "-12.00"),
        ("-0", "0.00"),
        ("1,234,567.89", "1234567.89"),
        ("  ¥ 1 234.56 ", "1234.56"),
    ],
)
def test_amount(raw: str, expected: str) -> None:
    assert normalize_amount(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "empty"),
        ("  ", "empty"),
        ("¥", "no digits"),
        ("1.2.3", "more than one decimal point"),
        ("12a4.00", "unexpected characters in an amount: 'a'"),
        ("l234.56", "unexpected characters"),
        ("12,34.56", "misplaced thousands separator"),
        ("1234,56", "misplaced thousands separator"),
        ("1234.567", "more than two decimal places"),
        ("1234.", "not an amount"),
        (".5", "not an amount"),
        ("--12", "unexpected characters"),
        ("¥¥12", "unexpected characters"),
        ("12-", "unexpected characters"),
        ("١٢", "unexpected characters"),
    ],
)
def test_bad_amount(raw: str, message: str) -> None:
    with pytest.raises(FieldValueError, match=message):
        normalize_amount(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("***", "0.00"), ("**", "0.00"), ("*", "0.00"), ("¥***", "0.00"), ("¥12.30", "12.30")],
)
def test_tax_printed_as_stars_is_none(raw: str, expected: str) -> None:
    assert normalize_tax(raw) == expected


@pytest.mark.parametrize("raw", ["*1*", "12*", "¥*.5"])
def test_tax_is_stars_alone_or_an_amount(raw: str) -> None:
    with pytest.raises(FieldValueError, match="unexpected characters"):
        normalize_tax(raw)


def test_field_value_error_is_a_roi_error_and_a_value_error() -> None:
    with pytest.raises(RoiError):
        normalize_amount("x")
    with pytest.raises(ValueError):
        normalize_amount("x")


@pytest.mark.parametrize(
    "raw",
    [
        "2024年05月12日",
        "2024 年 05 月 12 日",
        "2024年5月12",
        "2024-05-12",
        "2024.05.12",
        "2024/5/12",
        "20240512",
        "２０２４年０５月１２日",
        "2024年05/12日",  # one of 年/月/日 misread (blur): the other two still place the parts
        "2024/05月12日",
        "2024年05月12/",
    ],
)
def test_date(raw: str) -> None:
    assert normalize_date(raw) == "2024-05-12"


def test_date_single_digit_month_and_day() -> None:
    assert normalize_date("2024年5月2日") == "2024-05-02"
    assert normalize_date("2024-2-29") == "2024-02-29"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "empty"),
        ("2024-02-30", "2024-02-30 is not a calendar date"),
        ("2023年2月29日", "2023-02-29 is not a calendar date"),
        ("2024-13-01", "not a calendar date"),
        ("20240500", "not a calendar date"),
        ("1989-12-31", "year 1989 is outside 1990..2100"),
        ("2101-01-01", "year 2101"),
        ("2024-05/12", "mixed date separators"),
        ("2024年05/12/", "not a date"),  # two of the three misread: no longer sure
        ("2024年5/12日", "not a date"),  # unpadded: 5/1 or 5/12?
        ("2024年05月", "not a date"),
        ("24-05-12", "not a date"),
        ("2024512", "not a date"),
        ("2024-005-12", "not a date"),
        ("May 12 2024", "not a date"),
    ],
)
def test_bad_date(raw: str, message: str) -> None:
    with pytest.raises(FieldValueError, match=message):
        normalize_date(raw)


def test_digits() -> None:
    assert normalize_digits("12345 67890 12345 67890") == "12345678901234567890"
    assert normalize_digits("０４４００１９００１１１") == "044001900111"
    assert normalize_digits(" 00123 ") == "00123"
    # the numero sign the national form prints before the number, read with it
    assert normalize_digits("№ 34276679") == normalize_digits("No.34276679") == "34276679"


@pytest.mark.parametrize(("raw", "bad"), [("N034276679", "N"), ("3427No6679", "No")])
def test_a_numero_sign_only_in_front_and_whole(raw: str, bad: str) -> None:
    with pytest.raises(FieldValueError, match=f"non-digit characters: '{bad}'"):
        normalize_digits(raw)


@pytest.mark.parametrize(
    ("raw", "bad"), [("12O45", "O"), ("12-45", "-"), ("1.5", "."), ("一二", "一二")]
)
def test_bad_digits(raw: str, bad: str) -> None:
    with pytest.raises(FieldValueError, match=f"non-digit characters: '{bad}'"):
        normalize_digits(raw)


def test_tax_id() -> None:
    assert normalize_tax_id(" 91350100m000100y43 ") == "91350100M000100Y43"
    assert normalize_tax_id("９１５１２０８１ＭＡ６２Ｋ０２６０Ｅ") == "91512081MA62K0260E"
    assert normalize_tax_id("9135 0100 M000 100Y 43") == "91350100M000100Y43"
    with pytest.raises(FieldValueError, match="empty"):
        normalize_tax_id("   ")


def test_text_keeps_full_width_brackets_and_collapses_spaces() -> None:
    assert (
        normalize_text("  深圳市某某科技有限公司（南山分公司） ")
        == "深圳市某某科技有限公司（南山分公司）"
    )
    assert normalize_text("ABC \t  Trading\u3000 Co.") == "ABC Trading Co."
    assert normalize_text("Ａ１") == "Ａ１"  # no NFKC
    with pytest.raises(FieldValueError, match="empty"):
        normalize_text(" \n ")


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("深圳市云腾电子商务服务中心(有限合伙)", "深圳市云腾电子商务服务中心（有限合伙）"),
        ("利力安鑫服务中心（有限合伙)", "利力安鑫服务中心（有限合伙）"),
        ("苹果电子产品商贸(北京)有限公司", "苹果电子产品商贸（北京）有限公司"),
        ("ABB(China)有限公司", "ABB(China)有限公司"),  # Latin words: half-width
        ("ABB（China）有限公司", "ABB(China)有限公司"),
        ("汇丰银行（中国(上海)）分行", "汇丰银行（中国（上海））分行"),
        ("某某商贸有限公司(", "某某商贸有限公司（"),  # unpaired: by its neighbour
        (" 北京 (ABC) 科技 ", "北京(ABC)科技"),
        ("北京 益英创信 科技有限公司", "北京益英创信科技有限公司"),  # read across wide gaps
        ("张  三", "张三"),
        ("SAP Labs （北京） 有限公司", "SAP Labs（北京）有限公司"),  # Latin words keep theirs
        ("JOHN SMITH", "JOHN SMITH"),
    ],
)
def test_name_writes_brackets_as_a_registered_name_does(raw: str, name: str) -> None:
    assert normalize_name(raw) == name


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        (FieldKind.code, "normalize_digits"),
        (FieldKind.amount, "normalize_amount"),
        (FieldKind.amount_words, "normalize_amount_words"),
        (FieldKind.date, "normalize_date"),
        (FieldKind.tax_id, "normalize_tax_id"),
        (FieldKind.text, "normalize_text"),
        (FieldKind.name, "normalize_name"),
    ],
)
def test_kind_defaults(kind: FieldKind, name: str) -> None:
    assert get_normalizer(None, kind).__name__ == name


def test_named_normalizer_overrides_kind_and_unknown_name_fails() -> None:
    assert get_normalizer("digits", FieldKind.text) is normalize_digits
    with pytest.raises(ValueError, match=r"unknown normalizer 'money'.*amount_words"):
        get_normalizer("money", FieldKind.amount)
