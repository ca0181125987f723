"""The anonymization engine on the real Presidio + spaCy detector."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import pytest

from components.anonymize.engine import anonymize_corpus
from components.anonymize.factory import DEFAULT_SPEAKER_ROLES
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.spans import Span
from components.core.corpus import Conversation, Turn

POLICY = AnonymizationPolicy(speaker_roles=DEFAULT_SPEAKER_ROLES)


def call(conv_id: str, name: str, *, email: str) -> Conversation:
    return Conversation(
        conv_id,
        (
            Turn("Agent", "Thank you for calling. Who am I speaking with?"),
            Turn(name, f"Hi, this is {name}. My email is {email}."),
            Turn("Agent", f"Thanks {name.split()[0].lower()}, I have updated it."),
        ),
        context="customer_support",
        labels={"summary": f"{name} updated the email address.", "purpose": "address_change"},
    )


def run(conversations: list[Conversation], detector, *, policy=POLICY):  # type: ignore[no-untyped-def]
    return list(anonymize_corpus(conversations, detector, policy=policy, batch_size=2))


def test_placeholders_are_consistent_within_and_restart_across_conversations(detector: Any) -> None:
    results = run(
        [
            call("c1", "Mark Kowalski", email="mark.k@example.com"),
            call("c2", "Jane Doe", email="jd@mail.org"),
        ],
        detector,
    )
    (first, _), (second, _) = results
    assert first.turns[1].speaker == "[PERSON_NAME_1]"
    assert first.turns[1].text == "Hi, this is [PERSON_NAME_1]. My email is [EMAIL_ADDRESS_1]."
    # the lowercase first name later in the call is the same person
    assert first.turns[2].text == "Thanks [PERSON_NAME_1], I have updated it."
    assert first.turns[0].speaker == "Agent"  # a role, not a name
    assert first.labels["summary"] == "[PERSON_NAME_1] updated the email address."
    assert first.labels["purpose"] == "address_change"
    # numbering restarts: a different person in the next call is number 1 again
    assert second.turns[1].speaker == "[PERSON_NAME_1]"
    assert first.pi == () and second.pi == ()


def test_no_raw_value_survives_and_replacements_hold_no_values(detector: Any) -> None:
    ((anonymized, replacements),) = run(
        [call("c1", "Mark Kowalski", email="mark.k@example.com")], detector
    )
    text = repr(anonymized.to_record()).lower()
    for value in ("kowalski", "mark", "example.com"):
        assert value not in text
    records = repr([r.to_record() for r in replacements]).lower()
    assert "kowalski" not in records and "example" not in records
    assert {r.span.entity_type for r in replacements} >= {"PERSON_NAME", "EMAIL_ADDRESS"}


def test_mask_and_type_policies(detector: Any) -> None:
    conversation = [call("c1", "Mark Kowalski", email="mark.k@example.com")]
    masked = run(
        conversation, detector, policy=AnonymizationPolicy("mask", "#", DEFAULT_SPEAKER_ROLES)
    )
    assert (
        masked[0][0].turns[1].text == "Hi, this is #############. My email is ##################."
    )
    typed = run(
        conversation, detector, policy=AnonymizationPolicy("type", "*", DEFAULT_SPEAKER_ROLES)
    )
    assert typed[0][0].turns[1].text == "Hi, this is [PERSON_NAME]. My email is [EMAIL_ADDRESS]."


def test_a_replacement_method_is_one_function_and_one_registry_line(
    detector: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worked example of docs: a replacer that keeps a value's initials."""
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.replacers import REPLACERS, Replacing, Target
    from components.core.errors import ParamsError

    def initials(target: Target, replacing: Replacing) -> tuple[str, str]:
        return "".join(w[0].upper() for w in target.surface.split()), "initials"

    with pytest.raises(ParamsError, match="anonymize.replacement"):
        AnonymizeConfig(replacement="initials")
    monkeypatch.setitem(REPLACERS, "initials", initials)
    assert AnonymizeConfig(replacement="initials").replacement == "initials"
    policy = AnonymizationPolicy("initials", "*", DEFAULT_SPEAKER_ROLES)
    [(anonymized, replacements)] = run(
        [call("c1", "Mark Kowalski", email="mk@example.com")], detector, policy=policy
    )
    assert anonymized.turns[1].text.startswith("Hi, this is MK. My email is")
    assert {r.method for r in replacements} == {"initials"}


