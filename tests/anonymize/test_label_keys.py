"""Label keys: the policy file of keys that name PI, how a key matches it, and which keys
are field names (never scanned for names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.anonymize.config import AnonymizeConfig
from components.anonymize.factory import known_info_types, pi_label_keys
from components.anonymize.label_keys import is_field_name, key_words, read_pi_label_keys
from components.core.errors import InputError

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED = pi_label_keys(AnonymizeConfig(), REPO_ROOT)
KNOWN = known_info_types(AnonymizeConfig())


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("billingZipCode", ("billing", "zip", "code")),
        ("billing_zip_code", ("billing", "zip", "code")),
        ("BILLING-ZIP-CODE", ("billing", "zip", "code")),
        ("DOB", ("dob",)),
        ("acct2", ("acct", "2")),
        ("date of birth", ("date", "of", "birth")),
    ],
)
def test_a_key_is_read_as_its_words(key: str, words: tuple[str, ...]) -> None:
    assert key_words(key) == words


@pytest.mark.parametrize(
    ("key", "info_type"),
    [
        ("pin", "GENERIC_ID"),
        ("card_pin", "GENERIC_ID"),
        ("zip", "LOCATION"),
        ("zipCode", "LOCATION"),
        ("postcode", "LOCATION"),
        ("lat", "LOCATION"),
        ("lng", "LOCATION"),
        ("dob", "DATE_OF_BIRTH"),
        ("caller_date_of_birth", "DATE_OF_BIRTH"),
        ("account", "FINANCIAL_ACCOUNT_NUMBER"),
        ("ACCOUNT_NUMBER", "FINANCIAL_ACCOUNT_NUMBER"),
        ("iban", "IBAN_CODE"),
        # words that merely contain or begin with an entry name no PI
        ("spin", None),
        ("pin_set", None),
        ("account_type", None),
        ("latency", None),
        ("geo", None),
        ("dobby", None),
        ("page", None),
    ],
)
def test_a_key_names_pi_when_its_last_words_are_an_entry(key: str, info_type: str | None) -> None:
    assert SHIPPED.info_type(key) == info_type


def test_the_innermost_key_that_names_pi_gives_a_values_type() -> None:
    assert SHIPPED.value_type("crm", ("contact", "zip")) == "LOCATION"
    assert SHIPPED.value_type("dob", ("year",)) == "DATE_OF_BIRTH"
    assert SHIPPED.value_type("coordinates", (0,)) == "LOCATION"
    assert SHIPPED.value_type("crm", ("contact", 0, "visits")) is None


@pytest.mark.parametrize(
    ("key", "field_name"),
    [
        ("geo", True),
        ("caller_name", True),
        ("zipCode", True),
        ("ZIP_CODE", True),
        ("acct_12345", True),
        ("acct_4155550123", False),  # an identifier's digits
        ("maria.gonzalez@example.com", False),
        ("Maria Gonzalez", False),
        ("Maria", False),
        ("4155550123", False),
        ("jane doe", False),
    ],
)
def test_a_field_name_is_told_from_a_key_that_is_text(key: str, field_name: bool) -> None:
    assert is_field_name(key) is field_name


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("- pin\n", "a mapping of info type"),
        ("GENERIC_ID: pin\n", "GENERIC_ID: a list of label keys"),
        ("GENERIC_ID: [pin, 3]\n", "GENERIC_ID: a list of label keys"),
        ("PIN_CODE: [pin]\n", "PIN_CODE: not an info type veiltune knows"),
        ("generic: [pin]\n", "'generic': an info type name"),
        ("GENERIC_ID: [pin]\nLOCATION: [PIN]\n", "LOCATION: 'PIN' is listed twice"),
        ("GENERIC_ID: [pin\n", "not a YAML file of PI label keys"),
    ],
)
def test_a_bad_policy_file_is_one_error_naming_it(
    tmp_path: Path, document: str, *, message: str
) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text(document)
    with pytest.raises(InputError, match=f"keys.yaml: {message}"):
        read_pi_label_keys(path, KNOWN)
    with pytest.raises(InputError, match="no such file of PI label keys"):
        read_pi_label_keys(tmp_path / "missing.yaml", KNOWN)


def test_null_turns_the_keys_off() -> None:
    config = AnonymizeConfig(pi_label_keys=None)
    assert pi_label_keys(config, REPO_ROOT).info_type("pin") is None
    assert "veiltune/policy/pi_label_keys.yaml" in AnonymizeConfig().policy_files()
    assert "veiltune/policy/pi_label_keys.yaml" not in config.policy_files()
