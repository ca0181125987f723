"""Anonymize whole conversations: detect in batches, widen detection with what the
conversation itself reveals, and replace each span by its conversation-scoped placeholder."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from components.anonymize.fields import TextField, text_fields
from components.anonymize.label_keys import is_field_name
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.replace import Replacement, anonymize_conversation
from components.anonymize.spans import (
    PI_LABEL_KEY_SOURCE,
    PROPAGATED_PREFIX,
    SPEAKER_SOURCE,
    Span,
    edge_trimmed,
    resolve_overlaps,
)
from components.anonymize.term_lists import TermLists
from components.core.corpus import Conversation, Turn
from components.core.lexicon import stop_words
from components.core.placeholders import entity_tokens

if TYPE_CHECKING:
    from components.anonymize.evidence import NameEvidence

# Names are propagated as whole words; shorter tokens are too ambiguous ("al", "ed").
_MIN_PROPAGATED_TOKEN = 3
_WORD = re.compile(r"[^\W\d_]+")
_MIN_PROPAGATED_SURFACE = 4  # shorter items ("123") recur by chance
_PROPAGATED_SCORE = 0.6
# A numbered role ("Person1", "Speaker 2", "agent_3") is its role: the number is not a name.
_ROLE_NUMBER = re.compile(r"[\s#_-]*\d+$")
_POSSESSIVE = re.compile(r"['’]s$", re.I)


class Detector(Protocol):
    """A detection backend: spans of personal information for each text."""

    def detect(self, texts: Sequence[str], batch_size: int = ...) -> list[list[Span]]: ...


@runtime_checkable
class ContextualDetector(Detector, Protocol):
    """A detector that also reads what comes before each text (a language model: the first
    words of a short turn are judged on the call so far, not on nothing)."""

    def detect_in_context(
        self, texts: Sequence[str], contexts: Sequence[str], *, batch_size: int = ...
    ) -> list[list[Span]]:
        """Spans of each text (offsets in the text), ``contexts[i]`` read before ``texts[i]``
        and never judged."""
        ...


# A turn's context is the end of the transcript before it, this many characters at most:
# a few turns of left context, not a long call's every turn again for each of its turns.
CONTEXT_CHARS = 2_000


def anonymize_corpus(
    conversations: Iterable[Conversation],
    detector: Detector,
    *,
    policy: AnonymizationPolicy,
    batch_size: int = 64,
) -> Iterator[tuple[Conversation, list[Replacement]]]:
    """Anonymize a stream of conversations, detecting ``batch_size`` conversations at a time."""
    batch: list[Conversation] = []
    for conversation in conversations:
        batch.append(conversation)
        if len(batch) == batch_size:
            yield from _anonymize_batch(batch, detector, policy=policy)
            batch = []
    if batch:
        yield from _anonymize_batch(batch, detector, policy=policy)


def _anonymize_batch(
    batch: list[Conversation], detector: Detector, *, policy: AnonymizationPolicy
) -> Iterator[tuple[Conversation, list[Replacement]]]:
    for conversation, (fields, spans) in zip(
        batch, detect_batch(batch, detector, policy=policy), strict=True
    ):
        yield anonymize_conversation(conversation, fields, spans=spans, policy=policy)


def detect_batch(
    batch: Sequence[Conversation], detector: Detector, *, policy: AnonymizationPolicy
) -> list[tuple[list[tuple[TextField, str]], list[list[Span]]]]:
    """For each conversation its text fields and the final spans found in each field:
    backend detection in one batch of the fields a detector reads, its spans' edges trimmed
    (``edge_trimmed``: whatever the backend, no span takes the punctuation around it), the
    others' spans by policy (``_fixed_spans``), then names propagated in the conversation."""
    all_fields = [text_fields(c, policy.class_labels, pi_keys=policy.pi_label_keys) for c in batch]
    fixed = [[_fixed_spans(f, text, policy=policy) for f, text in fields] for fields in all_fields]
    texts = [
        text
        for fields, known in zip(all_fields, fixed, strict=True)
        for (_, text), spans in zip(fields, known, strict=True)
        if spans is None
    ]
    if isinstance(detector, ContextualDetector):
        contexts = [
            context
            for conversation, fields, known in zip(batch, all_fields, fixed, strict=True)
            for context, spans in zip(_field_contexts(conversation, fields), known, strict=True)
            if spans is None
        ]
        detected = iter(detector.detect_in_context(texts, contexts))
    else:
        detected = iter(detector.detect(texts))
    results = []
    for fields, known in zip(all_fields, fixed, strict=True):
        spans = [
            _apply_terms(text, edge_trimmed(text, next(detected)), terms=policy.terms)
            if found is None
            else found
            for (_, text), found in zip(fields, known, strict=True)
        ]
        if policy.evidence is not None:  # what does not hold up never spreads ...
            spans = _weigh_evidence(fields, spans, evidence=policy.evidence)
        widened = _propagate_names(fields, spans)
        if policy.evidence is not None:  # ... nor lands on an everyday word without reason
            widened = _weigh_evidence(fields, widened, evidence=policy.evidence)
        roles = _role_labels(fields, policy)
        kept = [
            [
                s
                for s in found
                if not policy.terms.excluded(s, text) and not _names_role(s, text, roles=roles)
            ]
            for (_, text), found in zip(fields, widened, strict=True)
        ]
        results.append((fields, kept))
    return results


