import pytest

from extractor.fields import check_value, is_valid_uscc, tax_id_errors, uscc_check_char, uscc_error
from extractor.fields.taxid import ID_CARD_WEIGHTS, org_check_char
from extractor.templates import TemplateStore


@pytest.mark.parametrize("code", ["91350100M000100Y43", "91512081MA62K0260E"])
def test_valid_uscc(code: str) -> None:
    assert uscc_check_char(code[:17]) == code[17]
    assert is_valid_uscc(code)
    assert uscc_error(code) is None
    assert tax_id_errors(code) == []


def test_check_char_can_be_a_letter_and_zero() -> None:
    assert uscc_check_char("91512081MA62K0260") == "E"
    # the (31 - 0) % 31 == 0 branch: an all-zero body has check char "0"
    assert uscc_check_char("0" * 17) == "0"


def test_wrong_check_digit_names_the_expected_one() -> None:
    assert not is_valid_uscc("91350100M000100Y44")
    assert uscc_error("91350100M000100Y44") == "check digit is 4, expected 3"
    assert tax_id_errors("91512081MA62K0260F") == ["check digit is F, expected E"]


def test_every_single_character_change_is_caught() -> None:
    code = "91512081MA62K0260E"
    charset = "0123456789ABCDEFGHJKLMNPQRTUWXY"
    for i in range(18):
        for ch in charset:
            if ch != code[i]:
                assert not is_valid_uscc(code[:i] + ch + code[i + 1 :]), (i, ch)


def test_letters_outside_the_uscc_charset() -> None:
    assert uscc_error("91350100M000100I43") == (
        "character 'I' at position 16 is not allowed in a USCC"
    )
    with pytest.raises(ValueError, match="'O' at position 1"):
        uscc_check_char("O1350100M000100Y4")
    with pytest.raises(ValueError, match="17 characters"):
        uscc_check_char("9135")


@pytest.mark.parametrize(
    "code",
    [
        "350100M000100Y4",  # area code + organisation code (that of 91350100M000100Y43)
        "512081MA62K0260",
        "110108800101123",  # area code + an old identity card's YYMMDD and sequence
        "11010519491231002X01",  # an identity card number (GB 11643's example) + 2 digits
    ],
)
def test_older_ids_are_checked_where_they_carry_a_check(code: str) -> None:
    assert tax_id_errors(code) == []
    assert not is_valid_uscc(code)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("110108123456789", "organisation code 123456789 fails its check (an id read short?)"),
        ("91350102515373949Y"[3:], "organisation code"),  # a USCC cut
        ("12081MA62K0260E", "does not start an old taxpayer id"),  # 91512081MA62K0260E cut
        ("990100M000100Y4", "does not start an old taxpayer id"),  # no such province
    ],
)
def test_a_15_character_id_that_fails_its_checks_is_flagged(code: str, error: str) -> None:
    (problem,) = tax_id_errors(code)
    assert error in problem


def test_older_ids_must_be_alphanumeric() -> None:
    assert tax_id_errors("11010812345-789") == [
        "a 15-character taxpayer id holds only 0-9 and A-Z, found '-'"
    ]


@pytest.mark.parametrize("length", [0, 14, 16, 17, 19, 21])
def test_other_lengths_are_errors(length: int) -> None:
    errors = tax_id_errors("1" * length)
    assert errors == [f"a taxpayer id is 18 characters (or 15/20 for older ids), got {length}"]


def test_a_20_character_id_is_an_identity_card_number_and_two_digits() -> None:
    """A self-employed person's id: the identity card number (GB 11643's example,
    11010519491231002X) and a 2-digit sequence. A USCC with two characters more (a seal's
    digits read into it, medium/0035 folded) passed before: 20 characters had no check."""
    (cut,) = tax_id_errors("91310101MA9T84C31010")
    assert "does not start an identity card number" in cut
    (misread,) = tax_id_errors("11010519491231002301")
    assert "fails its check" in misread
    (no_date,) = tax_id_errors("11010519491331002X01")
    assert "no identity card number" in no_date


