"""The automatic estimate on a surrogate-anonymized corpus: a realistic fake value is no leak,
a real value left beside one still is."""

from __future__ import annotations

from typing import Any

from components.core.corpus import Conversation, Turn
from components.risk.config import DEFAULT_RISK_SCORES
from components.risk.corpus import CorpusRisk, conversation_sources, score_corpus
from components.risk.scoring import RiskPolicy
from tests.surrogate_fixtures import surrogate_anonymized

POLICY = RiskPolicy(DEFAULT_RISK_SCORES, 3)


def _estimate(raw: Conversation, anonymized: Conversation, *, records: list[Any]) -> CorpusRisk:
    sources = conversation_sources([raw], "estimate", where="corpus.jsonl")
    return score_corpus(
        [raw],
        {raw.id: anonymized},
        replacements={raw.id: records},
        policy=POLICY,
        salt="salt",
        sources=sources,
    )


def test_surrogates_are_no_leak_but_the_same_text_without_its_records_is() -> None:
    raw = Conversation(
        "c1",
        (
            Turn("Agent", "Hi, this is Dwight Schrute from sales."),
            Turn("Customer", "Please call me back at 555-867-5309, Dwight."),
        ),
    )
    anonymized, records = surrogate_anonymized(
        raw,
        {
            0: [("Dwight Schrute", "PERSON_NAME")],
            1: [("555-867-5309", "PHONE_NUMBER"), ("Dwight", "PERSON_NAME")],
        },
    )
    text = " ".join(t.text for t in anonymized.turns)
    assert "Dwight" not in text and "5309" not in text
    assert {r["method"] for r in records} == {"surrogate"}

    assert _estimate(raw, anonymized, records=records).items == []
    # Read as real, the surrogate phone number is flagged: the records are what clears it.
    unread = _estimate(raw, anonymized, records=[])
    assert int(unread.estimate_table["score"].iloc[0]) > 0


def test_a_real_surname_beside_a_surrogate_first_name_is_a_partial_name() -> None:
    raw = Conversation("c2", (Turn("Agent", "Hi, I'm Jim Halpert, how can I help?"),))
    anonymized, records = surrogate_anonymized(raw, {0: [("Jim", "PERSON_NAME")]})
    assert "Halpert" in anonymized.turns[0].text and "Jim" not in anonymized.turns[0].text

    items = _estimate(raw, anonymized, records=records).items
    assert [(i.entity_type, i.status) for i in items] == [("PERSON_NAME", "partial")]
