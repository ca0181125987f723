from __future__ import annotations

import pytest

from components.core.corpus import Conversation, Turn
from components.evaluate.utility import GENERATIVE_TASKS
from components.risk.config import DEFAULT_RISK_SCORES
from components.risk.estimate import (
    PROSE_LABELS,
    Agreement,
    estimate_items,
    scan_text,
    suspected_leaks,
)
from components.risk.scoring import RiskPolicy


def found(text: str) -> list[tuple[str, str, str]]:
    return [(text[s:e], t, st) for s, e, t, st in scan_text(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It's [URL_1]iffith.", [("iffith", "URL", "partial")]),
        ("a message from Miller-[PERSON_NAME_3].", [("Miller-", "PERSON_NAME", "partial")]),
        ("it's [PERSON_NAME_2] Halpert calling", [("Halpert", "PERSON_NAME", "partial")]),
        ("it's [PERSON_NAME_2] adams and", [("adams", "PERSON_NAME", "partial")]),
        (
            "mail jim.h@dundermifflin.com now",
            [("jim.h@dundermifflin.com", "EMAIL_ADDRESS", "full")],
        ),
        ("call 555-867-5309 today", [("555-867-5309", "PHONE_NUMBER", "full")]),
        ("card 4111 1111 1111 1111 ok", [("4111 1111 1111 1111", "CREDIT_CARD_NUMBER", "full")]),
        ("ssn 123-45-6789", [("123-45-6789", "US_SOCIAL_SECURITY_NUMBER", "full")]),
        ("it's five five five one two", [("five five five one two", "GENERIC_ID", "full")]),
        (
            "it's [PERSON_NAME_1] with hernandez analytics.",
            [("hernandez analytics", "ORGANIZATION_NAME_SPEAKER", "full")],
        ),
        (
            "we promised [LOCATION_1] outfitters",
            [("[LOCATION_1] outfitters", "ORGANIZATION_NAME", "partial")],
        ),
        ("I talked to Beverly yesterday", [("Beverly", "PERSON_NAME", "full")]),
    ],
)
def test_scan_finds_what_survived(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Hi [PERSON_NAME_1], this is [PERSON_NAME_2] from [ORGANIZATION_NAME_1].",
        "Sure, I emailed [PERSON_NAME_1] the username yesterday.",
        "Our analytics team looked at the software in the morning.",
        "The card 4111 1111 1111 1112 fails the checksum",  # not a card: Luhn fails
        "Thanks for calling, how can I help?",
    ],
)
def test_scan_leaves_placeholders_and_plain_words_alone(text: str) -> None:
    assert [f for f in found(text) if f[1] != "GENERIC_ID"] == []


def test_estimate_merges_variants_and_holds_no_text() -> None:
    conversation = Conversation(
        "c1",
        (
            Turn("[PERSON_NAME_1]", "I talked to Beverly, B-E-V-E-R-L-Y, at 555-867-5309."),
            Turn("Agent", "Thanks, beverly. Calling 555 867 5309 now."),
        ),
    )
    items = estimate_items(conversation, RiskPolicy(DEFAULT_RISK_SCORES, 3), salt="s")
    assert sorted((i.entity_type, i.status, i.score) for i in items) == [
        ("PERSON_NAME", "full", 5),
        ("PHONE_NUMBER", "full", 4),
    ]
    assert all("everly" not in i.entity.lower() and "5309" not in i.entity for i in items)
    assert len({i.entity for i in items}) == 2


def test_agreement_counts_items_found_and_suspected_right() -> None:
    truth = [
        ("p1", "PERSON_NAME", "Halpert"),
        ("p1", "PERSON_NAME", "Halpert"),
        ("e1", "EMAIL_ADDRESS", "at"),
    ]
    conversation = Conversation("c", (Turn(None, "[PERSON_NAME_1] Halpert and Beverly"),))
    agreement = Agreement()
    agreement.add(truth, suspected_leaks(conversation))
    assert agreement.to_metrics() == {
        "precision": 0.5,
        "recall": 0.5,
        "truth_items": 2,
        "suspected_items": 2,
    }


def test_the_estimate_reads_the_labels_and_counts_a_name_once_across_fields() -> None:
    policy = RiskPolicy(DEFAULT_RISK_SCORES, 3)
    only_in_summary = Conversation(
        "c1",
        (Turn("Person1", "Hi [PERSON_NAME_1]."),),
        labels={"summary": "Person1 greets Beverly.", "action_items": ["Call 555-867-5309."]},
    )
    items = estimate_items(only_in_summary, policy, salt="s")
    assert sorted((i.entity_type, i.score) for i in items) == [
        ("PERSON_NAME", 5),
        ("PHONE_NUMBER", 4),
    ]
    in_text_and_summary = Conversation(
        "c2",
        (Turn("Person1", "I talked to Beverly today."),),
        labels={"summary": "Person1 talked to Beverly."},
    )
    assert [i.score for i in estimate_items(in_text_and_summary, policy, salt="s")] == [5]
    # a category label is a code, not prose: "[PERSON_NAME_1]_issue" is no half-leaked name
    category = Conversation(
        "c3", (Turn("Person1", "Hi."),), labels={"purpose": "[PERSON_NAME_1]_issue"}
    )
    assert found("[PERSON_NAME_1]_issue") and estimate_items(category, policy, salt="s") == []
    assert set(PROSE_LABELS) == set(GENERATIVE_TASKS)  # the labels evaluated as prose


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("am used to editing with Word 2003, and", False),  # a year
        ("we can't go back further than the 1960's.", False),
        ("you would have to pay $ 1050.", False),  # money
        ("an atom is 1000 times smaller", False),  # a count with its unit
        ("my account is 44718822", True),
        ("I was born in 1985.", True),  # a birth year is personal
        ("call 5550143 now", True),
    ],
)
def test_quantities_left_in_clear_are_not_identifier_leaks(text: str, flagged: bool) -> None:
    found = [f for f in scan_text(text) if f[2] == "GENERIC_ID"]
    assert bool(found) == flagged