@pytest.mark.parametrize(
    ("code", "error"),
    [
        # 91330203735673169H misread in three places (a fallback reading of a heavy photo):
        # its check character holds, its division code 338293 names no prefecture 82.
        ("913382937356731690", "no prefecture 82 in a province"),
        ("91990100M000100Y4U", "no province 99"),
    ],
)
def test_a_uscc_whose_division_code_is_none_is_flagged(code: str, error: str) -> None:
    assert uscc_check_char(code[:17]) == code[17]
    (problem,) = tax_id_errors(code)
    assert problem == f"characters 3-8, {code[2:8]!r}, are no division code ({error})"


@pytest.mark.parametrize(
    "code",
    [
        "9110000010168558XU",  # registered nationally (a central enterprise): 100000
        "11100000MB0143612",  # a central government body
        "91469027MA5T1AB3G",  # a county Hainan administers directly (4690)
        "52652801MA7810K5P",  # an autonomous prefecture's (Bayingolin, 6528)
        "91445200MA4WQ0EM0",  # Jieyang, one of Guangdong's cities numbered 51-53
        "91660100MA78R2K1C",  # 66: the Xinjiang Production and Construction Corps, as some
        # national registries number it (not in GB/T 2260; accepted lest a real id be flagged)
    ],
)
def test_division_codes_of_every_kind_pass(code: str) -> None:
    if len(code) == 17:  # an organisation code's body: its check, then the USCC's
        code = code[:16] + org_check_char(code[8:16])
        code += uscc_check_char(code)
    assert tax_id_errors(code) == []


def test_a_uscc_whose_organisation_code_fails_its_check_is_flagged() -> None:
    """91110000100010433L misread in two places of its organisation code (0 -> 8 twice) so that
    the USCC's check character still holds: GB 11714's check on the organisation code breaks."""
    code = "91110000180610433L"
    assert uscc_check_char(code[:17]) == code[17]
    assert tax_id_errors(code) == [
        "characters 9-17, '180610433', fail the organisation code's check (GB 11714)"
    ]


@pytest.mark.parametrize(
    ("read", "printed"),
    [
        ("91330108MA2YA5YJ18", "91330108MA2YA5YJ1B"),  # B read 8 (fresh heavy photos)
        ("913501043959172770", "91350104395917277Q"),  # Q read 0
        ("913303022440342666", "91330302244034266G"),  # G read 6
        ("91330106040901612D", "913301060409016120"),  # and back: a 0 read D
    ],
)
def test_a_check_character_read_as_its_look_alike_is_taken_for_it(read: str, printed: str) -> None:
    from extractor.fields.taxid import look_alike_check_char

    assert tax_id_errors(read) and not tax_id_errors(printed)
    assert look_alike_check_char(read) == printed
    spec = TemplateStore().get("vat_invoice").field("buyer_tax_id")
    checked = check_value(spec, read)
    assert (checked.value, checked.errors) == (printed, [])
    assert (
        checked.note
        == f"check character read {read[-1]!r}, taken as {printed[-1]!r}: the two look alike"
    )


@pytest.mark.parametrize(
    "read",
    [
        "9137020205858669K3",  # 3 read, 4 expected: no look-alikes (its 0 read 8 in the body)
        "913383825218415930",  # 0 read, C expected: no look-alikes
        "91330108MA24A5YJ1B",  # B read, 8 expected, but 8 fails the organisation code's check:
        # its Y was read 4 (of the one-character misreads of 91330108MA2YA5YJ1B whose check
        # character would be 8, all but one fail a check of the division or organisation code)
        "91330108MA2YA5YJ1B",  # valid: nothing to take
    ],
)
def test_other_check_characters_are_left_as_read(read: str) -> None:
    from extractor.fields.taxid import look_alike_check_char

    assert look_alike_check_char(read) is None


def test_a_persons_identity_card_number_is_a_tax_id() -> None:
    """A person gives their identity card number as their tax id (an invoice to a person): 18
    characters that are no USCC but pass GB 11643's checks (its example 11010519491231002X).
    One misread fails both, and says so as a USCC would; a date of birth ahead of this year or
    before 1900 is none."""
    assert tax_id_errors("11010519491231002X") == []
    (misread,) = tax_id_errors("11010519491231062X")
    assert misread.startswith("check digit is X")
    for born in ("18991231", "21000101"):
        card = f"110105{born}002"
        total = sum(int(ch) * w for ch, w in zip(card, ID_CARD_WEIGHTS, strict=True))
        card += "10X98765432"[total % 11]
        assert tax_id_errors(card), card
