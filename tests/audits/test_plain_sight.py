"""Hiding in plain sight: the candidate words, the real ones, and the attacker's AUC on
hand-made corpora (the rarity score; the LM score needs the base model)."""

from __future__ import annotations

import pytest

from audits.plain_sight import (
    NOT_COMPUTED,
    audit_plain_sight,
    corpus_frequency,
    name_like_words,
    rarity_scorer,
    real_name_words,
    view_figures,
)
from components.core.corpus import Conversation, PiSpan, Turn


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Agent: Hi, this is Mary Jones.", ["Mary", "Jones"]),  # "Agent", "Hi" start sentences
        ("Thanks. Halpert will call adams on Monday.", ["adams", "Monday"]),  # "will": common
        ("Call [PERSON_NAME_1] at [PHONE_NUMBER_2] today.", []),  # placeholders are not words
        ("Beverly said hi to Al.", ["Beverly"]),  # a rare name starting a sentence; "Al": short
        ("Jim said hi.", []),  # a common word too ("jim"), starting a sentence
        ("We shipped it.\nCustomer: Great, bye Mary.", ["Mary"]),
    ],
)
def test_name_like_words(text: str, expected: list[str]) -> None:
    assert [text[c.start : c.end] for c in name_like_words(text, frozenset())] == expected


def test_real_name_words_are_the_gold_person_spans_words() -> None:
    conversation = Conversation(
        "c1",
        (Turn("Pam Beesly", "Hi, Jim Halpert here, from Dunder Mifflin, call 555-0100."),),
        pi=(
            PiSpan(0, 0, 10, "PERSON_NAME", "p1", field="speaker"),
            PiSpan(0, 4, 15, "PERSON_NAME", "p2"),
            PiSpan(0, 27, 41, "ORGANIZATION_NAME_SPEAKER", "o1"),
            PiSpan(0, 48, 56, "PHONE_NUMBER", "t1"),
        ),
    )
    assert real_name_words(conversation) == {"pam", "beesly", "jim", "halpert"}


# A training corpus anonymized with surrogates, and the same corpus with its surrogates back
# to placeholders. "Halpert" is a real surname the detector missed in the first conversation.
SURROGATES = [
    "Agent: Hi, this is Mary Jones, I work with Halpert in Denver.",
    "Agent: Hello, Mary Smith here, calling from Denver.",
    "Agent: Hi, this is Mary Brown.",
]
PLACEHOLDERS = [
    "Agent: Hi, this is [PERSON_NAME_1], I work with Halpert in Denver.",
    "Agent: Hello, [PERSON_NAME_1] here, calling from Denver.",
    "Agent: Hi, this is [PERSON_NAME_1].",
]
REAL = [frozenset({"halpert"})]


def test_rarity_ranks_the_real_surname_among_surrogates_and_places() -> None:
    scorers = {"rarity": rarity_scorer(corpus_frequency(SURROGATES))}
    figures = view_figures(SURROGATES[:1], REAL, scorers=scorers)
    # Halpert (in 1 conversation) against Mary (3: beaten), Jones (1: a tie), Denver (2).
    assert figures == {
        "n_conversations": 1,
        "n_words": 4,
        "n_real_words": 1,
        "real_only_share": 0.0,
        "rarity_auc": pytest.approx(2.5 / 3, abs=1e-4),
        "n_rarity_scored": 4,
    }


def test_with_placeholders_the_real_word_stands_out_or_stands_alone() -> None:
    scorers = {"rarity": rarity_scorer(corpus_frequency(PLACEHOLDERS))}
    beside_a_place = view_figures(PLACEHOLDERS[:1], REAL, scorers=scorers)
    assert (beside_a_place["n_words"], beside_a_place["rarity_auc"]) == (2, 1.0)

    alone = ["Customer: Thanks, [PERSON_NAME_1] Schrute here."]
    figures = view_figures(alone, [frozenset({"schrute"})], scorers=scorers)
    assert figures["real_only_share"] == 1.0
    assert figures["rarity_auc"] is None  # no other name-like word: nothing to rank


def test_a_corpus_without_residual_names_is_reported_not_failed() -> None:
    raw = Conversation(
        "c1", (Turn("Agent", "Hi, Jim here."),), pi=(PiSpan(0, 4, 7, "PERSON_NAME", "p1"),)
    )
    anonymized = Conversation("c1", (Turn("Agent", "Hi, Kevin here."),))
    views = {"anonymized": [anonymized], "placeholders": [anonymized]}
    result = audit_plain_sight(
        None, None, raw=[raw], views=views, max_conversations=40, max_tokens=768
    )
    assert result.passed
    assert result.figures == {"n_with_residual": 0, "not_computed": NOT_COMPUTED}
