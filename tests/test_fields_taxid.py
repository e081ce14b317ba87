import pytest

from extractor.fields import is_valid_uscc, tax_id_errors, uscc_check_char, uscc_error


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
    "code", ["110108123456789", "ABCDEFGHIJKLMNOPQRST", "44030019800101123X"[:15]]
)
def test_older_ids_have_no_check_digit(code: str) -> None:
    assert tax_id_errors(code) == []
    assert not is_valid_uscc(code)


def test_older_ids_must_be_alphanumeric() -> None:
    assert tax_id_errors("11010812345-789") == [
        "a 15-character taxpayer id holds only 0-9 and A-Z, found '-'"
    ]


@pytest.mark.parametrize("length", [0, 14, 16, 17, 19, 21])
def test_other_lengths_are_errors(length: int) -> None:
    errors = tax_id_errors("1" * length)
    assert errors == [f"a taxpayer id is 18 characters (or 15/20 for older ids), got {length}"]