def test_robust_to_odd_text(detector: Any) -> None:
    odd = ["", "1234567890" * 5, "ÇA VA? 你好 🙂 \x00\x07", "ALL CAPS TEXT FROM JOHN SMITH"]
    conversations = [Conversation(f"o{i}", (Turn(None, t),), plain=True) for i, t in enumerate(odd)]
    results = run(conversations, detector)
    assert [c.id for c, _ in results] == ["o0", "o1", "o2", "o3"]
    assert results[0][0].turns[0].text == ""


def test_dictionaries_always_find_and_exclusions_never_redact(detector: Any) -> None:
    from components.anonymize.term_lists import term_lists

    terms = term_lists(
        exclusions={"PERSON_NAME": ["Jane Doe"]},
        dictionaries={"ORGANIZATION_NAME": ["Dunder Mifflin", "Vance Refrigeration"]},
    )
    policy = AnonymizationPolicy(speaker_roles=DEFAULT_SPEAKER_ROLES, terms=terms)
    conversation = Conversation(
        "c1", (Turn(None, "jane doe from dunder mifflin called vance refrigeration"),), plain=True
    )
    ((anonymized, _),) = run([conversation], detector, policy=policy)
    assert anonymized.turns[0].text == (
        "jane doe from [ORGANIZATION_NAME_1] called [ORGANIZATION_NAME_2]"
    )


def test_term_list_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from components.anonymize.spans import Span
    from components.anonymize.term_lists import read_term_lists
    from components.core.errors import InputError

    (tmp_path / "ex.txt").write_text("# comment\nMark\n\n  Acme Corp  \n")
    lists = read_term_lists({"PERSON_NAME": "ex.txt"}, {"PERSON_NAME": "ex.txt"}, base_dir=tmp_path)
    assert lists.excluded(Span(0, 4, "PERSON_NAME", 1.0), "MARK my words")
    assert not lists.excluded(Span(0, 4, "LOCATION", 1.0), "MARK my words")
    assert [(s.start, s.end) for s in lists.dictionary_spans("acme corp and Acme Corporation")] == [
        (0, 9)
    ]
    with pytest.raises(InputError, match="missing.txt: no such term list"):
        read_term_lists({"PERSON_NAME": "missing.txt"}, {}, base_dir=tmp_path)


def test_an_item_found_once_is_found_everywhere_in_the_call(detector: Any) -> None:
    conversation = Conversation(
        "c1",
        (
            Turn("Agent", "What's your username?"),
            Turn("Customer", "It's username jthomas."),
            Turn("Agent", "Okay, I see jthomas. JTHOMAS is locked."),
        ),
    )
    ((anonymized, _),) = run([conversation], detector)
    # Its type is the recognizer's that wins the first mention: the username hotword's
    # USER_NAME, or the transformer NER's PERSON_NAME (it reads "jthomas" as a given name).
    placeholder = anonymized.turns[1].text.removeprefix("It's username ").removesuffix(".")
    assert placeholder in ("[USER_NAME_1]", "[PERSON_NAME_1]")
    assert anonymized.turns[2].text == f"Okay, I see {placeholder}. {placeholder} is locked."


