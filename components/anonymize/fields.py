"""Where personal information can be in a conversation: every text field of a record (turns,
speakers, the context, label values and keys at any depth), and where a label field sits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.anonymize.label_keys import PathPart, PiLabelKeys
from components.core.corpus import TASK_LABEL_TYPES, Conversation

# Label keys whose meaning veiltune knows (the training tasks'): never names, never scanned.
TASK_LABELS = tuple(TASK_LABEL_TYPES)
# A number in a label with this many digits or more may be an identifier (a phone number,
# an account): it is scanned as text, and replaced by a string if anything is found in it.
# A shorter one is kept, unless a key on its way names PI (``AnonymizationPolicy.pi_label_keys``).
IDENTIFIER_DIGITS = 6


@dataclass(frozen=True)
class TextField:
    """Where a text lives in a conversation: a turn's text or speaker, the context, a
    string (or an identifier-like number) at ``path`` inside the label ``key``, or a dict
    key of the labels (``label_key``: ``key`` itself at the top, else the last of ``path``)."""

    kind: str  # "text" | "speaker" | "context" | "label" | "label_key"
    turn: int = -1
    key: str = ""
    path: tuple[PathPart, ...] = ()


def text_fields(
    conversation: Conversation,
    class_labels: Mapping[str, frozenset[str]] | None = None,
    *,
    pi_keys: PiLabelKeys | None = None,
) -> list[tuple[TextField, str]]:
    """Every text of a conversation that may hold personal information, in reading order:
    every string of the record but its id (turns, speakers, the context, label values and
    keys at any depth), label numbers of ``IDENTIFIER_DIGITS`` digits or more, and every
    label number under a key that ``pi_keys`` says names PI. A context or classification
    label is a category, not scanned, only when ``class_labels`` knows it.
    """
    known = class_labels or {}
    keys = pi_keys or PiLabelKeys()
    fields: list[tuple[TextField, str]] = []
    for i, turn in enumerate(conversation.turns):
        if turn.speaker:
            fields.append((TextField("speaker", i), turn.speaker))
        fields.append((TextField("text", i), turn.text))
    if conversation.context not in known.get("context", ()):
        fields.append((TextField("context"), conversation.context))
    for key in sorted(conversation.labels):
        value = conversation.labels[key]
        if key not in TASK_LABELS:
            fields.append((TextField("label_key", key=key), key))
        if isinstance(value, str) and value in known.get(key, ()):
            continue  # a known class label ("payroll_issue") is a category, never free text
        fields.extend(_label_fields(key, value, path=(), keys=keys))
    return fields


def _label_fields(
    key: str, value: Any, *, path: tuple[PathPart, ...], keys: PiLabelKeys
) -> list[tuple[TextField, str]]:
    """The texts inside one label value: strings, identifier-like numbers and numbers under
    a key that names PI, dict keys."""
    if isinstance(value, str):
        return [(TextField("label", key=key, path=path), value)]
    if _identifier_like(value) or (_is_number(value) and keys.value_type(key, path)):
        return [(TextField("label", key=key, path=path), str(value))]
    found: list[tuple[TextField, str]] = []
    if isinstance(value, dict):
        for name, item in value.items():
            found.append((TextField("label_key", key=key, path=(*path, name)), name))
            found.extend(_label_fields(key, item, path=(*path, name), keys=keys))
    elif isinstance(value, list):
        for j, item in enumerate(value):
            found.extend(_label_fields(key, item, path=(*path, j), keys=keys))
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _identifier_like(value: Any) -> bool:
    """An integral number (not a bool) with ``IDENTIFIER_DIGITS`` digits or more."""
    if not _is_number(value):
        return False
    if isinstance(value, float) and not value.is_integer():
        return False
    return len(str(abs(int(value)))) >= IDENTIFIER_DIGITS


def label_positions(conversation: Conversation, where: TextField) -> tuple[int, ...]:
    """Where a label field sits, by index: the label's position among the labels, then each
    dict key's or list item's position (what the spans file says). Positions, unlike keys,
    survive anonymization: a key that is PI is replaced in place."""
    if not where.kind.startswith("label"):
        return ()
    positions = [list(conversation.labels).index(where.key)]
    value: Any = conversation.labels[where.key]
    for part in where.path:
        if isinstance(value, dict):
            positions.append(list(value).index(part))
        else:
            positions.append(int(part))
        value = value[part]
    return tuple(positions)
