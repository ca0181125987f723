from __future__ import annotations

import random

import pytest

from components.core.corpus import Conversation, PiSpan, Turn, conversation_from_record
from components.ingest.canaries import CANARY_FORMATS, plant_canaries


def conversations(n: int) -> list[Conversation]:
    out = []
    for i in range(n):
        turns = (Turn("Ann Lee", "Hi."), Turn("Bob Ray", "Hello."), Turn("Ann Lee", "Bye."))
        pi = (
            PiSpan(1, 0, 7, "PERSON_NAME", "p2", "speaker"),
            PiSpan(2, 0, 7, "PERSON_NAME", "p1", "speaker"),
        )
        out.append(Conversation(f"c{i}", turns, pi=pi))
    return out


def test_secrets_follow_their_format() -> None:
    rng = random.Random(0)
    phone = CANARY_FORMATS["PHONE_NUMBER"].random_secret(rng)
    account = CANARY_FORMATS["FINANCIAL_ACCOUNT_NUMBER"].random_secret(rng)
    assert len(phone) == 12 and phone[3] == phone[7] == "-" and phone[0] not in "01"
    assert len(account) == 10 and account.isdigit()


def test_each_canary_lands_in_as_many_training_conversations_as_its_count() -> None:
    corpus = conversations(10)
    train = [c.id for c in corpus[:8]]
    planted, canaries = plant_canaries(
        corpus, train, entity_types=["PHONE_NUMBER"], repetitions=[1, 4], seed=3
    )
    assert [c.repetitions for c in canaries] == [1, 4]
    assert canaries[0].secret != canaries[1].secret
    by_id = {c.id: c for c in planted}
    for canary in canaries:
        assert len(set(canary.conversation_ids)) == canary.repetitions
        assert set(canary.conversation_ids) <= set(train)
        for conv_id in canary.conversation_ids:
            host = by_id[conv_id]
            (turn,) = [t for t in host.turns if canary.secret in t.text]
            assert turn.text == CANARY_FORMATS["PHONE_NUMBER"].sentence(canary.secret)
            assert host.turns[-1].text == "Bye."  # the canary comes before the last turn
    # Ground truth follows: the secret is labelled PI and the shifted spans still point at
    # the same words, which validation of the written record checks.
    for conversation in planted:
        again = conversation_from_record(conversation.to_record(), "test")
        for span in again.pi:
            turn = again.turns[span.turn]
            value = (turn.text if span.field == "text" else turn.speaker or "")[
                span.start : span.end
            ]
            assert value in {"Ann Lee", "Bob Ray"} or span.entity.startswith("canary-")
    secret_spans = [s for c in planted for s in c.pi if s.entity.startswith("canary-")]
    assert len(secret_spans) == 5 and {s.entity_type for s in secret_spans} == {"PHONE_NUMBER"}
    assert (
        plant_canaries(corpus, train, entity_types=["PHONE_NUMBER"], repetitions=[1, 4], seed=3)[1]
        == canaries
    )


def test_too_many_repetitions_for_the_training_split_is_an_error() -> None:
    corpus = conversations(3)
    with pytest.raises(ValueError, match="exceeds the 2 training conversations"):
        plant_canaries(corpus, ["c0", "c1"], entity_types=["PHONE_NUMBER"], repetitions=[4], seed=0)


def test_only_labelled_conversations_host_canaries_in_a_partly_labelled_corpus() -> None:
    corpus = conversations(4)
    unlabelled = [Conversation(f"u{i}", c.turns) for i, c in enumerate(corpus)]
    mixed = corpus[:2] + unlabelled
    planted, canaries = plant_canaries(
        mixed, [c.id for c in mixed], entity_types=["PHONE_NUMBER"], repetitions=[2], seed=1
    )
    assert set(canaries[0].conversation_ids) == {"c0", "c1"}
    assert all(not c.pi for c in planted if c.id.startswith("u"))


def test_no_types_plants_nothing() -> None:
    corpus = conversations(3)
    planted, canaries = plant_canaries(corpus, ["c0"], entity_types=[], repetitions=[1, 4], seed=0)
    assert planted == corpus and canaries == []
