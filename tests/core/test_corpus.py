from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.corpus import Conversation, PiSpan, Turn, conversation_from_record, load_corpus
from components.core.errors import InputError


def write(tmp_path: Path, body: bytes) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(body)
    return path


def test_reads_turns_and_plain_records(tmp_path: Path) -> None:
    lines = [
        {"id": "a", "context": "sales", "turns": [{"speaker": "Ann", "text": "hi"}]},
        {"id": 7, "text": "plain text"},
    ]
    path = write(tmp_path, "\n".join(json.dumps(x) for x in lines).encode() + b"\n\n")
    corpus = load_corpus(path)
    assert [c.id for c in corpus] == ["a", "7"]
    assert corpus[0].turns == (Turn("Ann", "hi"),)
    assert corpus[1].plain and corpus[1].to_record() == {"id": "7", "text": "plain text"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"id": "a", "text": "x"}\n{"id": "b", "text": \n', "corpus.jsonl:2: malformed JSON"),
        (b'{"text": "x"}\n', "corpus.jsonl:1: missing or empty key 'id'"),
        (b'{"id": "a"}\n', "corpus.jsonl:1: record a has neither 'turns' nor 'text'"),
        (b'{"id": "a", "text": "caf\xe9"}\n', "corpus.jsonl:1: not valid UTF-8"),
        (b"", "the corpus is empty"),
        (b"\n  \n", "the corpus is empty"),
        (b"[1, 2]\n", "corpus.jsonl:1: expected a JSON object"),
        (b'{"id": "a", "turns": []}\n', "corpus.jsonl:1: key 'turns' must be a non-empty list"),
        (b'{"id": "a", "turns": [{"speaker": "A"}]}\n', "turns[0] needs a string 'text'"),
        (b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "corpus.jsonl:2: duplicate id"),
        (
            b'{"id": "a", "text": "abc", "pi": [{"turn": 0, "start": 1, "end": 9, '
            b'"entity_type": "X"}]}\n',
            "pi[0] offsets 1:9 outside its text",
        ),
        (b'{"id": "a", "text": "  "}\n', "corpus.jsonl:1: key 'text' is empty"),
        (
            b'{"id": "a", "turns": [{"text": "hi"}, {"text": ""}]}\n',
            "corpus.jsonl:1: key 'turns[1].text' is empty",
        ),
        (
            b'{"id": "a", "text": "abcdefghijklmnopq", "pi": [{"turn": false, "start": 1, "end": 9, '
            b'"entity_type": "X"}]}\n',
            "key 'pi[0].turn' must be an integer, got a boolean",
        ),
        (
            b'{"id": "a", "text": "abcdefghijklmnopq", "pi": [{"turn": 0, "start": 8.9, "end": 9, '
            b'"entity_type": "X"}]}\n',
            "key 'pi[0].start' must be an integer, got a number",
        ),
        (
            b'{"id": "a", "text": "abcdefghijklmnopq", "pi": [{"turn": 0, "start": 8, "end": "16", '
            b'"entity_type": "X"}]}\n',
            "key 'pi[0].end' must be an integer, got a string",
        ),
        (
            b'{"id": "a", "text": "abcdefghijklmnopq", "pi": [{"turn": 0, "start": 8, "end": 9, '
            b'"entity_type": ""}]}\n',
            "key 'pi[0].entity_type' must be a non-empty string",
        ),
        (b'{"id": "a", "text": "hi", "pi": ["x"]}\n', "key 'pi[0]' must be an object"),
        (
            b'{"id": "a", "text": "hi", "labels": {"summary": ["a"]}}\n',
            "corpus.jsonl:1: key 'labels.summary' must be a string, got a list of strings",
        ),
        (
            b'{"id": "a", "text": "hi", "labels": {"action_items": "call back"}}\n',
            "key 'labels.action_items' must be a list of strings, got a string",
        ),
        (
            b'{"id": "a", "text": "hi", "labels": {"action_items": ["ok", 5551234567]}}\n',
            "key 'labels.action_items' must be a list of strings, got a list of numbers/strings",
        ),
        (
            b'{"id": "a", "text": "hi", "labels": {"purpose": {"code": 1}}}\n',
            "key 'labels.purpose' must be a string, got an object",
        ),
        (
            b'{"id": "a", "text": "hi", "labels": {"outcome": 7}}\n',
            "key 'labels.outcome' must be a string, got a number",
        ),
        (b'{"id": "a", "text": "hi \\ud800"}\n', "corpus.jsonl:1: key 'text' holds a lone"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, body: bytes, *, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_corpus(path)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope.jsonl: no such file"):
        load_corpus(tmp_path / "nope.jsonl")


def test_record_round_trip_keeps_ground_truth_and_labels() -> None:
    conversation = Conversation(
        id="c1",
        turns=(Turn("Pam Beesly", "call me at 555 0100"),),
        context="sales",
        pi=(
            PiSpan(0, 11, 19, "PHONE_NUMBER", "phone:1"),
            PiSpan(0, 0, 10, "PERSON_NAME", "p1", "speaker"),
        ),
        labels={"summary": "A call.", "action_items": ["call back"]},
    )
    assert conversation_from_record(conversation.to_record(), "x") == conversation


SENSITIVE_RECORD = {
    "id": "s1",
    "turns": [{"speaker": "Ann", "text": "my refill for HIV is late"}],
    "sensitive": [{"turn": 0, "start": 14, "end": 17, "path": "healthcare.high.diagnosis.hiv"}],
    "labels": {"summary_private": "A refill was late.", "summary_leaking": "An HIV refill."},
}
KNOWN_PATHS = {"healthcare.high.diagnosis", "healthcare.high.diagnosis.hiv"}


def test_sensitive_spans_and_the_preference_pair_round_trip() -> None:
    conversation = conversation_from_record(SENSITIVE_RECORD, "x:1", sensitive_paths=KNOWN_PATHS)
    (span,) = conversation.sensitive
    assert conversation.turns[0].text[span.start : span.end] == "HIV"
    assert span.element == "s0"  # one element per span unless the record says otherwise
    assert (
        conversation_from_record(conversation.to_record(), "x", sensitive_paths=KNOWN_PATHS)
        == conversation
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"sensitive": [{"turn": 0, "start": 14, "end": 17, "path": "healthcare.high.hiv"}]},
            "x:1: key 'sensitive[0].path': 'healthcare.high.hiv' is not a path of the sensitivity",
        ),
        (
            {
                "sensitive": [
                    {"turn": 0, "start": 14, "end": 99, "path": "healthcare.high.diagnosis"}
                ]
            },
            "x:1: sensitive[0] offsets 14:99 outside its text",
        ),
        ({"sensitive": [{"turn": 0, "start": 1, "end": 2}]}, "key 'sensitive[0].path' must be"),
        ({"sensitive": {"turn": 0}}, "x:1: key 'sensitive' must be a list"),
        (
            {"labels": {"summary_private": "ok", "summary_leaking": " "}},
            "x:1: key 'labels.summary_leaking' is empty",
        ),
        ({"labels": {"summary_private": ["a"]}}, "key 'labels.summary_private' must be a string"),
    ],
)
def test_bad_sensitive_input_names_the_key(change: dict[str, object], message: str) -> None:
    record = {**SENSITIVE_RECORD, **change}
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        conversation_from_record(record, "x:1", sensitive_paths=KNOWN_PATHS)


def test_paths_are_checked_only_against_a_taxonomy() -> None:
    span = {"turn": 0, "start": 14, "end": 17, "path": "a.b"}
    record = {**SENSITIVE_RECORD, "sensitive": [span]}
    assert conversation_from_record(record, "x:1").sensitive[0].path == "a.b"
