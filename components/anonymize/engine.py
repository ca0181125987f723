"""Anonymize whole conversations: detect in batches, widen detection with what the
conversation itself reveals, and replace each span by its conversation-scoped placeholder."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from components.anonymize.label_keys import PathPart, PiLabelKeys, is_field_name
from components.anonymize.spans import (
    PI_LABEL_KEY_SOURCE,
    PROPAGATED_PREFIX,
    SPEAKER_SOURCE,
    Span,
    edge_trimmed,
    ends_with_sentence_period,
    resolve_overlaps,
)
from components.anonymize.term_lists import TermLists
from components.core.corpus import TASK_LABEL_TYPES, Conversation, Turn
from components.core.lexicon import stop_words
from components.core.placeholders import PlaceholderBook, entity_tokens

if TYPE_CHECKING:
    from components.anonymize.evidence import NameEvidence
    from components.anonymize.surrogates import SurrogateBook, Surrogates

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
        self, texts: Sequence[str], contexts: Sequence[str], batch_size: int = ...
    ) -> list[list[Span]]:
        """Spans of each text (offsets in the text), ``contexts[i]`` read before ``texts[i]``
        and never judged."""
        ...


# A turn's context is the end of the transcript before it, this many characters at most:
# a few turns of left context, not a long call's every turn again for each of its turns.
CONTEXT_CHARS = 2_000


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


# How a span was replaced (the spans file's "method"): the policy's mode, or, in surrogate
# mode, the placeholder a type without a generator keeps.
SURROGATE_METHOD = "surrogate"
FALLBACK_METHOD = "placeholder/fallback"


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


@dataclass(frozen=True)
class AnonymizationPolicy:
    """What to find beyond the backend, what to leave, and how to replace."""

    # placeholder | mask | type | surrogate, or residual: [RESIDUAL_<TYPE>], for what
    # anonymized text still holds (the compliance bundle's copy of the review sample)
    mode: str = "placeholder"
    mask_char: str = "*"
    speaker_roles: frozenset[str] = frozenset()
    terms: TermLists = field(default_factory=TermLists)
    # Known category values, by "context" and classification label ("purpose", "outcome"):
    # only a value listed here is a category; any other is scanned as text.
    class_labels: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The surrogate maker, in surrogate mode.
    surrogates: Surrogates | None = None
    # Label keys whose value is PI whatever it holds (a PIN, a ZIP code), by info type.
    pi_label_keys: PiLabelKeys = field(default_factory=PiLabelKeys)
    # What vouches for a span on an everyday word ("my bill"); None keeps every span.
    evidence: NameEvidence | None = None


def text_fields(
    conversation: Conversation,
    class_labels: Mapping[str, frozenset[str]] | None = None,
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
        fields.extend(_label_fields(key, value, (), keys))
    return fields


def _label_fields(
    key: str, value: Any, path: tuple[PathPart, ...], keys: PiLabelKeys
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
            found.extend(_label_fields(key, item, (*path, name), keys))
    elif isinstance(value, list):
        for j, item in enumerate(value):
            found.extend(_label_fields(key, item, (*path, j), keys))
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


def anonymize_corpus(
    conversations: Iterable[Conversation],
    detector: Detector,
    policy: AnonymizationPolicy,
    batch_size: int = 64,
) -> Iterator[tuple[Conversation, list[Replacement]]]:
    """Anonymize a stream of conversations, detecting ``batch_size`` conversations at a time."""
    batch: list[Conversation] = []
    for conversation in conversations:
        batch.append(conversation)
        if len(batch) == batch_size:
            yield from _anonymize_batch(batch, detector, policy)
            batch = []
    if batch:
        yield from _anonymize_batch(batch, detector, policy)


def _anonymize_batch(
    batch: list[Conversation], detector: Detector, policy: AnonymizationPolicy
) -> Iterator[tuple[Conversation, list[Replacement]]]:
    for conversation, (fields, spans) in zip(
        batch, detect_batch(batch, detector, policy), strict=True
    ):
        yield anonymize_conversation(conversation, fields, spans, policy)


def detect_batch(
    batch: Sequence[Conversation], detector: Detector, policy: AnonymizationPolicy
) -> list[tuple[list[tuple[TextField, str]], list[list[Span]]]]:
    """For each conversation its text fields and the final spans found in each field:
    backend detection in one batch of the fields a detector reads, its spans' edges trimmed
    (``edge_trimmed``: whatever the backend, no span takes the punctuation around it), the
    others' spans by policy (``_fixed_spans``), then names propagated in the conversation."""
    all_fields = [text_fields(c, policy.class_labels, policy.pi_label_keys) for c in batch]
    fixed = [[_fixed_spans(f, text, policy) for f, text in fields] for fields in all_fields]
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
            _apply_terms(text, edge_trimmed(text, next(detected)), policy.terms)
            if found is None
            else found
            for (_, text), found in zip(fields, known, strict=True)
        ]
        if policy.evidence is not None:  # what does not hold up never spreads ...
            spans = _weigh_evidence(fields, spans, policy.evidence)
        widened = _propagate_names(fields, spans)
        if policy.evidence is not None:  # ... nor lands on an everyday word without reason
            widened = _weigh_evidence(fields, widened, policy.evidence)
        roles = _role_labels(fields, policy)
        kept = [
            [
                s
                for s in found
                if not policy.terms.excluded(s, text) and not _names_role(s, text, roles)
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


def _fixed_spans(where: TextField, text: str, policy: AnonymizationPolicy) -> list[Span] | None:
    """The spans of a field that no detector reads, or None for one it does: a speaker label
    is a name unless a role; a label value under a key that names PI is PI whole; a label
    key shaped like a field name (``geo``) is no text to guess names in, so only the
    dictionary's names are found in it (propagation then adds what the conversation reveals
    elsewhere: a name, an e-mail address used as a key)."""
    if where.kind == "speaker":
        return _speaker_spans(text, policy)
    if where.kind == "label_key" and is_field_name(text):
        return _apply_terms(text, [], policy.terms)
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


def _apply_terms(text: str, found: list[Span], terms: TermLists) -> list[Span]:
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


def _names_role(span: Span, text: str, roles: set[str]) -> bool:
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
            resolve_overlaps(_consensus(found, text, types) + _mentions(text, names, items)),
            found,
        )
        for (_, text), found in zip(fields, spans, strict=True)
    ]