def test_a_dialogsum_summary_names_people_with_the_conversations_placeholders(
    detector: Any,
) -> None:
    from components.ingest.dialogsum import dialogsum_conversation

    record = {
        "fname": "t",
        "dialogue": "#Person1#: Hey Karen, how was the beach?\n"
        "#Person2#: Lovely. Mr. White drove us there.",
        "summary": "#Person1# asks Karen about the beach. Karen says Mr. White drove them.",
    }
    ((anonymized, replacements),) = run([dialogsum_conversation(record, "f:1")], detector)
    assert [t.speaker for t in anonymized.turns] == ["Person1", "Person2"]  # roles, not names
    assert anonymized.turns[0].text == "Hey [PERSON_NAME_1], how was the beach?"
    assert anonymized.turns[1].text == "Lovely. Mr. [PERSON_NAME_2] drove us there."
    # the same person keeps their number in the summary; the speaker role stays as it is
    assert anonymized.labels["summary"] == (
        "Person1 asks [PERSON_NAME_1] about the beach. [PERSON_NAME_1] says Mr. "
        "[PERSON_NAME_2] drove them."
    )
    assert sum(r.field.kind == "label" for r in replacements) == 3


@pytest.mark.parametrize("role", ["Person1", "Speaker 2", "agent_3", "Agent"])
def test_a_numbered_role_is_not_a_name_in_speakers_or_text(detector, role: str) -> None:  # type: ignore[no-untyped-def]
    conversation = Conversation(
        "r",
        (Turn(role, "Hi Karen."), Turn("Karen", f"Hello, {role}.")),
        labels={"summary": f"{role}'s call with Karen."},
    )
    ((anonymized, _),) = run([conversation], detector)
    assert anonymized.turns[0].speaker == role
    assert anonymized.turns[1].speaker == "[PERSON_NAME_1]"  # a name stays a name
    assert anonymized.turns[1].text == f"Hello, {role}."
    assert anonymized.labels["summary"] == f"{role}'s call with [PERSON_NAME_1]."


def test_windows_cover_long_texts_without_splitting_words() -> None:
    from components.anonymize.presidio_backend import WINDOW_CHARS, WINDOW_OVERLAP
    from components.anonymize.spans import text_windows

    def _windows(text: str) -> list[tuple[int, int]]:
        return text_windows(text, WINDOW_CHARS, overlap=WINDOW_OVERLAP)

    text = " ".join(f"word{i}" for i in range(5000))
    windows = _windows(text)
    assert windows[0][0] == 0 and windows[-1][1] == len(text)
    for (s1, e1), (s2, e2) in itertools.pairwise(windows):
        assert s2 < e1 <= e2 and e1 - s1 <= WINDOW_CHARS  # overlapping, bounded
        assert text[s2 - 1] == " " and (e1 == len(text) or text[e1] == " ")
    assert _windows("short") == [(0, 5)]


@pytest.mark.slow
def test_a_record_of_many_windows() -> None:
    """A record of 200,000 characters: 40 of Presidio's windows, each cut where a value may
    lie (the time a megabyte takes is `benchmarks/`' to measure, not a test's). Without the
    transformer NER, whose own windowing over long texts is tested with a tiny model
    (test_ner.py)."""
    from pathlib import Path

    from components.anonymize.config import AnonymizeConfig, NerConfig
    from components.anonymize.factory import build_detector
    from components.ingest.generate import generate_corpus

    config = AnonymizeConfig(ner=NerConfig(model=None))
    detector = build_detector(config, Path(__file__).resolve().parents[2])

    text = " ".join(t.text for c in generate_corpus(600, 9) for t in c.turns)
    text = text[:200_000]
    corpus = [Conversation("big", (Turn(None, text),), plain=True)]
    ((anonymized, replacements),) = run(corpus, detector)
    assert len(replacements) > 2_000
    import re

    assert re.findall(r"[\w.]+@[\w-]+\.\w+", text)  # the input has written emails ...
    assert not re.findall(r"[\w.]+@[\w-]+\.\w+", anonymized.turns[0].text)  # ... none survive
    outside_placeholders = re.sub(r"\[[A-Z_]+_\d+\]", "", anonymized.turns[0].text)
    # nor any run of 3+ digits but amounts of money ("a $240 charge"), kept at the
    # balanced operating point
    assert re.findall(r"\$\d{3}", outside_placeholders)
    assert not re.findall(r"\d{3}", re.sub(r"\$\d+", "", outside_placeholders))


