import pytest

from extractor.fields import NAMED_CHARSETS, resolve_allowlist
from extractor.templates import FieldKind


def test_named_charsets_hold_what_their_fields_print() -> None:
    assert NAMED_CHARSETS["digits"] == "0123456789"
    assert set(NAMED_CHARSETS["amount"]) == set("0123456789.,¥￥-")
    assert set(NAMED_CHARSETS["date"]) == set("0123456789年月日-./")
    assert set(NAMED_CHARSETS["tax_id"]) == set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert NAMED_CHARSETS["uscc"] == "0123456789ABCDEFGHJKLMNPQRTUWXY"
    assert not set("IOSVZ") & set(NAMED_CHARSETS["uscc"])
    assert set("零壹贰叁肆伍陆柒捌玖拾佰仟万亿元圆角分整正⊗负数()（）") == set(
        NAMED_CHARSETS["amount_words"]
    )
    assert set("aZ09") <= set(NAMED_CHARSETS["alnum"])


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (FieldKind.code, "digits"),
        (FieldKind.amount, "amount"),
        (FieldKind.date, "date"),
        (FieldKind.tax_id, "tax_id"),
        (FieldKind.amount_words, "amount_words"),
    ],
)
def test_none_picks_the_kinds_default(kind: FieldKind, expected: str) -> None:
    assert resolve_allowlist(None, kind) == NAMED_CHARSETS[expected]


def test_text_is_unconstrained_by_default() -> None:
    assert resolve_allowlist(None, FieldKind.text) is None


def test_a_name_wins_over_the_kind() -> None:
    assert resolve_allowlist("uscc", FieldKind.tax_id) == NAMED_CHARSETS["uscc"]
    assert resolve_allowlist("digits", FieldKind.text) == "0123456789"


def test_literal_characters_are_used_deduplicated_in_order() -> None:
    assert resolve_allowlist("0123456789X", FieldKind.code) == "0123456789X"
    assert resolve_allowlist("ABBA12", FieldKind.text) == "AB12"


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown charset name 'digit'") as info:
        resolve_allowlist("digit", FieldKind.code)
    for name in NAMED_CHARSETS:
        assert name in str(info.value)


def test_empty_allowlist_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        resolve_allowlist("", FieldKind.code)