def _weigh_evidence(
    fields: list[tuple[TextField, str]], spans: list[list[Span]], evidence: NameEvidence
) -> list[list[Span]]:
    """The spans that hold up (``components.anonymize.evidence``); what the policy fixed
    (a dictionary's terms, a PI label key's value, a speaker label) always does."""
    speakers = " ".join(text for where, text in fields if where.kind == "speaker")
    return evidence.keep([text for _, text in fields], spans, speakers)


def _own_sources(kept: list[Span], detected: list[Span]) -> list[Span]:
    """A copy that won over the detection it copies, in the same place, is that detection's:
    its recognizer found it, propagation only raised its score."""
    sources = {(s.start, s.end): s.source for s in detected}
    return [
        replace(s, source=sources[(s.start, s.end)]) if (s.start, s.end) in sources else s
        for s in kept
    ]


def _consensus(found: list[Span], text: str, types: dict[str, str]) -> list[Span]:
    """Every mention of one surface takes the type of its most confident detection."""
    return [
        replace(s, entity_type=types.get(text[s.start : s.end].strip().lower(), s.entity_type))
        for s in found
    ]


def _mentions(text: str, names: dict[str, str], items: dict[str, tuple[str, str]]) -> list[Span]:
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


def anonymize_conversation(
    conversation: Conversation,
    fields: list[tuple[TextField, str]],
    spans: list[list[Span]],
    policy: AnonymizationPolicy,
) -> tuple[Conversation, list[Replacement]]:
    """Replace every span; the returned conversation carries no ground truth offsets."""
    book = PlaceholderBook()
    surrogates = _surrogate_book(conversation.id, fields, spans, policy)
    replacements: list[Replacement] = []
    new_texts: dict[TextField, str] = {}
    for (where, text), found in zip(fields, spans, strict=True):
        pieces, cursor, out = [], 0, 0
        for span in found:
            surface = text[span.start : span.end]
            token = book.placeholder(span.entity_type, surface)
            rendered, method = _render(token, span, text, policy, surrogates)
            chosen_by = surrogates.last_method if method == SURROGATE_METHOD and surrogates else ""
            out += span.start - cursor
            pieces += [text[cursor : span.start], rendered]
            cursor = span.end
            # "billed to Gonzalez LLC." keeps the sentence's period after its placeholder
            period, shared = _sentence_period(text, span, rendered, policy)
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
    text: str, span: Span, rendered: str, policy: AnonymizationPolicy
) -> tuple[str, int]:
    """For a span whose abbreviation's period ended the sentence too ("Ltd.", "St."): the
    period to write after what replaced it, none where the replacement ends with one ("47
    Wilson St.": 1, that period is the sentence's, outside the recorded surrogate, so
    ``placeholder_view`` reads "[STREET_ADDRESS_1].") or masks it character for character."""
    if policy.mode == "mask" or not ends_with_sentence_period(text, span.start, span.end):
        return "", 0
    return ("", 1) if rendered.endswith(".") else (".", 0)


def _surrogate_book(
    conversation_id: str,
    fields: list[tuple[TextField, str]],
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


def _render(
    token: str,
    span: Span,
    text: str,
    policy: AnonymizationPolicy,
    surrogates: SurrogateBook | None,
) -> tuple[str, str]:
    """What replaces a span, and the method that made it."""
    surface = text[span.start : span.end]
    if policy.mode == "mask":
        return policy.mask_char * len(surface), policy.mode
    if policy.mode == "type":
        return f"[{span.entity_type}]", policy.mode
    if policy.mode == "residual":
        return f"[RESIDUAL_{span.entity_type}]", policy.mode
    if surrogates is not None:
        context = (text[: span.start], text[span.end :])
        value = surrogates.render(span.entity_type, surface, token, context)
        return (token, FALLBACK_METHOD) if value is None else (value, SURROGATE_METHOD)
    return token, "placeholder"


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
        texts.get(TextField("label_key", key=key), key): _rebuild_label(key, value, (), texts)
        for key, value in conversation.labels.items()
    }
    context = texts.get(TextField("context"), conversation.context)
    # Ground-truth offsets point into the raw text: they do not survive replacement.
    return replace(conversation, turns=turns, context=context, labels=labels, pi=(), sensitive=())


def _rebuild_label(
    key: str, value: Any, path: tuple[PathPart, ...], texts: dict[TextField, str]
) -> Any:
    """A label value with each scanned text replaced; a number nothing was found in stays a
    number."""
    if isinstance(value, dict):
        return {
            texts.get(TextField("label_key", key=key, path=(*path, name)), name): _rebuild_label(
                key, item, (*path, name), texts
            )
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_rebuild_label(key, item, (*path, j), texts) for j, item in enumerate(value)]
    new = texts.get(TextField("label", key=key, path=path))
    if new is None or (not isinstance(value, str) and new == str(value)):
        return value
    return new
