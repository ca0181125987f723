"""The privacy-preserving summary tasks scored by the judge on generated sensitive calls."""

from __future__ import annotations

import pytest

from components.core.corpus import Conversation, SensitiveSpan, Turn
from components.evaluate.judge import OfflineJudge
from components.evaluate.private_summary import (
    conversation_setting,
    private_summary_scores,
    sensitive_elements,
)
from components.ingest import generate_sensitive_corpus
from components.train import task_examples

WORDS_ONLY = OfflineJudge()  # no encoder: exact and normalized matches (fast, deterministic)


@pytest.fixture(scope="module")
def calls() -> list[Conversation]:
    return generate_sensitive_corpus(24, seed=13)


def test_elements_gather_every_mention_of_a_fact_by_its_path() -> None:
    call = Conversation(
        "c",
        (Turn("A", "my HIV refill"), Turn("B", "for HIV, and the loan")),
        sensitive=(
            SensitiveSpan(0, 3, 6, "healthcare.high.diagnosis.hiv", "d"),
            SensitiveSpan(1, 4, 7, "healthcare.high.diagnosis.hiv", "d"),
            SensitiveSpan(1, 17, 21, "finances.high.loan", "l"),
        ),
    )
    elements = sensitive_elements(call)
    assert [(e.path, e.level, e.mentions) for e in elements] == [
        ("healthcare.high.diagnosis.hiv", "high", ("HIV",)),
        ("finances.high.loan", "high", ("loan",)),
    ]
    assert conversation_setting(call) == "healthcare"  # no setting label: its first element's


def _scores(task: str, answers: list[str], *, calls: list[Conversation]) -> tuple:
    items = [task_examples(c, [task])[0] for c in calls]
    by_id = {c.id: c for c in calls}
    return private_summary_scores(task, answers, items=items, conversations=by_id, judge=WORDS_ONLY)


def test_the_reference_is_acceptable_and_the_leaking_summary_is_not(
    calls: list[Conversation],
) -> None:
    good, per_good = _scores(
        "private_summary", [c.labels["summary_private"] for c in calls], calls=calls
    )
    assert good["acceptable_rate"] == 1.0 and good["privacy"] == 5 and good["rouge1"] == 1.0
    assert all(
        e == {"privacy": 5, "completeness": 5, "acceptable": 1.0, "rouge1": 1.0} for e in per_good
    )
    leaking, per_leak = _scores(
        "private_summary", [c.labels["summary_leaking"] for c in calls], calls=calls
    )
    assert leaking["privacy"] < 3 and leaking["acceptable_rate"] < 0.2
    # every setting of the round is reported
    settings = {c.labels["setting"] for c in calls}
    assert {f"{s}.acceptable_rate" for s in settings} <= set(leaking)
    assert sum(e["acceptable"] for e in per_leak) == leaking["acceptable_rate"] * len(calls)


def test_a_dual_summary_is_judged_on_its_private_part(calls: list[Conversation]) -> None:
    answers = [
        f"Summary: {c.labels['summary']}\nPrivate summary: {c.labels['summary_private']}"
        for c in calls
    ]
    scores, _ = _scores("dual_summary", answers, calls=calls)
    assert scores["acceptable_rate"] == 1.0  # the normal part may say everything
    swapped = [
        f"Summary: {c.labels['summary_private']}\nPrivate summary: {c.labels['summary']}"
        for c in calls
    ]
    assert _scores("dual_summary", swapped, calls=calls)[0]["privacy"] < 3
