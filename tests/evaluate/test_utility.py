"""Utility metrics (ROUGE, classification, perplexity) and the variants report."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from components.core.corpus import Conversation, Turn
from components.evaluate.report import (
    collect_variants,
    comparison,
    report_chart_png,
    report_markdown,
)
from components.evaluate.utility import (
    classification,
    perplexity,
    predicted_label,
    rouge,
    rouge_l,
    rouge_n,
)
from components.train.tasks import mask_placeholders


def test_rouge_on_known_pairs() -> None:
    # "the cat sat on the mat" vs "the cat is on the mat": 5 of 6 unigrams, 3 of 5 bigrams.
    p, r = "the cat sat on the mat", "The cat is on the mat."
    assert rouge_n(p, r, 1) == pytest.approx(5 / 6)
    assert rouge_n(p, r, 2) == pytest.approx(3 / 5)
    assert rouge_l(p, r) == pytest.approx(5 / 6)  # LCS: the cat on the mat
    assert rouge_l("a b c d", "d c b a") == pytest.approx(1 / 4)
    assert rouge(["x"], ["y"]) == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    assert rouge([p], [p])["rougeL"] == pytest.approx(1.0)


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
def test_perplexity_of_the_real_model_prefers_fluent_text(base_model_dir: Path) -> None:
    from components.train.adapter import load_base

    model, tokenizer = load_base(base_model_dir)
    fluent = perplexity(model, tokenizer, ["Thank you for calling, how can I help you today?"])
    scrambled = perplexity(model, tokenizer, ["today you help how calling, for can I Thank?"])
    assert math.isfinite(fluent) and 1 < fluent < scrambled


def _exp_entry(name: str, corpus: str, stamp: str, rouge1: float, ppl: float) -> dict[str, Any]:
    evaluated = {
        "variant": corpus,
        "adapter": {"summary.rouge1": rouge1, "perplexity_raw": ppl},
        "base": {"summary.rouge1": 0.1, "perplexity_raw": 30.0},
    }
    return {
        "rev": name,
        "name": name,
        "data": {
            "timestamp": stamp,
            "metrics": {"metrics/evaluate.json": {"data": evaluated}},
            "params": {"params.yaml": {"data": {"train": {"corpus": corpus}}}},
        },
    }


def test_variants_from_dvc_exp_show_and_the_verdict() -> None:
    shown = [
        _exp_entry("workspace", "anonymized", "2026-01-02", 0.40, 10.3),
        {
            "rev": "abc",
            "name": "main",
            "data": None,
            "experiments": [
                {"name": "oracle", "revs": [_exp_entry("oracle", "raw", "2026-01-01", 0.41, 10.0)]},
                {
                    "name": "masked",
                    "revs": [_exp_entry("masked", "masked", "2026-01-01", 0.30, 12)],
                },
                {"name": "old", "revs": [_exp_entry("old", "anonymized", "2025-12-01", 0.1, 50)]},
            ],
        },
    ]
    variants = collect_variants(shown)
    assert set(variants) == {"base", "anonymized", "oracle", "masked"}
    assert variants["anonymized"]["run"] == "workspace"  # the newest anonymized run wins
    verdict = comparison(variants)
    assert verdict["rouge1_gap_to_oracle"] == pytest.approx(1 - 0.40 / 0.41, abs=1e-4)
    assert verdict["perplexity_gap_to_oracle"] == pytest.approx(0.03)
    assert verdict["within_5pct_of_oracle"] is True
    assert verdict["rouge1_above_base"] is True and verdict["rouge1_above_masked"] is True
    table = report_markdown(variants, verdict)
    assert table.count("\n| ") >= 4 and "| oracle | oracle | 0.410 |" in table
    assert "DialogSum" not in table and "dialogsum_rouge1_gap_to_oracle" not in verdict


def test_a_variant_is_what_its_metrics_were_trained_on_not_what_params_say_now() -> None:
    # The workspace still holds the oracle experiment's outputs; params.yaml was reset.
    stale = _exp_entry("workspace", "raw", "2026-01-03", 0.41, 10.0)
    stale["data"]["params"]["params.yaml"]["data"]["train"]["corpus"] = "anonymized"
    variants = collect_variants([stale])
    assert set(variants) == {"base", "oracle"}


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
    metrics = evaluate_datasets(model, tokenizer, datasets, {}, 4, 128)
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
    own = perplexity(model, tokenizer, [transcript(dialogue)])
    main = perplexity(model, tokenizer, [transcript(generated[0])])
    assert metrics["dialogsum.perplexity_raw"] == pytest.approx(own, abs=1e-3)
    assert metrics["perplexity_raw"] == pytest.approx(main, abs=1e-3)
    assert abs(own - main) > 1e-2
    alone = evaluate_datasets(model, tokenizer, {"main": [], "dialogsum": [dialogue]}, {}, 4, 128)
    assert all(key.startswith("dialogsum.") for key in alone)  # an empty dataset is left out
    assert alone["dialogsum.summary.rougeL"] == metrics["dialogsum.summary.rougeL"]


def test_the_report_has_a_dialogsum_table_when_variants_were_scored_on_it() -> None:
    def entry(corpus: str, rouge1: float) -> dict[str, Any]:
        shown = _exp_entry(corpus, corpus, "2026-01-01", 0.4, 10.0)
        evaluated = shown["data"]["metrics"]["metrics/evaluate.json"]["data"]
        evaluated["adapter"] |= {
            "dialogsum.summary.rouge1": rouge1,
            "dialogsum.summary.rouge2": rouge1 / 2,
            "dialogsum.summary.rougeL": rouge1 - 0.01,
            "dialogsum.perplexity_raw": 20.0,
        }
        evaluated["base"] |= {"dialogsum.summary.rouge1": 0.05}
        return shown

    variants = collect_variants([entry("anonymized", 0.27), entry("raw", 0.30)])
    verdict = comparison(variants)
    assert verdict["dialogsum_rouge1_gap_to_oracle"] == pytest.approx(0.1)
    table = report_markdown(variants, verdict)
    main, _, dialogsum = table.partition("DialogSum")
    assert "| anonymized | anonymized | 0.400 |" in main
    assert "| anonymized | anonymized | 0.270 | 0.135 | 0.260 | 20.000 |" in dialogsum
    assert "| oracle | raw | 0.300 |" in dialogsum
    assert "| base | " in dialogsum and "| masked | (not run)" in dialogsum
    assert report_chart_png(variants)[:4] == b"\x89PNG"