def transcript_line(turn: Turn) -> str:
    """A turn as a transcript shows it: ``speaker: text``, or the text of a plain turn."""
    return f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text


def left_contexts(conversation: Conversation, max_chars: int = CONTEXT_CHARS) -> list[str]:
    """For each turn, what its transcript (``transcript_line``s, one a line) holds before
    the turn's text, its own ``speaker: `` included: the last ``max_chars`` characters."""
    contexts, before = [], ""
    for turn in conversation.turns:
        prefix = f"{turn.speaker}: " if turn.speaker else ""
        contexts.append(_tail(before + prefix, max_chars))
        before = _tail(before + transcript_line(turn) + "\n", max_chars)
    return contexts


def _field_contexts(conversation: Conversation, fields: list[tuple[TextField, str]]) -> list[str]:
    """The context of each field: a turn's text has its left context, the conversation's
    context and labels none."""
    turns = left_contexts(conversation)
    return [turns[f.turn] if f.kind == "text" else "" for f, _ in fields]


def _fixed_spans(where: TextField, text: str, *, policy: AnonymizationPolicy) -> list[Span] | None:
    """The spans of a field that no detector reads, or None for one it does: a speaker label
    is a name unless a role; a label value under a key that names PI is PI whole; a label
    key shaped like a field name (``geo``) is no text to guess names in, so only the
    dictionary's names are found in it (propagation then adds what the conversation reveals
    elsewhere: a name, an e-mail address used as a key)."""
    if where.kind == "speaker":
        return _speaker_spans(text, policy)
    if where.kind == "label_key" and is_field_name(text):
        return _apply_terms(text, [], terms=policy.terms)
    if where.kind == "label":
        info_type = policy.pi_label_keys.value_type(where.key, where.path)
        if info_type is not None:
            return _whole_value(text, info_type)
    return None


def _whole_value(text: str, info_type: str) -> list[Span]:
    """One span over the value (its spaces around left out), none for a blank one."""
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    return [Span(start, end, info_type, 1.0, PI_LABEL_KEY_SOURCE)] if end > start else []


def _tail(text: str, max_chars: int) -> str:
    return text[len(text) - max_chars :] if len(text) > max_chars else text


def _apply_terms(text: str, found: list[Span], *, terms: TermLists) -> list[Span]:
    """Add custom-dictionary hits and drop excluded words before names propagate."""
    return [s for s in [*found, *terms.dictionary_spans(text)] if not terms.excluded(s, text)]


def _is_role(speaker: str, policy: AnonymizationPolicy) -> bool:
    return _ROLE_NUMBER.sub("", speaker.strip().lower()) in policy.speaker_roles


def _speaker_spans(speaker: str, policy: AnonymizationPolicy) -> list[Span]:
    """A speaker label is a person's name unless the policy lists it as a role."""
    if _is_role(speaker, policy) or not speaker.strip():
        return []
    start = len(speaker) - len(speaker.lstrip())
    return [Span(start, len(speaker.rstrip()), "PERSON_NAME", 1.0, SPEAKER_SOURCE)]


