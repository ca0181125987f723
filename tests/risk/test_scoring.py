from __future__ import annotations

import pandas as pd
import pytest

from components.core.corpus import Conversation, PiSpan, Turn
from components.risk.config import DEFAULT_RISK_SCORES
from components.risk.scoring import item_score, residual_items, risk_row, summarize_risk

SCORES = {**DEFAULT_RISK_SCORES, "ORGANIZATION_NAME_SPEAKER": 2, "EMAIL_ADDRESS": 3}


def replacement(turn: int, start: int, *, end: int, field: str = "text") -> dict[str, object]:
    return {"field": field, "turn": turn, "start": start, "end": end}


@pytest.mark.parametrize(
    ("entity_type", "status", "score"),
    [
        ("PERSON_NAME", "full", 5),
        ("PERSON_NAME", "partial", 3),  # ceil(5 / 2)
        ("EMAIL_ADDRESS", "partial", 1),  # floor(3 / 2)
        ("EMAIL_ADDRESS", "caught", 0),
        ("SOMETHING_NEW", "full", 3),  # the default score
    ],
)
def test_item_score(entity_type: str, status: str, *, score: int) -> None:
    assert item_score(entity_type, status, scores=SCORES, default=3) == score


def test_methods_worked_example_scores_six() -> None:
    """Speaker's organization survives (2), half a name (3) and part of an email (1)."""
    text = "I'm Jim Halpert from Dunder Mifflin, jim.halpert@dm.com"
    conversation = Conversation(
        "c1",
        (Turn("Jim", text),),
        pi=(
            PiSpan(0, 4, 15, "PERSON_NAME", "p1"),
            PiSpan(0, 21, 35, "ORGANIZATION_NAME_SPEAKER", "o1"),
            PiSpan(0, 37, 55, "EMAIL_ADDRESS", "e1"),
        ),
    )
    # "Jim" replaced, "Halpert" left; the org missed; the email's domain left in clear.
    replaced = [replacement(0, 4, end=7), replacement(0, 37, end=48)]
    items = residual_items(conversation, replaced, scores=SCORES, default_score=3)
    assert {(i.entity_type, i.status, i.score) for i in items} == {
        ("PERSON_NAME", "partial", 3),
        ("ORGANIZATION_NAME_SPEAKER", "full", 2),
        ("EMAIL_ADDRESS", "partial", 1),
    }
    assert risk_row(conversation, items)["score"] == 6


def test_same_entity_counts_once_at_its_worst_mention() -> None:
    text = "mark said mark and Mark again, M-A-R-K"
    pi = tuple(
        PiSpan(0, s, e, "PERSON_NAME", "p1") for s, e in [(0, 4), (10, 14), (19, 23), (31, 38)]
    )
    conversation = Conversation("c1", (Turn(None, text),), pi=pi)
    caught_all_but_one = [
        replacement(0, 0, end=4),
        replacement(0, 10, end=14),
        replacement(0, 31, end=38),
    ]
    items = residual_items(conversation, caught_all_but_one, scores=SCORES, default_score=3)
    assert [(i.status, i.score) for i in items] == [("full", 5)]
    everything = [*caught_all_but_one, replacement(0, 19, end=23)]
    assert residual_items(conversation, everything, scores=SCORES, default_score=3) == []


def test_replacement_in_another_field_does_not_count() -> None:
    conversation = Conversation(
        "c1", (Turn("Ann", "Ann here"),), pi=(PiSpan(0, 0, 3, "PERSON_NAME", "p1"),)
    )
    items = residual_items(
        conversation, [replacement(0, 0, end=3, field="speaker")], scores=SCORES, default_score=3
    )
    assert [i.status for i in items] == ["full"]


def test_summary_statistics() -> None:
    table = pd.DataFrame(
        {
            "conversation_id": ["a", "b", "c", "d"],
            "context": ["sales", "sales", "voicemail", "voicemail"],
            "score": [0, 2, 4, 10],
            "n_leaked": [0, 1, 1, 2],
        }
    )
    summary = summarize_risk(table)
    assert summary["mean"] == 4.0
    assert summary["std"] == pytest.approx(3.7417, abs=1e-4)  # population std
    assert summary["mu_plus_sigma"] == pytest.approx(7.7417, abs=1e-4)
    assert summary["max"] == 10.0
    assert summary["by_context"]["sales"]["mean"] == 1.0
    assert summary["by_context"]["voicemail"]["count"] == 2


def test_policy_scores_speaker_owned_organizations_and_falls_back_to_the_base_type() -> None:
    from components.risk.scoring import RiskPolicy

    policy = RiskPolicy({"ORGANIZATION_NAME": 0, "ORGANIZATION_NAME_SPEAKER": 2}, 3)
    assert policy.score("ORGANIZATION_NAME", "full") == 0  # a topic of conversation
    assert policy.score("ORGANIZATION_NAME_SPEAKER", "full") == 2
    assert policy.score("ORGANIZATION_NAME_SPEAKER", "partial") == 1  # floor(2 / 2)
    assert RiskPolicy({"PRODUCT_NAME": 1}, 3).score("PRODUCT_NAME_SPEAKER", "full") == 1
    assert RiskPolicy({}, 3).score("ANYTHING_NEW", "full") == 3


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Mark", "M-A-R-K", True),
        ("Mark", "marc", True),  # one letter apart and alike in sound
        ("Mark", "Mary", False),
        ("Jon Smith", "jon  smith", True),
        ("555 0199", "555-0199", True),
        ("5550199", "5550198", False),  # numbers are never "alike in sound"
    ],
)
def test_spelling_variants_of_one_entity(a: str, b: str, *, same: bool) -> None:
    from components.risk.scoring import same_entity

    entity_type = "PHONE_NUMBER" if a[0].isdigit() else "PERSON_NAME"
    assert same_entity(a, b, entity_type=entity_type) is same


def test_variants_merge_into_one_item_at_the_worst_status() -> None:
    from components.risk.scoring import merge_variants

    found = [
        ("Mark", "PERSON_NAME", "partial"),
        ("M-A-R-K", "PERSON_NAME", "full"),
        ("Marc", "PERSON_NAME", "partial"),
        ("Mark", "ORGANIZATION_NAME", "full"),  # another type: another item
    ]
    assert merge_variants(found) == [
        ("Mark", "PERSON_NAME", "full"),
        ("Mark", "ORGANIZATION_NAME", "full"),
    ]


def test_soundex_codes() -> None:
    from components.risk.scoring import soundex

    assert soundex("Robert") == soundex("Rupert") == "R163"
    assert soundex("Tymczak") == "T522"
    assert soundex("") == ""
