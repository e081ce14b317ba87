import pytest

from extractor.fields import FieldCheck, check_rules, check_value, holding_rules, unconfirmed
from extractor.templates import FieldKind, FieldSpec, SameRule, SumRule, Template, TemplateStore


@pytest.fixture(scope="module")
def vat() -> Template:
    return TemplateStore().get("vat_invoice")


def _spec(**kw: object) -> FieldSpec:
    return FieldSpec.model_validate({"name": "f", "box": [0, 0, 10, 5], **kw})


GOOD = {
    "invoice_code": "044001900111",
    "invoice_number": "12345678",
    "issue_date": "2024-05-12",
    "check_code": "12345678901234567890",
    "buyer_name": "深圳市某某科技有限公司",
    "buyer_tax_id": "91350100M000100Y43",
    "amount": "1000.00",
    "tax": "130.00",
    "total_in_words": "1130.00",
    "total": "1130.00",
    "seller_name": "某某贸易（上海）有限公司",
    "seller_tax_id": "91512081MA62K0260E",
}


@pytest.mark.parametrize(
    ("field", "raw", "value"),
    [
        ("invoice_code", "0440 0190 0111", "044001900111"),
        ("invoice_number", "1234 5678", "12345678"),
        ("issue_date", "2024年05月12日", "2024-05-12"),
        ("check_code", "12345 67890 12345 67890", "12345678901234567890"),
        ("buyer_name", " 深圳市某某科技有限公司 ", "深圳市某某科技有限公司"),
        ("buyer_tax_id", "91350100m000100y43", "91350100M000100Y43"),
        ("seller_tax_id", "350100M000100Y4", "350100M000100Y4"),
        ("amount", "¥1,000.00", "1000.00"),
        ("tax", "￥130", "130.00"),
        ("total_in_words", "⊗壹仟壹佰叁拾元整", "1130.00"),
        ("total", "¥1130.00", "1130.00"),
    ],
)
def test_good_values(vat: Template, field: str, raw: str, value: str) -> None:
    assert check_value(vat.field(field), raw) == FieldCheck(value, [])


def test_wrong_uscc_check_digit_keeps_the_value(vat: Template) -> None:
    result = check_value(vat.field("seller_tax_id"), "91350100M000100Y44")
    assert result.value == "91350100M000100Y44"
    assert result.errors == ["check digit is 4, expected 3"]
    assert not result.ok


def test_tax_id_of_wrong_length(vat: Template) -> None:
    result = check_value(vat.field("buyer_tax_id"), "9135010OM00")
    assert result.value == "9135010OM00"
    assert result.errors == ["a taxpayer id is 18 characters (or 15/20 for older ids), got 11"]


def test_regex_is_checked_on_the_normalised_value(vat: Template) -> None:
    result = check_value(vat.field("invoice_code"), "1234 5678 901")
    assert result.value == "12345678901"
    assert result.errors == [r"does not match ^(\d{10}|\d{12})$"]


@pytest.mark.parametrize(
    "code",
    [
        "044001900111",  # Guangdong, 2019, an electronic 普票
        "044031900111",  # Shenzhen, separately listed
        "035022300304",  # Xiamen, separately listed
        "011002000104",  # Beijing
        "3200172130",  # a 10-digit 专票 code, Jiangsu
        "2102153320",  # Dalian
    ],
)
def test_invoice_codes_of_tax_bureaus_pass(vat: Template, code: str) -> None:
    assert check_value(vat.field("invoice_code"), code) == FieldCheck(code, [])


@pytest.mark.parametrize(
    ("code", "region"),
    [
        ("035622360304", "3562 (digits 2-5)"),  # 3502 with a 0 read 6 (fresh heavy 20277022)
        ("044071900111", "4407 (digits 2-5)"),  # a city of Guangdong: its province's bureau
        ("094001900111", "9400 (digits 2-5)"),  # no province starts 94
        ("3206172130", "3206 (digits 1-4)"),
    ],
)
def test_invoice_code_whose_region_no_bureau_issues_fails(
    vat: Template, code: str, region: str
) -> None:
    result = check_value(vat.field("invoice_code"), code)
    assert result.value == code
    assert [error.split(" is no ")[0] for error in result.errors] == [f"its region {region}"]
    # the second print, small at the corner, is checked alike; other codes are not
    assert check_value(vat.field("invoice_code").again(), code).errors == result.errors
    assert check_value(vat.field("invoice_number"), code[-8:]).errors == []