def test_only_known_class_labels_are_categories() -> None:
    from components.anonymize.factory import known_class_labels
    from components.anonymize.fields import text_fields

    conversation = Conversation(
        "c",
        (Turn("Agent", "Payroll here."),),
        context="one_to_one",
        labels={
            "purpose": "payroll_issue",
            "outcome": "jsmith_1984",
            "summary": "Payroll fixed it.",
            "action_items": ["Call Mark back."],
        },
    )
    known = known_class_labels({})
    labelled = {
        (f.key, value) for f, value in text_fields(conversation, known) if f.kind == "label"
    }
    # a snake_case value is a category only when it is a known one
    assert labelled == {
        ("summary", "Payroll fixed it."),
        ("action_items", "Call Mark back."),
        ("outcome", "jsmith_1984"),
    }
    assert not any(f.kind == "context" for f, _ in text_fields(conversation, known))
    users = known_class_labels({"outcome": ["jsmith_1984"], "context": ["billing_line"]})
    assert ("outcome", "jsmith_1984") not in {
        (f.key, value) for f, value in text_fields(conversation, users)
    }
    assert "billing_line" in users["context"] and "one_to_one" in users["context"]


CRM = {
    "caller_name": "Maria Gonzalez",
    "callback": 5551234567,
    "card": "4111111111111111",
    "ssn": "078051120",
    "login": "jsmith_1984",
    "contacts": [{"email": "maria.gonzalez@example.com", "vip": True, "visits": 3}],
    "maria.gonzalez@example.com": "primary",
    "nested": {"deeper": {"phone": "(555) 123-4567"}},
}


def test_every_string_and_identifier_number_of_a_record_is_anonymized(detector: Any) -> None:
    from components.anonymize.factory import known_class_labels

    conversation = Conversation(
        "c1",
        (Turn("Agent", "Thanks for calling."), Turn("Caller", "Hi, I need help.")),
        context="Maria Gonzalez support line",
        labels={
            "crm": CRM,
            "summary": "The caller asked for help.",
            "purpose": "payroll_issue",
            "tags": ["urgent", 9876543210],
            "duration_s": 312,
            "resolved": True,
        },
    )
    policy = AnonymizationPolicy(
        speaker_roles=DEFAULT_SPEAKER_ROLES, class_labels=known_class_labels({})
    )
    ((anonymized, replacements),) = run([conversation], detector, policy=policy)
    text = repr(anonymized.to_record()).lower()
    for value in (
        "maria",
        "gonzalez",
        "5551234567",
        "4111111111111111",
        "078051120",
        "jsmith",
        "example.com",
        "123-4567",
        "9876543210",
    ):
        assert value not in text, value
    labels = anonymized.labels
    assert (
        labels["purpose"] == "payroll_issue" and labels["summary"] == conversation.labels["summary"]
    )
    assert labels["duration_s"] == 312 and labels["resolved"] is True  # short numbers stay
    assert (
        labels["crm"]["contacts"][0]["vip"] is True and labels["crm"]["contacts"][0]["visits"] == 3
    )
    assert labels["crm"]["callback"].startswith("[")  # the number became its placeholder
    assert "[EMAIL_ADDRESS_1]" in labels["crm"]  # a key holding PI is replaced too
    assert anonymized.context == "[PERSON_NAME_1] support line"
    assert labels["crm"]["caller_name"] == "[PERSON_NAME_1]"  # one person, one placeholder
    records = repr([r.to_record() for r in replacements]).lower()
    assert "maria" not in records and "example" not in records and "crm" not in records
    assert any(r.to_record().get("label_path") for r in replacements)


