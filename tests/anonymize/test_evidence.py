"""A lowercase everyday word is a name only with evidence (components/anonymize/evidence.py):
the sentences users reported, and the cues, addresses and conversations that vouch for a
word, through the engine with the real detector and the shipped policy."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components.anonymize.config import AnonymizeConfig, NerConfig
from components.anonymize.engine import detect_batch
from components.anonymize.factory import anonymization_policy
from components.core.corpus import Conversation, Turn

REPO = Path(__file__).resolve().parents[2]
NAME_TYPES = {"PERSON_NAME", "LOCATION", "ORGANIZATION_NAME", "USER_NAME"}


def found_names(turns: list[tuple[str, str]], detector: Any, **config: Any) -> list[str]:
    """The surfaces of the name, place, organization and username spans in the turns."""
    policy = anonymization_policy(replace(AnonymizeConfig(), **config), REPO)
    conversation = Conversation("c1", tuple(Turn(s, t) for s, t in turns), "customer_support")
    ((fields, spans),) = detect_batch([conversation], detector, policy=policy)
    return [
        text[s.start : s.end]
        for (where, text), found in zip(fields, spans, strict=True)
        if where.kind == "text"
        for s in found
        if s.entity_type in NAME_TYPES
    ]


# Reported on 2026-11-27 (issue 38), and what the same words must still be when they name.
@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("I need to pay my bill before the due date.", []),
        ("Sure, I will mark the account and grant you an extension.", []),
        ("The bill for March shows a late fee.", []),
        ("Well, when I finally got it the chicken was underdone.", []),
        # the NER reads this "frank" as a person at 0.98: grammar overrules it
        ("To be frank, the price is too high.", []),
        ("We got stuck in a traffic jam on the way.", []),
        ("Hey ref, open your eyes!", []),
        ("The account was locked after several failed logins.", []),  # USER_NAME "logins"
        ("What username are you using? It's mkowalski.", ["mkowalski"]),
        ("My username is reset, all lowercase.", ["reset"]),
        ("Please wait till your name is called.", []),
        ("Hi, this is bill from accounts.", ["bill"]),
        ("my name is mark and I have a question", ["mark"]),
        ("Thanks, frank.", ["frank"]),
        ("Is that you, bill?", ["bill"]),
        ("she named him joshua", ["joshua"]),
        # DialogSum's dev dialogues: a model's unsure guess ("man" at 0.60) vouches for
        # nothing, a sure one does; an irregular verb form is an everyday word too
        ("Welcome, young man.", []),
        ("The painting hung on the wall.", []),
        # grammar puts a common noun after an article, however sure the NER ("the woods"
        # 0.85, "the local vineyard" 0.96, "a lakeside house" 0.84)
        ("Shall we take a walk around the pond or into those woods for a while?", []),
        ("You can also visit the local vineyard.", []),
        ("My brother and I went to a lakeside house.", []),
        ("How did the baker react?", []),
        # "this" and "that" are no articles here
        ("I heard that ben is forming a band.", ["ben"]),
        ("Hi, this is frank from billing.", ["frank"]),
    ],
)
def test_an_everyday_word_is_a_name_only_with_evidence(
    detector: Any, text: str, *, masked: list[str]
) -> None:
    assert found_names([("Caller", text)], detector) == masked


def test_the_conversation_vouches_for_a_word_it_writes_as_a_name(detector: Any) -> None:
    turns = [
        ("Agent", "Did you speak to Bill about the refund?"),
        ("Caller", "Yes, bill said it was fine, and I paid the bill."),
    ]
    # "Bill" written as a name inside a sentence vouches for "bill", but not after "the"
    assert found_names(turns, detector) == ["Bill", "bill"]
    # without it, neither lowercase "bill" holds; the NER reads "bill said" as a person
    alone = [("Caller", "Yes, bill said it was fine, and I paid the bill.")]
    assert found_names(alone, detector, ner=NerConfig(model=None)) == []
    assert found_names(alone, detector) == ["bill"]


def test_title_case_vouches_only_as_a_name_and_not_as_part_of_a_longer_one(
    detector: Any,
) -> None:
    """DialogSum's dev dialogues: "My Master Card." then "which credit card", and "we work
    on Legs and forearm" then "my legs are sore": neither capital makes the word a name."""
    card = [
        ("Person1", "Which credit card are you speaking of?"),
        ("Person2", "My Master Card."),
    ]
    assert "card" not in found_names(card, detector)
    legs = [
        ("Person1", "Today we work on Legs and forearm."),
        ("Person2", "I played basketball, so my legs are a little sore."),
    ]
    assert "legs" not in found_names(legs, detector)
    # "Bill" after a greeting or an honorific still vouches
    for opening in ("Hi Bill, good to see you.", "I wrote to Mr Bill about it."):
        turns = [("Person1", opening), ("Person2", "Yes, bill said it was fine.")]
        assert "bill" in found_names(turns, detector), opening


def test_a_speakers_label_vouches_for_the_word(detector: Any) -> None:
    turns = [("bill", "Hello there."), ("Agent", "Good morning, how can I help bill today?")]
    assert "bill" in found_names(turns, detector)


def test_a_stop_word_never_propagates_as_a_name(detector: Any) -> None:
    turns = [
        ("Caller", "I bought The Kick Scooter from Zorbleck Ltd."),
        ("Caller", "Then the wheel came off and the handle broke."),
    ]
    assert not {"the", "The"} & set(found_names(turns, detector))


def test_null_turns_the_evidence_off_and_the_ner_still_corroborates(detector: Any) -> None:
    # the name gazetteer flags "bill"; without the evidence rule only the NER's reading of
    # the sentence (corroboration: anonymize.ner.corroborate) stands between it and a mask
    from components.anonymize.factory import build_detector

    text = [("Caller", "I need to pay my bill before the due date.")]
    assert found_names(text, detector, common_word_min_zipf=None) == []
    default = AnonymizeConfig()
    uncorroborated = build_detector(
        replace(default, ner=replace(default.ner, corroborate=[])), REPO
    )
    assert found_names(text, uncorroborated, common_word_min_zipf=None) == ["bill"]
    assert found_names(text, uncorroborated) == []