@pytest.mark.parametrize("kind", ["04", "05", "06", "07", "11", "12", "13"])
def test_a_12_digit_code_ends_in_a_kind_of_vat_invoice(vat: Template, kind: str) -> None:
    assert check_value(vat.field("invoice_code"), f"0370219002{kind}").errors == []


def test_a_12_digit_code_ending_in_no_kind_fails(vat: Template) -> None:
    """037021900204 read 037021900284 (blue dot-matrix ink, heavy 20278006): 84 ends no VAT
    invoice's code; a 10-digit code's last two say nothing (its kind is its 8th digit)."""
    (error,) = check_value(vat.field("invoice_code"), "037021900284").errors
    assert error.startswith("its kind 84 (digits 11-12) is none a VAT invoice's")
    assert check_value(vat.field("invoice_code"), "3700193184").errors == []
    both = check_value(vat.field("invoice_code"), "037621900284").errors
    assert [e.split(" (")[0] for e in both] == ["its region 3762", "its kind 84"]


def test_a_12_digit_code_starts_with_0(vat: Template) -> None:
    """037001662311 read 937001662311 by the fallback (an e-invoice on an A4 sheet, photographed:
    fresh geometry 20291020): a 12-digit VAT invoice code's first digit is 0. A 10-digit code
    starts with its region."""
    (error,) = check_value(vat.field("invoice_code"), "937001662311").errors
    assert error.startswith("its first digit is 9, a 12-digit code's is 0")
    assert check_value(vat.field("invoice_code"), "037001662311").errors == []
    assert check_value(vat.field("invoice_code"), "3700193184").errors == []


def test_a_code_naming_forms_printed_years_from_now_fails(vat: Template) -> None:
    """041002000204 read 041002900204 by the fallback (worn ribbon, heavy 20292007): forms
    printed in 2029. A code's year digits name when its forms were printed; a year ahead at most
    (printed for the next year), never more: the check reads this machine's clock, so the
    code here names 2049. The same for a 数电票's number, which names the year it was issued."""
    (error,) = check_value(vat.field("invoice_code"), "041004900204").errors
    assert error.startswith("its year 49 (digits 6-7) names forms printed in 2049")
    (error,) = check_value(vat.field("invoice_code"), "3200492130").errors
    assert error.startswith("its year 49 (digits 5-6)")
    assert check_value(vat.field("invoice_code"), "041002000204").errors == []
    spec = TemplateStore().get("vat_invoice_digital").field("invoice_number")
    (error,) = check_value(spec, "49441000000320341899").errors
    assert error.startswith("its year 49 (digits 1-2) is after this year")


def test_a_digital_numbers_digits_3_4_name_a_province() -> None:
    """A 数电票's 20-digit number: year, province, channel, sequence. 24441000000320341899
    passes; its 44 read 94 names no province. An 8-digit national number is not checked."""
    spec = TemplateStore().get("vat_invoice_digital").field("invoice_number")
    assert check_value(spec, "24441000000320341899").errors == []
    (error,) = check_value(spec, "24941000000320341899").errors
    assert error == "its province 94 (digits 3-4) is none: a digit misread"
    national = spec.model_copy(update={"regex": None})
    assert check_value(national, "46894924").errors == []


def test_an_issue_date_after_today_fails(vat: Template) -> None:
    """No invoice is issued ahead of its day: 2073 read for 2023 fails on the issue date (a
    day's slack for time zones); a date field the template does not name so may lie ahead."""
    import datetime as dt

    today = dt.date.today()
    spec = vat.field("issue_date")
    assert spec.check == "issue_date"
    for ahead, errors in ((0, 0), (1, 0), (2, 1), (365 * 50, 1)):
        day = (today + dt.timedelta(days=ahead)).isoformat()
        checked = check_value(spec, day)
        assert len(checked.errors) == errors, (day, checked.errors)
    (error,) = check_value(spec, "2073-11-12").errors
    assert error == f"2073-11-12 is after today ({today}): no invoice is issued ahead of its day"
    due = spec.model_copy(update={"check": None})
    assert check_value(due, "2073-11-12").errors == []


