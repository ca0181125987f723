"""The masked baseline (``train.corpus: masked``) of a surrogate-anonymized corpus."""

from __future__ import annotations

from components.core.corpus import Conversation, Turn
from components.train.tasks import mask_placeholders, mask_replaced
from tests.surrogate_fixtures import surrogate_anonymized


def test_surrogates_are_masked_like_placeholders() -> None:
    raw = Conversation(
        "c1",
        (
            Turn("Agent", "This is Pam Beesly, call 555-867-5309."),
            Turn("Customer", "Thanks Pam."),
        ),
        labels={"summary": "A call.", "action_items": ["Call back."]},
    )
    anonymized, records = surrogate_anonymized(
        raw,
        {
            0: [("Pam Beesly", "PERSON_NAME"), ("555-867-5309", "PHONE_NUMBER")],
            1: [("Pam", "PERSON_NAME")],
        },
    )
    texts = {r["turn"]: anonymized.turns[r["turn"]].text for r in records}
    surrogates = [texts[r["turn"]][r["anonymized_start"] : r["anonymized_end"]] for r in records]
    assert mask_placeholders(anonymized) == anonymized  # placeholders only: surrogates stay

    masked = mask_replaced(anonymized, records)
    assert [t.text for t in masked.turns] == ["This is [MASK], call [MASK].", "Thanks [MASK]."]
    assert [t.speaker for t in masked.turns] == ["Agent", "Customer"]
    assert masked.labels == raw.labels
    assert not any(s in t.text for s in surrogates for t in masked.turns)


def test_placeholders_in_action_items_are_masked() -> None:
    conversation = Conversation(
        "c2",
        (Turn("[PERSON_NAME_1]", "Hi."),),
        labels={"action_items": ["Email [PERSON_NAME_1].", "Close the ticket."]},
    )
    assert mask_placeholders(conversation).labels["action_items"] == [
        "Email [MASK].",
        "Close the ticket.",
    ]
