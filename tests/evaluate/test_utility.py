"""Utility metrics (ROUGE, classification, perplexity), in all and per conversation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from components.core.corpus import Conversation, Turn
from components.evaluate.answer_scores import classification, predicted_label, rouge, rouge_scores
from components.evaluate.utility import corpus_perplexity, perplexity
from components.train.tasks import mask_placeholders


def test_rouge_on_known_pairs() -> None:
    # "the cat sat on the mat" vs "the cat is on the mat": 5 of 6 unigrams, 3 of 5 bigrams.
    p, r = "the cat sat on the mat", "The cat is on the mat."
    assert rouge_scores(p, r) == pytest.approx({"rouge1": 5 / 6, "rouge2": 3 / 5, "rougeL": 5 / 6})
    # LCS of "a b c d" and "d c b a" is one token; every unigram matches, no bigram does.
    assert rouge_scores("a b c d", "d c b a") == pytest.approx(
        {"rouge1": 1.0, "rouge2": 0.0, "rougeL": 1 / 4}
    )
    assert rouge(["x"], ["y"]) == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    assert rouge(["", "x"], ["x", ""]) == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    assert rouge([p], [p])["rougeL"] == pytest.approx(1.0)


def test_rouge_stems_as_the_literature_does() -> None:
    # rouge-score's Porter stemming (tokens over 3 letters): prediction -> the cat are run,
    # reference -> the cat run. Unigrams 3 of 4 / 3 of 3; bigrams "the cat" only, of 3 / 2;
    # LCS "the cat run". Unstemmed, only "the" would match (ROUGE-1 2/7).
    scores = rouge_scores("the cats are running", "The cat runs.")
    assert scores["rouge1"] == pytest.approx(2 * (3 / 4) * 1 / (3 / 4 + 1))  # 6/7
    assert scores["rouge2"] == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))  # 2/5
    assert scores["rougeL"] == pytest.approx(6 / 7)


def test_classification_accuracy_and_macro_f1() -> None:
    predicted = ["a", "a", "b", "c"]
    reference = ["a", "b", "b", "b"]
    scores = classification(predicted, reference)
    assert scores["accuracy"] == pytest.approx(0.5)
    # a: P 1/2 R 1 -> 2/3; b: P 1 R 1/3 -> 1/2; mean over reference labels {a, b}.
    assert scores["macro_f1"] == pytest.approx((2 / 3 + 1 / 2) / 2)


@pytest.mark.parametrize(
    ("output", "label"),
    [
        ("The purpose was an order status check.", "order_status"),
        ("billing_question", "billing_question"),
        ("status", "status"),
        ("no idea", "no idea"),
    ],
)
def test_predicted_label(output: str, label: str) -> None:
    assert predicted_label(output, ["order_status", "status", "billing_question"]) == label


def test_mask_placeholders_keeps_neither_type_nor_identity() -> None:
    conversation = Conversation(
        "c",
        (Turn("[PERSON_NAME_1]", "Call [PERSON_NAME_2] at [PHONE_NUMBER_1]."),),
        labels={"summary": "[PERSON_NAME_1] asked for a call.", "action_items": ["x"]},
    )
    masked = mask_placeholders(conversation)
    assert masked.turns[0].speaker == "[MASK]"
    assert masked.turns[0].text == "Call [MASK] at [MASK]."
    assert masked.labels["summary"] == "[MASK] asked for a call."


@pytest.mark.slow
def test_perplexity_of_the_real_model_prefers_fluent_text(smollm2_dir: Path) -> None:
    from components.train.adapter import load_base

    model, tokenizer = load_base(smollm2_dir)  # a pretrained model's claim
    fluent = perplexity(
        model, tokenizer, texts=["Thank you for calling, how can I help you today?"]
    )
    scrambled = perplexity(model, tokenizer, texts=["today you help how calling, for can I Thank?"])
    assert math.isfinite(fluent) and 1 < fluent < scrambled


@pytest.mark.slow
def test_each_dataset_is_scored_apart_on_its_own_conversations(base_model_dir: Path) -> None:
    from components.evaluate.utility import evaluate_datasets
    from components.ingest.dialogsum import dialogsum_conversation
    from components.ingest.generate import generate_corpus
    from components.train.adapter import load_base
    from components.train.tasks import transcript

    model, tokenizer = load_base(base_model_dir)
    generated = generate_corpus(1, 13)
    dialogue = dialogsum_conversation(
        {
            "fname": "t",
            "dialogue": "#Person1#: Hey Jimmy, gym at 3?\n#Person2#: Sure, see you.",
            "summary": "#Person1# invites Jimmy to the gym at 3.",
        },
        "f:1",
    )
    datasets = {"main": generated, "dialogsum": [dialogue]}
    metrics, records = evaluate_datasets(
        model, tokenizer, datasets=datasets, label_sets={}, max_new_tokens=4, max_prompt_tokens=128
    )
    assert metrics["n_examples"] == {"summary": 1, "action_items": 1, "purpose": 1, "outcome": 1}
    assert metrics["dialogsum.n_examples"] == {
        "summary": 1,
        "action_items": 0,
        "purpose": 0,
        "outcome": 0,
    }
    assert {
        "dialogsum.summary.rouge1",
        "dialogsum.summary.rouge2",
        "dialogsum.summary.rougeL",
        "summary.rouge1",
        "purpose.accuracy",
    } <= set(metrics)
    assert not [key for key in metrics if key.startswith("dialogsum.purpose")]
    # each perplexity is measured on its own dataset's transcripts only
    own = perplexity(model, tokenizer, texts=[transcript(dialogue)])
    main = perplexity(model, tokenizer, texts=[transcript(generated[0])])
    assert metrics["dialogsum.perplexity_raw"] == pytest.approx(own, abs=1e-3)
    assert metrics["perplexity_raw"] == pytest.approx(main, abs=1e-3)
    assert abs(own - main) > 1e-2
    alone, _ = evaluate_datasets(
        model,
        tokenizer,
        datasets={"main": [], "dialogsum": [dialogue]},
        label_sets={},
        max_new_tokens=4,
        max_prompt_tokens=128,
    )
    assert all(key.startswith("dialogsum.") for key in alone)  # an empty dataset is left out
    assert alone["dialogsum.summary.rougeL"] == metrics["dialogsum.summary.rougeL"]
    # one record per conversation, numbers and ids only; the aggregates follow from them
    assert [(r["dataset"], r["id"]) for r in records] == [
        ("main", generated[0].id),
        ("dialogsum", dialogue.id),
    ]
    main_record, dialogue_record = records
    assert set(main_record) == {"dataset", "id", "scores", "loss_sum", "n_tokens"}
    assert set(dialogue_record["scores"]) == {"summary.rouge1", "summary.rouge2", "summary.rougeL"}
    assert main_record["scores"]["purpose.accuracy"] in (0.0, 1.0)
    assert main_record["scores"]["summary.rouge1"] == pytest.approx(
        metrics["summary.rouge1"], abs=1e-4
    )
    assert corpus_perplexity([(main_record["loss_sum"], main_record["n_tokens"])]) == pytest.approx(
        metrics["perplexity_raw"], abs=1e-3
    )
    assert all(isinstance(v, float) for r in records for v in r["scores"].values())


def test_corpus_perplexity_weighs_each_text_by_its_tokens() -> None:
    # 10 tokens at mean loss 1 and 30 at mean loss 2; a text with no token adds nothing
    assert corpus_perplexity([(10.0, 10), (60.0, 30), (0.0, 0)]) == pytest.approx(math.exp(1.75))
    assert math.isnan(corpus_perplexity([(0.0, 0)]))


def test_no_tasks_scores_perplexity_alone_and_the_same_perplexity(base_model_dir: Path) -> None:
    from components.evaluate.utility import evaluate_datasets
    from components.ingest.generate import generate_corpus
    from components.train.adapter import load_base
    from components.train.tasks import transcript

    model, tokenizer = load_base(base_model_dir)
    generated = generate_corpus(1, 13)

    def scored(tasks: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        return evaluate_datasets(
            model,
            tokenizer,
            datasets={"main": generated},
            label_sets={},
            max_new_tokens=4,
            max_prompt_tokens=128,
            tasks=tasks,
        )

    metrics, records = scored([])
    assert metrics["n_examples"] == {}
    assert not [key for key in metrics if key.startswith(("summary", "purpose"))]
    assert metrics["perplexity_raw"] == pytest.approx(
        perplexity(model, tokenizer, texts=[transcript(generated[0])]), abs=1e-3
    )
    assert records[0]["scores"] == {}
    summary_only, _ = scored(["summary"])
    assert summary_only["n_examples"] == {"summary": 1}
    assert "summary.rouge1" in summary_only and "purpose.accuracy" not in summary_only