def test_normalisation_failure_returns_the_stripped_raw(vat: Template) -> None:
    assert check_value(vat.field("issue_date"), " 2024年02月30日 ") == FieldCheck(
        "2024年02月30日", ["2024-02-30 is not a calendar date"]
    )
    assert check_value(vat.field("invoice_number"), "1234S678") == FieldCheck(
        "1234S678", ["non-digit characters: 'S'"]
    )
    result = check_value(vat.field("total_in_words"), "壹仟壹佰叁拾元")
    assert result.value == "壹仟壹佰叁拾元"
    assert result.errors == ["an amount with no 角/分 ends in 元整"]


def test_empty_raw_depends_on_required(vat: Template) -> None:
    assert vat.field("invoice_code").required
    assert check_value(vat.field("invoice_code"), "  ") == FieldCheck(None, ["empty"])
    assert not vat.field("check_code").required
    assert check_value(vat.field("check_code"), "") == FieldCheck(None, [])


def test_explicit_normalizer_overrides_the_kind() -> None:
    spec = _spec(kind="text", normalizer="digits")
    assert check_value(spec, "12 34") == FieldCheck("1234", [])


def test_kind_validator_runs_after_another_normalizer() -> None:
    code_as_text = _spec(kind="code", normalizer="text")
    assert check_value(code_as_text, "12 A4") == FieldCheck("12 A4", ["'12 A4' is not all digits"])
    amount_as_text = _spec(kind="amount", normalizer="text")
    assert check_value(amount_as_text, "12.5").errors == ["'12.5' is not an amount with 2 decimals"]
    date_as_digits = _spec(kind=FieldKind.date, normalizer="digits")
    assert check_value(date_as_digits, "20240512").errors == ["'20240512' is not a YYYY-MM-DD date"]


def test_validator_and_regex_errors_accumulate() -> None:
    spec = _spec(kind="tax_id", regex=r"^9.*$")
    assert check_value(spec, "81350100M000100Y43").errors == [
        "check digit is 3, expected 4",
        "does not match ^9.*$",
    ]


def test_unknown_normalizer_is_a_template_error() -> None:
    with pytest.raises(ValueError, match="unknown normalizer 'money'"):
        check_value(_spec(normalizer="money"), "1")


def test_rules_pass_on_a_consistent_invoice(vat: Template) -> None:
    assert check_rules(vat, GOOD) == {}


def test_total_that_does_not_add_up(vat: Template) -> None:
    values = {**GOOD, "total": "1300.00", "total_in_words": "1300.00"}
    message = "amount + tax = 1130.00 but total is 1300.00"
    assert check_rules(vat, values) == {"amount": [message], "tax": [message], "total": [message]}


def test_words_and_figures_mismatch(vat: Template) -> None:
    values = {**GOOD, "total_in_words": "1103.00"}
    message = "total_in_words and total differ: 1103.00 vs 1130.00"
    assert check_rules(vat, values) == {"total_in_words": [message], "total": [message]}


def test_both_rules_fail_on_the_total(vat: Template) -> None:
    values = {**GOOD, "total": "1131.00"}
    errors = check_rules(vat, values)
    assert errors["total"] == [
        "amount + tax = 1130.00 but total is 1131.00",
        "total_in_words and total differ: 1130.00 vs 1131.00",
    ]
    assert set(errors) == {"amount", "tax", "total", "total_in_words"}


def test_sum_is_compared_to_the_cent(vat: Template) -> None:
    # the sum holds to the cent; the words rule compares exact values and fails
    message = "total_in_words and total differ: 1130.00 vs 1130.004"
    assert check_rules(vat, {**GOOD, "total": "1130.004"}) == {
        "total_in_words": [message],
        "total": [message],
    }
    off_by_a_cent = check_rules(vat, {**GOOD, "total": "1130.01", "total_in_words": "1130.01"})
    assert off_by_a_cent["amount"] == ["amount + tax = 1130.00 but total is 1130.01"]


def test_same_rule_compares_decimals_numerically(vat: Template) -> None:
    assert check_rules(vat, {**GOOD, "total_in_words": "1130", "total": "1130.00"}) == {}


def test_rules_with_missing_or_unparseable_values_are_skipped(vat: Template) -> None:
    assert check_rules(vat, {**GOOD, "tax": None, "total_in_words": None, "total": "9"}) == {}
    assert check_rules(vat, {**GOOD, "amount": "壹仟元整", "total_in_words": "9.00"}) == {
        "total_in_words": ["total_in_words and total differ: 9.00 vs 1130.00"],
        "total": ["total_in_words and total differ: 9.00 vs 1130.00"],
    }
    values = dict(GOOD)
    del values["total"]
    assert check_rules(vat, values) == {}


