"""Residual risk of a partly labelled corpus: each conversation by a source that can score it."""

from __future__ import annotations

from typing import Any

import pytest

from components.core.corpus import Conversation, PiSpan, Turn
from components.core.errors import InputError
from components.risk.config import DEFAULT_RISK_SCORES
from components.risk.corpus import conversation_sources, score_corpus
from components.risk.scoring import RiskPolicy

POLICY = RiskPolicy(DEFAULT_RISK_SCORES, 3)

# Labelled: "Jim Halpert" half replaced, so ground truth scores a partial name (3); the
# estimate finds "Halpert" beside the placeholder too.
LABELLED = Conversation(
    "conv-1",
    (Turn("Agent", "I'm Jim Halpert."),),
    "sales",
    pi=(PiSpan(0, 4, 15, "PERSON_NAME", "p1"),),
)
LABELLED_ANON = Conversation("conv-1", (Turn("Agent", "I'm [PERSON_NAME_1] Halpert."),), "sales")
LABELLED_SPANS = [{"field": "text", "turn": 0, "start": 4, "end": 7}]
# Unlabelled (DialogSum-like): a name the anonymizer missed, in the text and the summary.
UNLABELLED = Conversation(
    "dialogsum-x",
    (Turn("Person1", "I talked to Beverly today."),),
    "dialogue",
    labels={"summary": "Person1 talked to Beverly."},
)
CLEAN = Conversation("dialogsum-y", (Turn("Person1", "Hello there."),), "dialogue")


def _score(wanted: str) -> dict[str, Any]:
    raw = [LABELLED, UNLABELLED, CLEAN]
    anonymized = {"conv-1": LABELLED_ANON, "dialogsum-x": UNLABELLED, "dialogsum-y": CLEAN}
    sources = conversation_sources(raw, wanted, where="corpus.jsonl")
    scored = score_corpus(
        raw,
        anonymized,
        replacements={"conv-1": LABELLED_SPANS},
        policy=POLICY,
        salt="salt",
        sources=sources,
    )
    rows = scored.table.set_index("conversation_id")
    return {
        "scores": rows["score"].to_dict(),
        "sources": rows["source"].to_dict(),
        "metrics": scored.to_metrics(),
        "estimate_scores": scored.estimate_table.set_index("conversation_id")["score"].to_dict(),
        "n_truth_rows": len(scored.truth_table),
    }


def test_auto_scores_unlabelled_conversations_by_the_estimate_not_as_zero() -> None:
    result = _score("auto")
    assert result["scores"] == {"conv-1": 3, "dialogsum-x": 5, "dialogsum-y": 0}
    assert result["sources"] == {
        "conv-1": "ground_truth",
        "dialogsum-x": "estimate",
        "dialogsum-y": "estimate",
    }
    metrics = result["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["source"] == "mixed"
    assert (metrics["n_ground_truth"], metrics["n_estimate"]) == (1, 2)
    assert metrics["mean"] == pytest.approx(8 / 3, abs=1e-4)
    assert metrics["by_source"]["estimate"]["mean"] == pytest.approx(2.5)
    assert metrics["by_context"]["dialogue"]["max"] == 5
    assert metrics["estimator_agreement"]["truth_items"] == 1  # on the labelled one only
    assert result["n_truth_rows"] == 1


def test_estimate_scores_every_conversation_by_the_estimate() -> None:
    result = _score("estimate")
    assert set(result["sources"].values()) == {"estimate"}
    assert result["scores"] == result["estimate_scores"]
    metrics = result["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["source"] == "estimate" and metrics["n_ground_truth"] == 0
    assert "estimator_agreement" in metrics  # measured wherever ground truth exists


def test_ground_truth_refuses_a_corpus_with_unlabelled_conversations() -> None:
    with pytest.raises(InputError, match=r"corpus.jsonl: .* 2 of 3 conversations .* dialogsum-x"):
        conversation_sources([LABELLED, UNLABELLED, CLEAN], "ground_truth", where="corpus.jsonl")
    assert conversation_sources([LABELLED], "ground_truth", where="c") == {"conv-1": "ground_truth"}
    assert conversation_sources([CLEAN], "auto", where="c") == {"dialogsum-y": "estimate"}
