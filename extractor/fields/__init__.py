"""Field values: allowlists for recognition, normalisers, validators and cross-field rules."""

from extractor.fields.charsets import (
    BRACKETS,
    DECIMAL_POINTS,
    EXEMPT_MARK,
    LEADING_MARKS,
    NAMED_CHARSETS,
    USCC_CHARSET,
    ideograph,
    resolve_allowlist,
    value_start,
)
from extractor.fields.check import (
    FieldCheck,
    check_rules,
    check_value,
    holding_rules,
    implied_values,
    rule_fields,
    unconfirmed,
)
from extractor.fields.errors import FieldValueError
from extractor.fields.normalize import (
    NORMALIZERS,
    get_normalizer,
    normalize_amount,
    normalize_amount_words,
    normalize_date,
    normalize_digits,
    normalize_name,
    normalize_tax,
    normalize_tax_id,
    normalize_text,
)
from extractor.fields.persons import ends_as_a_name, person_name
from extractor.fields.taxid import is_valid_uscc, tax_id_errors, uscc_check_char, uscc_error
from extractor.fields.telling import telling, weakest
from extractor.fields.words import amount_to_words, parse_amount_words

__all__ = [
    "BRACKETS",
    "DECIMAL_POINTS",
    "EXEMPT_MARK",
    "LEADING_MARKS",
    "NAMED_CHARSETS",
    "NORMALIZERS",
    "USCC_CHARSET",
    "FieldCheck",
    "FieldValueError",
    "amount_to_words",
    "check_rules",
    "check_value",
    "ends_as_a_name",
    "get_normalizer",
    "holding_rules",
    "ideograph",
    "implied_values",
    "is_valid_uscc",
    "normalize_amount",
    "normalize_amount_words",
    "normalize_date",
    "normalize_digits",
    "normalize_name",
    "normalize_tax",
    "normalize_tax_id",
    "normalize_text",
    "parse_amount_words",
    "person_name",
    "resolve_allowlist",
    "rule_fields",
    "tax_id_errors",
    "telling",
    "unconfirmed",
    "uscc_check_char",
    "uscc_error",
    "value_start",
    "weakest",
]