def test_detect_reports_every_span_anonymize_replaces_in_the_turns_speakers_included(
    detector: Any,
) -> None:
    from components.anonymize.factory import detection_records

    conversations = [call("c1", "Mark Kowalski", email="mark.k@example.com")]
    (record,) = detection_records(conversations, detector, policy=POLICY, batch_size=2)
    ((_, replacements),) = run(conversations, detector)
    replaced = sorted(
        (r.field.turn, r.field.kind, r.span.start, r.span.end, r.span.entity_type)
        for r in replacements
        if r.field.kind in ("text", "speaker")
    )
    reported = sorted(
        (s["turn"], s.get("field", "text"), s["start"], s["end"], s["entity_type"])
        for s in record["spans"]
    )
    assert reported == replaced
    assert (1, "speaker", 0, 13, "PERSON_NAME") in reported  # "Mark Kowalski" speaks
    assert all(s.get("field", "text") in ("text", "speaker") for s in record["spans"])


def shipped_policy() -> AnonymizationPolicy:
    """The policy params.yaml describes: the shipped PI label keys among it."""
    from pathlib import Path

    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.factory import anonymization_policy

    config = AnonymizeConfig(replacement="placeholder")  # what these tests read
    return anonymization_policy(config, Path(__file__).resolve().parents[2])


def labelled(
    labels: dict[str, object], text: str = "Hi, I need help with my card."
) -> Conversation:
    return Conversation(
        "c1",
        (Turn("Agent", "Thanks for calling."), Turn("Caller", text)),
        context="customer_support",
        labels=labels,
    )


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"pin": 4821}, {"pin": "[GENERIC_ID_1]"}),
        ({"zip": 94103}, {"zip": "[LOCATION_1]"}),
        ({"billingZipCode": "94103"}, {"billingZipCode": "[LOCATION_1]"}),
        (
            {"geo": {"lat": 37.7749, "lon": -122.4194}},
            {"geo": {"lat": "[LOCATION_1]", "lon": "[LOCATION_2]"}},
        ),
        ({"coordinates": [37.77, -122.41]}, {"coordinates": ["[LOCATION_1]", "[LOCATION_2]"]}),
        ({"caller_dob": "1984-03-02"}, {"caller_dob": "[DATE_OF_BIRTH_1]"}),
        (
            {"DOB": {"year": 1984, "month": 3}},
            {"DOB": {"year": "[DATE_OF_BIRTH_1]", "month": "[DATE_OF_BIRTH_2]"}},
        ),
        ({"crm": {"account": 12345}}, {"crm": {"account": "[FINANCIAL_ACCOUNT_NUMBER_1]"}}),
        ({"age": 42}, {"age": "[AGE_1]"}),
        # keys that name no PI keep their values, and no key is taken for a name
        (
            {"account_type": "business", "duration_s": 312, "region": "west", "resolved": True},
            {"account_type": "business", "duration_s": 312, "region": "west", "resolved": True},
        ),
        (
            {"geo": {"region": "west"}, "dobby": 3, "pin_set": False},
            {"geo": {"region": "west"}, "dobby": 3, "pin_set": False},
        ),
        ({"lon_offset": None, "zip": ""}, {"lon_offset": None, "zip": ""}),
    ],
)
def test_a_label_key_that_names_pi_marks_its_value_and_a_plain_key_is_no_name(
    detector: Any,
    labels: dict[str, object],
    *,
    expected: dict[str, object],
) -> None:
    ((anonymized, _),) = run([labelled(labels)], detector, policy=shipped_policy())
    assert anonymized.labels == expected


def test_a_value_a_pi_key_marks_is_replaced_where_the_call_says_it_too(detector: Any) -> None:
    conversation = labelled({"pin": 4821}, "My PIN is 4821, and that is all.")
    ((anonymized, replacements),) = run([conversation], detector, policy=shipped_policy())
    assert anonymized.turns[1].text == "My PIN is [GENERIC_ID_1], and that is all."
    assert anonymized.labels == {"pin": "[GENERIC_ID_1]"}
    assert "4821" not in repr([r.to_record() for r in replacements])


