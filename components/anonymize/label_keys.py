"""What a label's keys say: a key that names personal information (``pin``, ``zip_code``,
``dob``) makes its value PI whatever it holds, and a key shaped like a field name (``geo``,
``caller_name``) is a name of the record's schema, not text to detect PI in.

The keys that name PI are policy: ``veiltune/policy/pi_label_keys.yaml`` (the file
``anonymize.pi_label_keys`` names), info type → keys.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.core.config import read_policy_yaml
from components.core.errors import InputError

# A key's words: camelCase humps, runs of capitals, runs of digits (separators dropped).
_KEY_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# A field name as schemas write them: snake_case, kebab-case, camelCase or UPPER_CASE,
# ASCII, starting with a letter. A key of another shape (an e-mail address, a person's
# "Maria Gonzalez", a number) is text and is scanned as such.
_FIELD_NAME = re.compile(r"[a-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*|[A-Z][A-Z0-9]*(?:[_-][A-Z0-9]+)*")
# A field name with this many digits may be an identifier (``acct_4155550123``): scanned.
_FIELD_NAME_MAX_DIGITS = 5
_INFO_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")
# The label positions of a value (see engine.TextField.path): dict keys and list indices.
PathPart = str | int


def key_words(key: str) -> tuple[str, ...]:
    """``billingZipCode`` / ``billing_zip_code`` / ``BILLING-ZIP-CODE`` → (billing, zip, code)."""
    return tuple(word.lower() for word in _KEY_WORD.findall(key))


def is_field_name(key: str) -> bool:
    """Whether a label key is shaped like a field name of a schema (never PI on its own)."""
    digits = sum(c.isdigit() for c in key)
    return digits <= _FIELD_NAME_MAX_DIGITS and _FIELD_NAME.fullmatch(key) is not None


@dataclass(frozen=True)
class PiLabelKeys:
    """The label keys that name personal information, by their words, with the info type of
    what they hold. A key names PI when its last words are an entry's words."""

    entries: Mapping[tuple[str, ...], str] = field(default_factory=dict)

    def info_type(self, key: str) -> str | None:
        """The info type ``key`` names (its longest matching ending), or None."""
        words = key_words(key)
        for n in range(len(words), 0, -1):
            found = self.entries.get(words[-n:])
            if found is not None:
                return found
        return None

    def value_type(self, key: str, path: Sequence[PathPart]) -> str | None:
        """The info type of a value at ``path`` inside the label ``key``: that of the
        innermost key on the way that names PI, or None."""
        for part in reversed((key, *path)):
            if isinstance(part, str) and (found := self.info_type(part)) is not None:
                return found
        return None


def read_pi_label_keys(path: Path, known_info_types: Collection[str]) -> PiLabelKeys:
    """The keys of the policy file at ``path``: a mapping of info type → list of keys.

    Raises:
        InputError: the file is missing, not YAML, or not that mapping; an info type veiltune
            does not know; a key listed twice.
    """
    document = read_policy_yaml(
        path,
        f"{path}: no such file of PI label keys (anonymize.pi_label_keys)",
        malformed=f"{path}: not a YAML file of PI label keys",
    )
    if not isinstance(document, dict):
        raise InputError(f"{path}: a mapping of info type to a list of label keys is needed")
    entries: dict[tuple[str, ...], str] = {}
    for info_type, keys in document.items():
        _check_entry(path, info_type, keys=keys, known_info_types=known_info_types)
        for key in keys:
            words = key_words(key)
            if words in entries:
                raise InputError(f"{path}: {info_type}: {key!r} is listed twice")
            entries[words] = info_type
    return PiLabelKeys(entries)


def _check_entry(
    path: Path, info_type: Any, *, keys: Any, known_info_types: Collection[str]
) -> None:
    if not isinstance(info_type, str) or not _INFO_TYPE.fullmatch(info_type):
        raise InputError(f"{path}: {info_type!r}: an info type name (PHONE_NUMBER) is needed")
    if info_type not in known_info_types:
        raise InputError(f"{path}: {info_type}: not an info type veiltune knows")
    if not isinstance(keys, list) or not all(isinstance(k, str) and key_words(k) for k in keys):
        raise InputError(f"{path}: {info_type}: a list of label keys (words) is needed")