def _role_labels(fields: list[tuple[TextField, str]], policy: AnonymizationPolicy) -> set[str]:
    """The conversation's speaker labels that are roles, lowercase (``person1``)."""
    return {
        text.strip().lower() for f, text in fields if f.kind == "speaker" and _is_role(text, policy)
    }


def _names_role(span: Span, text: str, *, roles: set[str]) -> bool:
    """A mention that is one of the conversation's role labels (``Person2's`` in a summary
    about ``Person2``) refers to the role, not to a name."""
    surface = _POSSESSIVE.sub("", text[span.start : span.end].strip()).lower()
    return surface in roles


def _propagate_names(
    fields: list[tuple[TextField, str]], spans: list[list[Span]]
) -> list[list[Span]]:
    """Once a conversation reveals an item, find its other mentions, whatever their case.

    Person names propagate word by word (a first name alone is the same person); other
    items (a username, an email, an account number) as their whole surface.
    """
    # Each surface takes the type of its most confident detection in the conversation.
    best: dict[str, tuple[float, str, str]] = {}  # lowercase surface -> (score, type, source)
    for (_, text), found in zip(fields, spans, strict=True):
        for span in found:
            key = text[span.start : span.end].strip().lower()
            best[key] = max(
                best.get(key, (0.0, "", "")), (span.score, span.entity_type, span.source)
            )
    names = {
        token: source
        for surface, (_, info_type, source) in best.items()
        if info_type == "PERSON_NAME"
        for token in entity_tokens(surface)
        if token.isalpha() and len(token) >= _MIN_PROPAGATED_TOKEN and token not in stop_words()
    }
    types = {surface: info_type for surface, (_, info_type, _) in best.items()}
    items = {
        surface: (info_type, source)
        for surface, (_, info_type, source) in best.items()
        if info_type != "PERSON_NAME" and len(surface) >= _MIN_PROPAGATED_SURFACE
    }
    if not names and not items:
        return [resolve_overlaps(found) for found in spans]
    return [
        _own_sources(
            resolve_overlaps(
                _consensus(found, text, types=types) + _mentions(text, names, items=items)
            ),
            found,
        )
        for (_, text), found in zip(fields, spans, strict=True)
    ]


def _weigh_evidence(
    fields: list[tuple[TextField, str]], spans: list[list[Span]], *, evidence: NameEvidence
) -> list[list[Span]]:
    """The spans that hold up (``components.anonymize.evidence``); what the policy fixed
    (a dictionary's terms, a PI label key's value, a speaker label) always does."""
    speakers = " ".join(text for where, text in fields if where.kind == "speaker")
    return evidence.keep([text for _, text in fields], spans, speakers=speakers)


def _own_sources(kept: list[Span], detected: list[Span]) -> list[Span]:
    """A copy that won over the detection it copies, in the same place, is that detection's:
    its recognizer found it, propagation only raised its score."""
    sources = {(s.start, s.end): s.source for s in detected}
    return [
        replace(s, source=sources[(s.start, s.end)]) if (s.start, s.end) in sources else s
        for s in kept
    ]


def _consensus(found: list[Span], text: str, *, types: dict[str, str]) -> list[Span]:
    """Every mention of one surface takes the type of its most confident detection."""
    return [
        replace(s, entity_type=types.get(text[s.start : s.end].strip().lower(), s.entity_type))
        for s in found
    ]


def _mentions(text: str, names: dict[str, str], *, items: dict[str, tuple[str, str]]) -> list[Span]:
    """Whole-word occurrences of known name words and item surfaces in ``text``, each
    sourced to the recognizer of the mention it copies."""
    found = [
        Span(
            m.start(),
            m.end(),
            "PERSON_NAME",
            _PROPAGATED_SCORE,
            PROPAGATED_PREFIX + names[m.group().lower()],
        )
        for m in _WORD.finditer(text)
        if m.group().lower() in names
    ]
    lower = text.lower()
    for surface, (info_type, source) in items.items():
        start = lower.find(surface)
        while start >= 0:
            end = start + len(surface)
            if not (start and text[start - 1].isalnum()) and not (
                end < len(text) and text[end].isalnum()
            ):
                found.append(
                    Span(start, end, info_type, _PROPAGATED_SCORE, PROPAGATED_PREFIX + source)
                )
            start = lower.find(surface, start + 1)
    return found