def test_same_rule_on_strings() -> None:
    template = Template.model_validate(
        {
            "name": "t",
            "page": {"width_mm": 100, "height_mm": 100},
            "fields": [
                {"name": "a", "box": [0, 0, 10, 5]},
                {"name": "b", "box": [0, 10, 10, 5]},
                {"name": "c", "box": [0, 20, 10, 5]},
            ],
            "rules": [{"rule": "same", "fields": ["a", "b", "c"]}],
        }
    )
    assert isinstance(template.rules[0], SameRule)
    assert check_rules(template, {"a": "X公司", "b": "X公司", "c": "X公司"}) == {}
    message = "a, b and c differ: X公司 vs X公司 vs Y公司"
    assert check_rules(template, {"a": "X公司", "b": "X公司", "c": "Y公司"}) == {
        "a": [message],
        "b": [message],
        "c": [message],
    }
    # all numbers: compared as Decimals; otherwise as strings
    assert check_rules(template, {"a": "1.0", "b": "1.00", "c": "1"}) == {}
    assert check_rules(template, {"a": "1.0", "b": "1.00", "c": "x"})["a"] == [
        "a, b and c differ: 1.0 vs 1.00 vs x"
    ]


def test_sum_rule_with_three_terms() -> None:
    template = Template.model_validate(
        {
            "name": "t",
            "page": {"width_mm": 100, "height_mm": 100},
            "fields": [{"name": n, "box": [0, i * 10, 10, 5]} for i, n in enumerate("abcd")],
            "rules": [{"rule": "sum", "terms": ["a", "b", "c"], "equals": "d"}],
        }
    )
    assert isinstance(template.rules[0], SumRule)
    assert check_rules(template, {"a": "0.10", "b": "0.20", "c": "-0.05", "d": "0.25"}) == {}
    assert check_rules(template, {"a": "1", "b": "2", "c": "3", "d": "7"})["d"] == [
        "a + b + c = 6.00 but d is 7.00"
    ]


@pytest.mark.parametrize(
    ("raw", "ok"),
    [
        ("10106MAX70GFJ87", False),  # a tax id read in the name's box
        ("91410105MAWXG6R86B", False),
        ("12345678", False),
        ("1243016", False),  # too short for an id, but no letter: not a name
        ("（）", False),
        ("郑州辰盛润禾物业管理有限责任公司", True),
        ("IBM", True),
        ("Apple Inc", True),
        ("北京3M中国有限公司", True),
        ("上海旭华宝环保科技股份有限公司旭91310101MA9HPTT84C", False),  # a tax id glued on
        ("北京798艺术区管理有限公司", True),
        ("郑州市金水区农业路384号21层13259757032", False),  # the address-and-phone line
        ("深圳市ABC123456789012科技有限公司", False),  # a long number is an account or phone
        ("开户行度", False),  # the bank label below the name
        ("春：武汉毅昌电子有限公司", False),  # 称： misread: a colon ends a label
        ("毅创业酒店管理（福州）有限公", False),  # a line found a character short
        ("长沙越科餐饮管理有限", False),
        ("中国建设银行股份有限公司长沙分公", False),
        ("重庆海新东联医药股", False),
        ("重庆海新东联医药股份", False),
        ("福州鼎晟餐饮管理有限责", False),
        ("重庆海新控股集团", True),
        ("厦门国际银行股份有限公司", True),
        ("华东医药合伙企业（有限合伙）", True),
        ("达航丰工汽车销售服务福州）有限公司", False),  # its opening bracket lost under a mark
        ("达航丰工汽车销售服务（福州有限公司", False),
        ("达航丰工汽车销售服务）福州（有限公司", False),
        ("达航丰工汽车销售服务（福州）有限公司", True),
        ("中国（上海）自由贸易试验区（临港）管理有限公司", True),
        ("大连市沙河口区第一中学210", False),  # the tax id below run into a bent page's crop
        ("大连市沙河口区第一中学210204MA", False),
        ("大连市沙河口区第一中学", True),
        ("陆佰叁拾玖元贰角玖分", False),  # the total in words, printed above the seller's row
        ("⊗壹佰肆拾叁元玖角陆分", False),
        ("万达商业管理集团有限公司", True),  # everyday numerals and 万 are a name's
        ("壹号餐饮管理有限公司", True),
        ("买", False),  # one character: the label 购买方's, never a name
        ("公司", False),  # a legal form alone: the name's words before it lost
        ("有限公司", False),
        ("集团", False),
        ("中信集团", True),
        ("东方公司", True),
        ("李明", True),
        ("北京分众传媒有限公司北京分公司", True),  # a branch's name goes on past the legal form
        ("北京银行股份有限公司北京分行", True),
        ("顺祥科技有限公司上海分公司", True),
    ],
)
def test_a_name_is_not_an_identifier(vat: Template, raw: str, ok: bool) -> None:
    check = check_value(vat.field("buyer_name"), raw)
    assert check.ok is ok and check.value == raw


