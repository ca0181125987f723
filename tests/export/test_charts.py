"""The utility chart's data: scores on the score axis, counts never a bar."""

from __future__ import annotations

from typing import Any

from components.export.charts import LOWER_AXIS, SCORE_AXIS, utility_chart_png, utility_panels
from components.export.facts import ExportFacts, UtilityRow, is_count, utility_rows
from components.export.model_card import model_card_markdown
from components.export.report import compliance_report_html
from tests.export.fixtures import LINEAGE, PARAMS, REGISTRY, stage_metrics

# metrics/evaluate.json as the evaluate stage writes it with DialogSum in the corpus.
SCORES: dict[str, Any] = {
    "summary.rouge1": 0.3263,
    "purpose.macro_f1": 0.2531,
    "perplexity_raw": 20.5417,
    "n_examples": {"summary": 29, "purpose": 29, "action_items": 29, "outcome": 29},
    "dialogsum.summary.rouge1": 0.2328,
    "dialogsum.perplexity_raw": 13.8531,
    "dialogsum.n_examples": {"summary": 27, "purpose": 0, "action_items": 0, "outcome": 0},
}
EVALUATE: dict[str, Any] = {
    "variant": "anonymized",
    "n_conversations": 29,
    "dialogsum.n_conversations": 27,
    "adapter": SCORES,
    "base": {**SCORES, "summary.rouge1": 0.15, "dialogsum.summary.rouge1": 0.12},
}


def plotted(rows: list[UtilityRow]) -> dict[str, list[str]]:
    return {label: [r.metric for r in data] for label, data in utility_panels(rows)}


def test_no_count_is_plotted_and_every_score_is() -> None:
    bars = plotted(utility_rows(EVALUATE))
    assert bars == {
        SCORE_AXIS: ["dialogsum.summary.rouge1", "purpose.macro_f1", "summary.rouge1"],
        LOWER_AXIS: ["dialogsum.perplexity_raw", "perplexity_raw"],
    }
    scores = [r for r in utility_rows(EVALUATE) if r.metric in bars[SCORE_AXIS]]
    assert all(0 <= v <= 1 for r in scores for v in (r.adapter, r.base) if v is not None)


def test_a_count_handed_to_the_chart_is_still_no_bar() -> None:
    rows = [
        UtilityRow("dialogsum.n_examples.summary", 27.0, 27.0, None),
        UtilityRow("n_conversations", 29.0, 29.0, None),
        UtilityRow("summary.rouge1", 0.33, 0.15, 29),
    ]
    assert plotted(rows) == {SCORE_AXIS: ["summary.rouge1"]}
    assert utility_panels(rows[:2]) == [] and utility_chart_png(rows[:2]) is None
    png = utility_chart_png(rows)
    assert png is not None and png.startswith(b"\x89PNG")


def test_each_score_carries_the_count_it_is_over() -> None:
    counts = {r.metric: r.n for r in utility_rows(EVALUATE)}
    assert counts == {
        "summary.rouge1": 29,
        "purpose.macro_f1": 29,
        "perplexity_raw": 29,  # the dataset's held-out conversations
        "dialogsum.summary.rouge1": 27,
        "dialogsum.perplexity_raw": 27,
    }
    assert is_count("dialogsum.n_examples.summary") and is_count("n_conversations")
    assert not is_count("summary.rouge1") and not is_count("dialogsum.perplexity_raw")


def test_counts_are_no_metric_of_the_report_or_the_model_card() -> None:
    metrics = {**stage_metrics(), "evaluate": EVALUATE}
    facts = ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE)
    card = model_card_markdown(facts)
    evaluation = card[card.index("## Evaluation") : card.index("## Privacy audits")]
    page = compliance_report_html(facts, None, utility_png=None)
    utility = page[page.index('<section id="utility">') : page.index('<section id="decision">')]
    for text in (evaluation, utility):
        assert "n_examples" not in text and "n_conversations" not in text
    assert "| dialogsum.summary.rouge1 | 27 | 0.2328 | 0.12 |" in evaluation
    assert '<td>dialogsum.summary.rouge1</td><td class="num">27</td>' in utility
