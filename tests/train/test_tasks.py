"""The masked baseline (``train.corpus: masked``) of a surrogate-anonymized corpus."""

from __future__ import annotations

from components.core.corpus import Conversation, Turn
from components.train.tasks import (
    DUAL_HEADINGS,
    dual_parts,
    mask_placeholders,
    mask_replaced,
    task_examples,
)
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


def _sensitive_call(**labels: str) -> Conversation:
    return Conversation(
        "s1", (Turn("A", "my HIV refill is late"), Turn("B", "sent Monday")), labels=labels
    )


def test_private_and_dual_summaries_take_their_targets_from_the_pair() -> None:
    call = _sensitive_call(
        summary="An HIV refill was late; sent Monday.",
        summary_private="A refill was late; sent Monday.",
        summary_leaking="The HIV refill was late.",
    )
    examples = {e.task: e for e in task_examples(call, ["private_summary", "dual_summary"])}
    assert examples["private_summary"].target == "A refill was late; sent Monday."
    dual = examples["dual_summary"].target
    assert dual.startswith(DUAL_HEADINGS[0]) and f"\n{DUAL_HEADINGS[1]} " in dual
    assert dual_parts(dual) == (
        "An HIV refill was late; sent Monday.",
        "A refill was late; sent Monday.",
    )
    # the leaking side of the pair is never a target
    assert not any("The HIV refill was late." in e.target for e in examples.values())


def test_summary_privacy_tasks_need_their_labels() -> None:
    only_normal = _sensitive_call(summary="A call.")
    assert task_examples(only_normal, ["private_summary", "dual_summary"]) == []
    only_private = _sensitive_call(summary_private="A call.")
    assert [e.task for e in task_examples(only_private, ["private_summary", "dual_summary"])] == [
        "private_summary"
    ]


def test_dual_parts_reads_what_a_model_wrote() -> None:
    assert dual_parts("Summary: a\nPrivate summary: b") == ("a", "b")
    assert dual_parts("Private summary: b") == ("", "b")
    assert dual_parts("just one summary") == ("just one summary", "")