def test_a_name_read_with_brackets_of_either_width_is_given_as_registered(vat: Template) -> None:
    check = check_value(vat.field("buyer_name"), "达航丰工汽车销售服务(福州）有限公司")
    assert check.ok and check.value == "达航丰工汽车销售服务（福州）有限公司"


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("青岛博祥乾贸易有限公司乾贸易有", "青岛博祥乾贸易有限公司"),
        ("航辰印务有限公司印3", "航辰印务有限公司"),
        ("科伟联方文化传媒（温州）有限公司化传媒（温州）", "科伟联方文化传媒（温州）有限公司"),
    ],
)
def test_a_seals_text_read_past_a_name_is_left_out_in_doubt(
    vat: Template, raw: str, value: str
) -> None:
    """The seller's seal prints the name around its rim and the tax id across it; on a
    black-and-white scan it is as black as the print, and read on after the name."""
    check = check_value(vat.field("seller_name"), raw)
    assert check.value == value and len(check.errors) == 1 and "seal" in check.errors[0]


@pytest.mark.parametrize(
    ("raw", "value", "left_out"),
    [
        ("杭州云润天晨环保科技有限公司3", "杭州云润天晨环保科技有限公司", 1),  # medium 20274006
        ("新创安海装饰工程有限公司郑州分公司6", "新创安海装饰工程有限公司郑州分公司", 1),
        ("上海益航3", "上海益航3", 0),  # words that end as no name does: not told a stray mark
        ("北京798艺术区A", "北京798艺术区A", 0),
    ],
)
def test_a_mark_read_after_a_names_end_is_left_out(
    vat: Template, raw: str, value: str, left_out: int
) -> None:
    """The top of the tax id printed below a name, or a speck, read as one digit after it: no
    name goes on after its legal form, so it is left out with a note, its doubt not counted."""
    check = check_value(vat.field("seller_name"), raw)
    assert (check.value, check.errors, check.left_out) == (value, [], left_out)
    assert (check.note is not None) == bool(left_out)


def test_implied_values_of_the_sum_and_same_rules(vat: Template) -> None:
    from extractor.fields import implied_values

    values = {"amount": "5491.05", "tax": "494.19", "total": "598524.00", "total_in_words": None}
    total_rule, words_rule = vat.rules
    assert implied_values(total_rule, values) == {
        "total": "5985.24",
        "amount": "598029.81",
        "tax": "593032.95",
    }
    assert implied_values(words_rule, values) == {"total_in_words": "598524.00"}
    # a term is never implied negative or from a missing value
    assert implied_values(total_rule, {"amount": "9000.00", "tax": None, "total": "10.00"}) == {}


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("称：宁波业恒人力资源服务有限公司", "宁波业恒人力资源服务有限公司"),  # the label's end
        ("名称:宁波业恒人力资源服务有限公司", "宁波业恒人力资源服务有限公司"),
        ("：宁波业恒人力资源服务有限公司", "宁波业恒人力资源服务有限公司"),
        # no colon: the print lies over it (a name printed a few millimetres left, on a
        # black-and-white scan where the label is as black as the print)
        ("称宁波业恒人力资源服务有限公司", "宁波业恒人力资源服务有限公司"),
        ("号91330212551569121B", "91330212551569121B"),
        ("（小写）¥106.00", "106.00"),
        ("(小写)￥106.00", "106.00"),  # brackets of either width are the label's
        ("写)¥106.00", "106.00"),
    ],
)
def test_the_end_of_a_printed_label_is_not_part_of_the_value(
    vat: Template, raw: str, value: str
) -> None:
    by_start = {"号": "buyer_tax_id", "称": "buyer_name", "名": "buyer_name", "：": "buyer_name"}
    check = check_value(vat.field(by_start.get(raw[0], "total")), raw)
    assert check.value == value


