from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.corpus import Conversation, Turn
from components.core.errors import InputError
from components.review.sample import (
    parse_annotations,
    parse_tag,
    read_annotations,
    review_sample,
    strip_annotations,
)
from components.risk.config import DEFAULT_RISK_SCORES
from components.risk.scoring import RiskPolicy

# The method's worked example scores a partial email at 3 (its own table).
POLICY = RiskPolicy({**DEFAULT_RISK_SCORES, "EMAIL_ADDRESS": 3}, 3)


def test_methods_worked_example_annotated_scores_six(tmp_path: Path) -> None:
    text = (
        "I'm [PERSON_NAME_1] (Halpert)[MISSED_PERSON_NAME_PARTIAL] from "
        "(Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER], write to "
        "(jim.halpert)[MISSED_EMAIL_ADDRESS_PARTIAL]@[DOMAIN_NAME_1]"
    )
    path = tmp_path / "annotated.jsonl"
    path.write_text(json.dumps({"id": "c1", "turns": [{"speaker": "Jim", "text": text}]}) + "\n")
    [reviewed] = read_annotations(path, POLICY, salt="s")
    assert sorted((i.entity_type, i.status, i.score) for i in reviewed.items) == [
        ("EMAIL_ADDRESS", "partial", 1),
        ("ORGANIZATION_NAME_SPEAKER", "full", 2),
        ("PERSON_NAME", "partial", 3),
    ]
    assert sum(i.score for i in reviewed.items) == 6
    assert "(" not in reviewed.conversation.turns[0].text  # the marks are taken out
    assert all("Halpert" not in i.entity for i in reviewed.items)  # items hold no text


def test_variants_of_one_missed_name_count_once() -> None:
    text = (
        "(Mark)[MISSED_PERSON_NAME] said (M-A-R-K)[MISSED_PERSON_NAME], (marc)[MISSED_PERSON_NAME]"
    )
    annotations, errors = parse_annotations(text, POLICY)
    assert errors == [] and len(annotations) == 3
    from components.risk.scoring import merge_variants

    assert len(merge_variants([(a.text, a.entity_type, a.status) for a in annotations])) == 1


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("MISSED_PERSON_NAME", ("PERSON_NAME", "full")),
        ("MISSED_PERSON_NAME_PARTIAL", ("PERSON_NAME", "partial")),
        ("MISSED_ORGANIZATION_NAME_SPEAKER_PARTIAL", ("ORGANIZATION_NAME_SPEAKER", "partial")),
    ],
)
def test_tags(tag: str, expected: tuple[str, str]) -> None:
    assert parse_tag(tag, POLICY) == expected


@pytest.mark.parametrize(
    ("tag", "reason"),
    [
        ("PERSON_NAME", "MISSED_"),
        ("MISSED_PERSN_NAME", "not an info type"),
        ("MISSED_PERSON_NAME_SPEAKER", "take _SPEAKER"),
    ],
)
def test_bad_tags(tag: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_tag(tag, POLICY)


def test_malformed_annotations_are_all_reported_by_line(tmp_path: Path) -> None:
    lines = [
        {"id": "ok", "text": "fine (Green)[MISSED_PERSON_NAME_PARTIAL] here"},
        {"id": "bad1", "text": "who is (Pam)[MISSED_NAME]?"},
        {"id": "ok2", "text": "nothing to see"},
        {"id": "bad2", "text": "unclosed (Pam[MISSED_PERSON_NAME] and Green [MISSED_PERSON_NAME"},
    ]
    path = tmp_path / "annotated.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(InputError) as error:
        read_annotations(path, POLICY, salt="s")
    message = str(error.value)
    assert f"{path}:2" in message and "NAME is not an info type" in message
    assert f"{path}:4" in message and "no (missed text)" in message
    assert f"{path}:1" not in message and f"{path}:3" not in message


def test_strip_annotations_restores_the_anonymized_text() -> None:
    assert strip_annotations("hi (Pam)[MISSED_PERSON_NAME]!") == "hi Pam!"


def _corpus() -> tuple[list[Conversation], dict[str, int]]:
    conversations, scores = [], {}
    contexts = ["customer_support"] * 30 + ["sales"] * 12 + ["voicemail"] * 3
    for i, context in enumerate(contexts):
        conversation_id = f"c{i:02d}"
        conversations.append(Conversation(conversation_id, (Turn("A", "hello"),), context))
        scores[conversation_id] = [0, 0, 0, 2, 7][i % 5]
    return conversations, scores


def test_review_sample_covers_every_context_and_risk_band() -> None:
    conversations, scores = _corpus()
    sample = review_sample(conversations, scores, size=10, threshold=5, seed=1)
    assert len(sample) == 10
    assert {r["context"] for r in sample} == {"customer_support", "sales", "voicemail"}
    assert {r["risk_band"] for r in sample} == {"none", "low", "high"}
    assert all(r["risk_score"] == scores[r["id"]] for r in sample)
    assert len({r["id"] for r in sample}) == 10
    again = review_sample(conversations, scores, size=10, threshold=5, seed=1)
    assert [r["id"] for r in again] == [r["id"] for r in sample]


def test_review_sample_is_at_most_the_corpus() -> None:
    conversations, scores = _corpus()
    assert len(review_sample(conversations[:4], scores, size=40, threshold=5, seed=1)) == 4
