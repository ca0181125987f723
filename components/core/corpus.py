"""The conversation record: its schema, validation of user corpora, and (de)serialisation.

A corpus is JSONL, one conversation per line, either
``{"id", "context", "turns": [{"speaker", "text"}], "pi": [...], "labels": {...}}`` or the
plain ``{"id", "text"}``. ``pi`` is optional ground truth: spans of personal information
with ``turn``, ``field`` ("text" or "speaker"), ``start``, ``end``, ``entity_type`` and an
``entity`` key shared by every mention of the same real-world item in that conversation.
``sensitive`` is optional ground truth of the same shape for sensitive information that
identifies nobody (a diagnosis, a debt): ``path`` names its category in the sensitivity
taxonomy (``healthcare.high.diagnosis.hiv``) and ``element`` is shared by every mention of the
same fact. ``labels.summary_private`` and ``labels.summary_leaking`` are a preference pair:
a summary that keeps the content and drops or abstracts the sensitive facts, and one that
repeats them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from components.core.errors import InputError
from components.core.jsonio import iter_jsonl

TEXT_FIELDS = ("text", "speaker")
# The labels the training tasks read, and the JSON type each must have.
TASK_LABEL_TYPES = {
    "summary": "a string",
    "action_items": "a list of strings",
    "purpose": "a string",
    "outcome": "a string",
    "summary_private": "a string",
    "summary_leaking": "a string",
}
# The two sides of a preference pair: neither may be empty.
PAIR_LABELS = ("summary_private", "summary_leaking")


# A PI label with this suffix marks an organization or product that belongs to a speaker
# (it identifies them), not one that is a topic of the conversation.
SPEAKER_SUFFIX = "_SPEAKER"


def base_info_type(entity_type: str) -> str:
    """``ORGANIZATION_NAME_SPEAKER`` → ``ORGANIZATION_NAME``; other types unchanged."""
    return entity_type.removesuffix(SPEAKER_SUFFIX)


@dataclass(frozen=True)
class Turn:
    speaker: str | None
    text: str


@dataclass(frozen=True)
class PiSpan:
    """A ground-truth span of personal information inside one turn."""

    turn: int
    start: int
    end: int
    entity_type: str
    entity: str
    field: str = "text"


@dataclass(frozen=True)
class SensitiveSpan:
    """A ground-truth mention of sensitive information inside one turn, by taxonomy path."""

    turn: int
    start: int
    end: int
    path: str
    element: str
    field: str = "text"


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[Turn, ...]
    context: str = "unknown"
    pi: tuple[PiSpan, ...] = ()
    labels: dict[str, Any] = field(default_factory=dict)
    plain: bool = False  # came in as {"id", "text"}: written back the same way
    sensitive: tuple[SensitiveSpan, ...] = ()

    def to_record(self) -> dict[str, Any]:
        """The JSON-ready form: plain records stay plain, labelled ones keep their labels."""
        if self.plain:
            record: dict[str, Any] = {"id": self.id, "text": self.turns[0].text}
        else:
            record = {
                "id": self.id,
                "context": self.context,
                "turns": [{"speaker": t.speaker, "text": t.text} for t in self.turns],
            }
        if self.pi:
            record["pi"] = [asdict(span) for span in self.pi]
        if self.sensitive:
            record["sensitive"] = [asdict(span) for span in self.sensitive]
        if self.labels:
            record["labels"] = self.labels
        return record


def conversation_from_record(
    obj: dict[str, Any], where: str, *, sensitive_paths: Collection[str] | None = None
) -> Conversation:
    """Validate one record and build a Conversation; ``where`` is ``file:line`` for errors.
    ``sensitive_paths`` (the taxonomy's paths), when given, is what a ``sensitive`` span's
    ``path`` must be one of."""
    conv_id = obj.get("id")
    if not isinstance(conv_id, str | int) or isinstance(conv_id, bool) or str(conv_id) == "":
        raise InputError(f"{where}: missing or empty key 'id'")
    if "turns" in obj:
        turns = _turns_from(obj["turns"], where)
        plain = False
    elif "text" in obj:
        if not isinstance(obj["text"], str):
            raise InputError(f"{where}: key 'text' must be a string")
        if not obj["text"].strip():
            raise InputError(f"{where}: key 'text' is empty")
        turns = (Turn(speaker=None, text=obj["text"]),)
        plain = True
    else:
        raise InputError(f"{where}: record {conv_id!s} has neither 'turns' nor 'text'")
    context = obj.get("context", "unknown")
    if not isinstance(context, str) or not context:
        raise InputError(f"{where}: key 'context' must be a non-empty string")
    labels = obj.get("labels", {})
    if not isinstance(labels, dict):
        raise InputError(f"{where}: key 'labels' must be an object")
    _check_task_labels(labels, where)
    pi = _pi_from(obj.get("pi", []), turns, where=where)
    sensitive = _sensitive_from(obj.get("sensitive", []), turns, where=where, known=sensitive_paths)
    return Conversation(str(conv_id), turns, context, pi, labels, plain, sensitive)


def _check_task_labels(labels: dict[str, Any], where: str) -> None:
    """A task's label must have the type the task reads; other labels may be any JSON."""
    for key, kind in TASK_LABEL_TYPES.items():
        if key not in labels:
            continue
        value = labels[key]
        ok = (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
            if kind == "a list of strings"
            else isinstance(value, str)
        )
        if not ok:
            raise InputError(f"{where}: key 'labels.{key}' must be {kind}, got {_json_type(value)}")
        if key in PAIR_LABELS and not value.strip():
            raise InputError(f"{where}: key 'labels.{key}' is empty (a preference pair's side)")


def _json_type(value: Any) -> str:
    """What JSON value this is, in words (``a list of numbers/strings``)."""
    if isinstance(value, list):
        inner = sorted({_JSON_TYPES.get(type(v), "values")[1] for v in value})
        return f"a list of {'/'.join(inner)}" if inner else "an empty list"
    return _JSON_TYPES.get(type(value), ("a value", ""))[0]


_JSON_TYPES = {
    bool: ("a boolean", "booleans"),
    int: ("a number", "numbers"),
    float: ("a number", "numbers"),
    str: ("a string", "strings"),
    dict: ("an object", "objects"),
    list: ("a list", "lists"),
    type(None): ("null", "nulls"),
}


def _turns_from(value: Any, where: str) -> tuple[Turn, ...]:
    if not isinstance(value, list) or not value:
        raise InputError(f"{where}: key 'turns' must be a non-empty list")
    turns = []
    for i, turn in enumerate(value):
        if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
            raise InputError(f"{where}: turns[{i}] needs a string 'text'")
        if not turn["text"].strip():
            raise InputError(f"{where}: key 'turns[{i}].text' is empty")
        speaker = turn.get("speaker")
        if speaker is not None and not isinstance(speaker, str):
            raise InputError(f"{where}: turns[{i}].speaker must be a string")
        turns.append(Turn(speaker=speaker, text=turn["text"]))
    return tuple(turns)


def _pi_from(value: Any, turns: tuple[Turn, ...], *, where: str) -> tuple[PiSpan, ...]:
    if not isinstance(value, list):
        raise InputError(f"{where}: key 'pi' must be a list")
    spans = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(f"{where}: key 'pi[{i}]' must be an object")
        span = PiSpan(
            turn=_integer(item, "turn", prefix=f"pi[{i}]", where=where),
            start=_integer(item, "start", prefix=f"pi[{i}]", where=where),
            end=_integer(item, "end", prefix=f"pi[{i}]", where=where),
            entity_type=_string(item, "entity_type", prefix=f"pi[{i}]", where=where),
            entity=str(_scalar(item.get("entity", f"pi{i}"), f"pi[{i}].entity", where=where)),
            field=_string(item, "field", prefix=f"pi[{i}]", where=where, default="text"),
        )
        _check_offsets(
            span.turn,
            span.field,
            start=span.start,
            end=span.end,
            turns=turns,
            name=f"pi[{i}]",
            where=where,
        )
        spans.append(span)
    return tuple(spans)


def _sensitive_from(
    value: Any, turns: tuple[Turn, ...], *, where: str, known: Collection[str] | None
) -> tuple[SensitiveSpan, ...]:
    if not isinstance(value, list):
        raise InputError(f"{where}: key 'sensitive' must be a list")
    spans = []
    for i, item in enumerate(value):
        name = f"sensitive[{i}]"
        if not isinstance(item, dict):
            raise InputError(f"{where}: key '{name}' must be an object")
        span = SensitiveSpan(
            turn=_integer(item, "turn", prefix=name, where=where),
            start=_integer(item, "start", prefix=name, where=where),
            end=_integer(item, "end", prefix=name, where=where),
            path=_string(item, "path", prefix=name, where=where),
            element=str(_scalar(item.get("element", f"s{i}"), f"{name}.element", where=where)),
            field=_string(item, "field", prefix=name, where=where, default="text"),
        )
        if known is not None and span.path not in known:
            raise InputError(
                f"{where}: key '{name}.path': {span.path!r} is not a path of the sensitivity "
                "taxonomy (ingest.taxonomy)"
            )
        _check_offsets(
            span.turn,
            span.field,
            start=span.start,
            end=span.end,
            turns=turns,
            name=name,
            where=where,
        )
        spans.append(span)
    return tuple(spans)


def _check_offsets(
    turn: int, field: str, *, start: int, end: int, turns: tuple[Turn, ...], name: str, where: str
) -> None:
    """A span's turn, field and offsets must point inside the conversation's text."""
    if field not in TEXT_FIELDS or not 0 <= turn < len(turns):
        raise InputError(f"{where}: {name} points outside the conversation")
    target = getattr(turns[turn], field) or ""
    if not 0 <= start < end <= len(target):
        raise InputError(f"{where}: {name} offsets {start}:{end} outside its text")


def _integer(item: dict[str, Any], key: str, *, prefix: str, where: str) -> int:
    """An integer as JSON wrote it: ``false``, ``8.9`` and ``"16"`` are not offsets. The
    error names the value's type, never the value (a corpus field may hold anything)."""
    value = item.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        got = _json_type(value) if key in item else "nothing"
        raise InputError(f"{where}: key '{prefix}.{key}' must be an integer, got {got}")
    return value


def _string(
    item: dict[str, Any], key: str, *, prefix: str, where: str, default: str | None = None
) -> str:
    value = item.get(key, default)
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: key '{prefix}.{key}' must be a non-empty string")
    return value


def _scalar(value: Any, key: str, *, where: str) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"{where}: key '{key}' must be a string or an integer")
    return value


def read_corpus(
    path: Path, sensitive_paths: Collection[str] | None = None
) -> Iterator[Conversation]:
    """Stream validated conversations from a JSONL corpus; ``sensitive_paths`` as in
    ``conversation_from_record``.

    Raises:
        InputError: naming file and line for the first bad record, a duplicate id, or an
            empty corpus.
    """
    seen: set[str] = set()
    for line_no, obj in iter_jsonl(path):
        conversation = conversation_from_record(
            obj, f"{path}:{line_no}", sensitive_paths=sensitive_paths
        )
        if conversation.id in seen:
            raise InputError(f"{path}:{line_no}: duplicate id {conversation.id!r}")
        seen.add(conversation.id)
        yield conversation
    if not seen:
        raise InputError(f"{path}: the corpus is empty (no records)")


def load_corpus(path: Path, sensitive_paths: Collection[str] | None = None) -> list[Conversation]:
    """Read and validate a whole corpus into memory."""
    return list(read_corpus(path, sensitive_paths))