def test_a_value_that_is_only_its_label_is_empty(vat: Template) -> None:
    assert check_value(vat.field("buyer_name"), "名称：").errors == ["empty"]


@pytest.mark.parametrize("raw", ["12345678", "ABC12345", "（）"])
def test_plain_text_takes_anything(raw: str) -> None:
    assert check_value(_spec(kind="text"), raw).ok


# -- what the rules vouch for -------------------------------------------------------------------

VAT = TemplateStore().get("vat_invoice")
AMOUNTS = {"amount": "4513.27", "tax": "586.73", "total": "5100.00", "total_in_words": "5100.00"}


def test_holding_rules_need_every_value_and_a_number_for_a_sum() -> None:
    assert len(holding_rules(VAT, AMOUNTS)) == 2
    assert holding_rules(VAT, {**AMOUNTS, "tax": "68.3A"}) == [VAT.rules[1]]
    assert holding_rules(VAT, {**AMOUNTS, "total_in_words": None}) == [VAT.rules[0]]
    assert holding_rules(VAT, {**AMOUNTS, "amount": "453.27"}) == [VAT.rules[1]]


def test_an_amount_no_rule_could_check_is_unconfirmed() -> None:
    """A blurred photo: the amount lost a digit, the total and the words are unreadable. Any
    number passes as an amount; only the sum could have caught it."""
    values = {**AMOUNTS, "amount": "453.27", "total": None, "total_in_words": None}
    why = unconfirmed(VAT, values, flagged={"total", "total_in_words"})
    assert set(why) == {"amount", "tax"}
    assert why["amount"] == "not cross-checked: total flagged"


def test_a_rule_that_holds_with_a_flagged_value_still_vouches() -> None:
    # the sum fails (the tax is misread), but the words state the total: both are confirmed
    values = {**AMOUNTS, "tax": "586.78"}
    assert unconfirmed(VAT, values, flagged={"amount", "tax", "total"}) == {}
    assert unconfirmed(VAT, {**values, "total_in_words": "5100.01"}, {"tax"}) == {
        "amount": "not cross-checked: tax flagged",
        "total": "not cross-checked: tax flagged",
    }


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("914419004035343224914419004035343224", "914419004035343224"),  # the seal's, whole
        ("9111010174465637983798", "911101017446563798"),  # its end
        ("913401046917158567913401046917158557", "913401046917158567"),  # a character off
        ("914419004035343224 13800138000", None),  # another line's number: not the seal's
        ("91350102MA247JT099135010", None),  # the id's own last character lost: its check fails
    ],
)
def test_a_seals_tax_id_read_after_the_printed_one_is_left_out(
    vat: Template, raw: str, value: str | None
) -> None:
    """The seller's seal prints its tax id across its middle; on a black-and-white scan it is
    read on after the printed id. An 18-character id that passes its check character, followed
    by what shares four characters in a row with it, is the id (and the note says what was left
    out); anything else stays the reading, flagged."""
    check = check_value(vat.field("seller_tax_id"), raw)
    if value is None:
        assert check.errors and check.note is None
    else:
        assert (check.value, check.errors) == (value, []) and check.note


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("济南锦业睿凱智能装备有限公司", "济南锦业睿凯智能装备有限公司"),
        ("順祥科技有限公司上海分公司", "顺祥科技有限公司上海分公司"),
        ("青岛博祥乾贸易有限公司", None),  # 乾 is a simplified character of names too
        ("北京阳凯环保科技有限公司", None),
    ],
)
def test_a_name_read_with_traditional_forms_is_given_in_simplified_in_doubt(
    vat: Template, raw: str, value: str | None
) -> None:
    """A mainland company is registered in simplified characters; the recogniser knows both and
    answers 凱 for a blurred 凯 (bold dot-matrix print), sure of itself."""
    check = check_value(vat.field("seller_name"), raw)
    if value is None:
        assert (check.value, check.errors) == (raw, [])
    else:
        assert check.value == value and len(check.errors) == 1
        assert "traditional" in check.errors[0]


def test_a_tax_printed_as_stars_is_none_with_a_note(vat: Template) -> None:
    """A sale exempt from tax (免税) prints *** as its tax; the total is then the amount."""
    check = check_value(vat.field("tax"), "***")
    assert check.ok and check.value == "0.00" and check.note is not None and "免税" in check.note
    assert check_value(vat.field("tax"), "¥12.30").note is None
    assert not check_value(vat.field("amount"), "***").ok  # only the tax may be stars