def test_a_key_the_call_reveals_as_a_name_is_replaced_and_a_key_holding_an_email_too(
    detector: Any,
) -> None:
    conversation = labelled(
        {"attendees": {"maria": "present"}, "contacts": {"maria.g@example.com": "primary"}},
        "Hi, this is Maria Gonzalez calling.",
    )
    ((anonymized, _),) = run([conversation], detector, policy=shipped_policy())
    assert anonymized.labels["attendees"] == {"[PERSON_NAME_1]": "present"}
    assert anonymized.labels["contacts"] == {"[EMAIL_ADDRESS_1]": "primary"}


# A span never takes the punctuation or the space around it, nor runs on past a sentence's
# end: the text around each placeholder stays exactly as it was.
SPAN_EDGES = [
    (
        "Hi, I'm calling from Acme Insurance. My policy number changed.",
        "Hi, I'm calling from [ORGANIZATION_NAME_1]. My policy number changed.",
    ),
    ("Thanks, that's billed to Gonzalez LLC.", "Thanks, that's billed to [ORGANIZATION_NAME_1]."),
    # the period of an abbreviation stays inside while the sentence goes on
    (
        "we bank with Acme Co. and they are fine",
        "we bank with [ORGANIZATION_NAME_1] and they are fine",
    ),
    (
        "I moved from 12 Oak Street, Boston. Can you update it?",
        "I moved from [STREET_ADDRESS_1]. Can you update it?",
    ),
    ("It's at 45 Elm St. Is that right?", "It's at [STREET_ADDRESS_1]. Is that right?"),
    ("Send it to:\n12 Oak Street\nBoston\nThanks", "Send it to:\n[STREET_ADDRESS_1]\nThanks"),
    (
        "it'll be mailed to nine three eight nine chestnut street. Thanks",
        "it'll be mailed to [STREET_ADDRESS_1]. Thanks",
    ),
    (
        "the alert fired on https://wiki.clarktelecom.com/billing, but it went down",
        "the alert fired on [URL_1], but it went down",
    ),
    ("you can upload it at www.schroederinsurance.com/login.", "you can upload it at [URL_1]."),
    (
        "The case number is INC994551. A new card is on its way.",
        "The case number is [GENERIC_ID_1]. A new card is on its way.",
    ),
]


@pytest.mark.parametrize(("text", "expected"), SPAN_EDGES)
def test_spans_keep_the_punctuation_and_spaces_around_them(
    detector: Any, text: str, *, expected: str
) -> None:
    conversation = Conversation("c1", (Turn(None, text),), plain=True)
    ((anonymized, replacements),) = run([conversation], detector)
    assert anonymized.turns[0].text == expected
    for replacement in replacements:
        surface = text[replacement.span.start : replacement.span.end]
        # a word character at each edge, or an abbreviation's period
        assert re.fullmatch(r"\w(?:.*\w)?(?:(?:(?<=\bCo)|(?<=\bSt)|(?<=LLC))\.)?", surface, re.S)


class _FixedSpans:
    """A backend that reports given surfaces, with what a careless detector takes around
    them: any backend's spans pass the engine's edge rule, not only Presidio's."""

    def __init__(self, found: list[tuple[str, str]]) -> None:
        self.found = found

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        return [
            [
                Span(text.index(surface), text.index(surface) + len(surface), info_type, 0.9, "x")
                for surface, info_type in self.found
                if surface in text
            ]
            for text in texts
        ]


def test_every_backend_s_spans_are_trimmed_where_they_meet() -> None:
    text = "Call (Acme Insurance) or Dana, at www.acme.com/pay. Thanks"
    backend = _FixedSpans(
        [
            ("(Acme Insurance) ", "ORGANIZATION_NAME"),
            (" Dana,", "PERSON_NAME"),
            ("www.acme.com/pay. ", "URL"),
        ]
    )
    conversation = Conversation("c1", (Turn(None, text),), plain=True)
    ((anonymized, _),) = run([conversation], backend)
    assert anonymized.turns[0].text == (
        "Call ([ORGANIZATION_NAME_1]) or [PERSON_NAME_1], at [URL_1]. Thanks"
    )
