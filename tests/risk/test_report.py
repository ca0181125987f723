from __future__ import annotations

import base64
import re
from typing import Any

import pandas as pd
import pytest

from components.risk.report import (
    HISTOGRAM_X,
    HISTOGRAM_Y,
    risk_histogram_figure,
    risk_histogram_png,
    risk_report_html,
    risk_sources_statement,
    risk_table_markdown,
)
from components.risk.scoring import summarize_risk

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCORES = [0, 2, 4, 1, 1, 3]


def risk_table(contexts: list[str] | None = None) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "conversation_id": [f"c{i}" for i in range(len(SCORES))],
            "context": contexts or ["support"] * 3 + ["sales"] * 3,
            "score": SCORES,
            "n_leaked": [0, 1, 2, 1, 1, 2],
        }
    )


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    return summarize_risk(risk_table())


@pytest.fixture(scope="module")
def png() -> bytes:
    return risk_histogram_png(SCORES, threshold=5.0, mean=1.8333, std=1.3437)


def table_rows(markdown: str) -> list[list[str]]:
    lines = markdown.strip().splitlines()[2:]  # past the header and the alignment row
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


def test_markdown_has_one_row_per_sorted_context_then_total(summary: dict[str, Any]) -> None:
    markdown = risk_table_markdown(summary, threshold=3.5)
    assert markdown.splitlines()[0] == "| context | count | mean | std | P95 | max | μ+σ | gate |"
    # sales: 1 1 3; support: 0 2 4; all six: σ with ddof=0
    assert table_rows(markdown) == [
        ["sales", "3", "1.667", "0.943", "2.800", "3", "2.610", "< 3.5 ✓"],
        ["support", "3", "2.000", "1.633", "3.800", "4", "3.633", "≥ 3.5 ✗"],
        ["**total**", "6", "1.833", "1.344", "3.750", "4", "3.177", "< 3.5 ✓"],
    ]


@pytest.mark.parametrize(
    ("threshold", "mark"),
    [(3.178, "< 3.178 ✓"), (3.177, "≥ 3.177 ✗"), (3.0, "≥ 3 ✗")],
)
def test_markdown_mark_flips_at_the_threshold(
    summary: dict[str, Any], threshold: float, *, mark: str
) -> None:
    """μ+σ of the corpus is 3.177; the gate passes only strictly below the threshold."""
    total = table_rows(risk_table_markdown(summary, threshold))[-1]
    assert total[-1] == mark


def test_markdown_escapes_pipes_in_context_names() -> None:
    summary = summarize_risk(risk_table(["a|b"] * 6))
    rows = table_rows(risk_table_markdown(summary, 5.0))
    assert [row[0] for row in rows] == ["a\\|b", "**total**"]


def test_histogram_is_a_png_and_deterministic(png: bytes) -> None:
    assert png.startswith(PNG_SIGNATURE)
    assert risk_histogram_png(SCORES, threshold=5.0, mean=1.8333, std=1.3437) == png
    assert b"Software" not in png
    assert risk_histogram_png([*SCORES, 9], threshold=5.0, mean=2.5, std=2.8) != png


def test_histogram_of_no_scores_still_renders() -> None:
    assert risk_histogram_png([], threshold=5.0, mean=0.0, std=0.0).startswith(PNG_SIGNATURE)


def test_report_html_embeds_the_png_and_no_external_resource(
    summary: dict[str, Any], png: bytes
) -> None:
    page = risk_report_html(summary, 5.0, histogram_png=png)
    assert f"data:image/png;base64,{base64.b64encode(png).decode('ascii')}" in page
    assert "http://" not in page and "https://" not in page
    references = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", page)
    assert references and all(ref.startswith("data:") for ref in references)
    assert "<script" not in page
    assert "Gate statistic μ+σ = 3.177 &lt; threshold 5: the corpus passes" in page
    assert "3.633" in page and "<title>Residual risk</title>" in page


def test_report_html_states_failure_and_escapes_context_names(png: bytes) -> None:
    summary = summarize_risk(risk_table(["<script>alert(1)</script>"] * 3 + ["sales"] * 3))
    page = risk_report_html(summary, 3.0, histogram_png=png, title="Risk <of> run")
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<h1>Risk &lt;of&gt; run</h1>" in page
    assert "μ+σ = 3.177 ≥ threshold 3: the corpus fails" in page


MIXED_SUMMARY: dict[str, Any] = {
    **summarize_risk(risk_table()),
    "source": "mixed",
    "n_ground_truth": 300,
    "n_estimate": 200,
    "by_source": {
        "estimate": {
            "count": 200,
            "mean": 0.1,
            "std": 0.4,
            "p95": 1.0,
            "max": 3.0,
            "mu_plus_sigma": 0.5,
        },
        "ground_truth": {
            "count": 300,
            "mean": 0.2,
            "std": 0.6,
            "p95": 2.0,
            "max": 4.0,
            "mu_plus_sigma": 0.8,
        },
    },
    "estimator_agreement": {"recall": 0.4712, "precision": 0.9, "conversation_recall": 0.6},
}


def test_the_page_says_which_source_scored_what_and_the_estimators_recall(png: bytes) -> None:
    page = risk_report_html(MIXED_SUMMARY, 5.0, histogram_png=png)
    assert (
        "300 of 500 conversations scored by ground truth (the corpus&#39;s labelled PI), "
        "200 by the automatic estimator"
    ) in page
    assert "the estimator found 47% of the leaked values ground truth knows (recall 0.47)" in page
    assert "and 60% of the conversations that leaked" in page
    rows = re.findall(r"<tr><td>(estimator|ground truth)</td><td class=\"num\">(\d+)</td>", page)
    assert rows == [("estimator", "200"), ("ground truth", "300")]


@pytest.mark.parametrize(
    ("counts", "said"),
    [
        ({"n_ground_truth": 6, "n_estimate": 0}, "All 6 conversations scored by ground truth"),
        (
            {"n_ground_truth": 0, "n_estimate": 6},
            "The estimator's recall was not measured: no conversation is labelled.",
        ),
    ],
)
def test_one_source_is_said_plainly(counts: dict[str, int], said: str) -> None:
    assert said in risk_sources_statement(counts)


def test_the_histogram_stacks_sources_on_a_log_count_axis_with_titled_axes() -> None:
    scores = [0] * 40 + [2, 3]
    sources = ["ground_truth"] * 30 + ["estimate"] * 10 + ["ground_truth", "estimate"]
    figure = risk_histogram_figure(scores, 5.0, mean=0.12, std=0.5, sources=sources)
    (axes,) = figure.axes
    assert axes.get_yscale() == "log"
    assert axes.get_xlabel() == HISTOGRAM_X and axes.get_ylabel() == HISTOGRAM_Y
    assert "2 above 0" in axes.get_title()
    legend = axes.get_legend()
    assert legend is not None
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels[:2] == ["estimator (11)", "ground truth (31)"]
    png = risk_histogram_png(scores, 5.0, mean=0.12, std=0.5, sources=sources)
    assert png.startswith(PNG_SIGNATURE)
