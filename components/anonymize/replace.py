"""Replace what was found: each span by what the policy's replacement makes of it (a
numbered placeholder, a mask, its type, a realistic surrogate), and the record of every
replacement (offsets and placeholder, never the value)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from components.anonymize.fields import TASK_LABELS, TextField, label_positions, text_fields
from components.anonymize.label_keys import PathPart
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.replacers import SURROGATE_METHOD, Replacing, Target, replacer
from components.anonymize.spans import Span, ends_with_sentence_period
from components.core.corpus import Conversation, Turn
from components.core.placeholders import PlaceholderBook

if TYPE_CHECKING:
    from components.anonymize.surrogates import SurrogateBook

_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Replacement:
    """What anonymization did to one span; holds offsets and the placeholder, never the value
    nor its surrogate."""

    conversation_id: str
    field: TextField
    span: Span
    placeholder: str
    # A label field's place by position (see label_positions): its keys may be PI.
    label_path: tuple[int, ...] = ()
    # Where the replacement sits in the anonymized text of the same field, and how it was
    # made: downstream stages find surrogates by these offsets (see placeholder_view).
    out_start: int = -1
    out_end: int = -1
    method: str = "placeholder"
    # surrogate mode: the method that chose the surrogate (realistic | lm | embedding)
    surrogate_source: str = ""

    def to_record(self) -> dict[str, Any]:
        known_key = self.field.key in TASK_LABELS
        return {
            "conversation_id": self.conversation_id,
            "field": self.field.kind,
            "turn": self.field.turn,
            "label": self.field.key if known_key else None,
            **({"label_path": list(self.label_path)} if self.label_path else {}),
            "start": self.span.start,
            "end": self.span.end,
            "entity_type": self.span.entity_type,
            "score": round(self.span.score, 4),
            "placeholder": self.placeholder,
            "anonymized_start": self.out_start,
            "anonymized_end": self.out_end,
            "method": self.method,
            **({"surrogate_source": self.surrogate_source} if self.surrogate_source else {}),
        }


def anonymize_conversation(
    conversation: Conversation,
    fields: list[tuple[TextField, str]],
    *,
    spans: list[list[Span]],
    policy: AnonymizationPolicy,
) -> tuple[Conversation, list[Replacement]]:
    """Replace every span; the returned conversation carries no ground truth offsets."""
    book = PlaceholderBook()
    surrogates = _surrogate_book(conversation.id, fields, spans=spans, policy=policy)
    render, replacing = replacer(policy.mode), Replacing(policy.mask_char, surrogates)
    replacements: list[Replacement] = []
    new_texts: dict[TextField, str] = {}
    for (where, text), found in zip(fields, spans, strict=True):
        pieces, cursor, out = [], 0, 0
        for span in found:
            surface = text[span.start : span.end]
            token = book.placeholder(span.entity_type, surface)
            target = Target(span, surface, token, text[: span.start], text[span.end :])
            rendered, method = render(target, replacing)
            chosen_by = surrogates.last_method if method == SURROGATE_METHOD and surrogates else ""
            out += span.start - cursor
            pieces += [text[cursor : span.start], rendered]
            cursor = span.end
            # "billed to Gonzalez LLC." keeps the sentence's period after its placeholder
            period, shared = _sentence_period(text, span, rendered=rendered, policy=policy)
            replacements.append(
                Replacement(
                    conversation.id,
                    where,
                    span,
                    token,
                    label_positions(conversation, where),
                    out,
                    out + len(rendered) - shared,
                    method,
                    chosen_by,
                )
            )
            pieces.append(period)
            out += len(rendered) + len(period)
        new_texts[where] = "".join(pieces) + text[cursor:]
    return _rebuild(conversation, new_texts), replacements


def _sentence_period(
    text: str, span: Span, *, rendered: str, policy: AnonymizationPolicy
) -> tuple[str, int]:
    """For a span whose abbreviation's period ended the sentence too ("Ltd.", "St."): the
    period to write after what replaced it, none where the replacement ends with one ("47
    Wilson St.": 1, that period is the sentence's, outside the recorded surrogate, so
    ``placeholder_view`` reads "[STREET_ADDRESS_1].") or masks it character for character."""
    if policy.mode == "mask" or not ends_with_sentence_period(text, span.start, end=span.end):
        return "", 0
    return ("", 1) if rendered.endswith(".") else (".", 0)


def _surrogate_book(
    conversation_id: str,
    fields: list[tuple[TextField, str]],
    *,
    spans: list[list[Span]],
    policy: AnonymizationPolicy,
) -> SurrogateBook | None:
    """The conversation's surrogate book, knowing every word of every value it holds (no
    surrogate may reuse one)."""
    if policy.mode != SURROGATE_METHOD:
        return None
    assert policy.surrogates is not None, "surrogate mode needs AnonymizationPolicy.surrogates"
    originals = frozenset(
        word
        for (_, text), found in zip(fields, spans, strict=True)
        for span in found
        for word in _WORD.findall(text[span.start : span.end].lower())
    )
    return policy.surrogates.book(conversation_id, originals)


def placeholder_view(
    conversation: Conversation, records: Sequence[Mapping[str, Any]]
) -> Conversation:
    """The anonymized conversation with every surrogate back to its placeholder, from the
    spans file's records (offsets in the anonymized text): what a scan for PI left in clear
    reads, so that it tells real values from surrogates. Other conversations come back as
    they are."""
    surrogate = [r for r in records if r.get("method") == SURROGATE_METHOD]
    if not surrogate:
        return conversation
    by_field: dict[tuple[str, int, tuple[int, ...]], list[Mapping[str, Any]]] = {}
    for record in surrogate:
        place = (record["field"], record["turn"], tuple(record.get("label_path") or ()))
        by_field.setdefault(place, []).append(record)
    new_texts: dict[TextField, str] = {}
    for where, text in text_fields(conversation):
        key = (where.kind, where.turn, label_positions(conversation, where))
        for record in sorted(by_field.get(key, ()), key=lambda r: -r["anonymized_start"]):
            start, end = record["anonymized_start"], record["anonymized_end"]
            text = text[:start] + record["placeholder"] + text[end:]
        if key in by_field:
            new_texts[where] = text
    return _rebuild(conversation, new_texts)


def _rebuild(conversation: Conversation, texts: dict[TextField, str]) -> Conversation:
    turns = tuple(
        Turn(
            speaker=texts.get(TextField("speaker", i), turn.speaker),
            text=texts.get(TextField("text", i), turn.text),
        )
        for i, turn in enumerate(conversation.turns)
    )
    labels = {
        texts.get(TextField("label_key", key=key), key): _rebuild_label(
            key, value, path=(), texts=texts
        )
        for key, value in conversation.labels.items()
    }
    context = texts.get(TextField("context"), conversation.context)
    # Ground-truth offsets point into the raw text: they do not survive replacement.
    return replace(conversation, turns=turns, context=context, labels=labels, pi=(), sensitive=())


def _rebuild_label(
    key: str, value: Any, *, path: tuple[PathPart, ...], texts: dict[TextField, str]
) -> Any:
    """A label value with each scanned text replaced; a number nothing was found in stays a
    number."""
    if isinstance(value, dict):
        return {
            texts.get(TextField("label_key", key=key, path=(*path, name)), name): _rebuild_label(
                key, item, path=(*path, name), texts=texts
            )
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [
            _rebuild_label(key, item, path=(*path, j), texts=texts) for j, item in enumerate(value)
        ]
    new = texts.get(TextField("label", key=key, path=path))
    if new is None or (not isinstance(value, str) and new == str(value)):
        return value
    return new
