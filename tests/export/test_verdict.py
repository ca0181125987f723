"""The verdict: gate, audits, champion and headline utility, first on the report."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.export.facts import ExportFacts
from components.export.report import compliance_report_html
from components.export.verdict import UtilityHeadline, verdict
from tests.export.fixtures import LINEAGE, PARAMS, REGISTRY, stage_metrics

PLAIN_SIGHT = {"passed": True, "figures": {"n_with_residual": 1}}


def facts_with_plain_sight() -> ExportFacts:
    metrics: dict[str, Any] = stage_metrics()
    metrics["audit"]["audits"]["plain_sight"] = PLAIN_SIGHT
    return ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE)


def banner_text(page: str) -> str:
    start = page.index('<div id="verdict"')
    block = page[start : page.index("</div>", start)]
    return " ".join(re.sub(r"<[^>]+>", " ", block).split())


def test_reported_only_audits_are_not_counted_as_passes() -> None:
    decided = verdict(facts_with_plain_sight())
    assert (decided.audits_passed, decided.audits_held) == (3, 4)
    assert decided.audits_failed == ("membership",)
    assert decided.audits_reported == ("plain_sight",)
    assert decided.gate_passed is True and decided.gate_statistic == 0.74
    assert decided.gate_threshold == 5.0
    assert decided.champion is False and "membership" in decided.champion_reason


def test_the_headline_utility_is_the_main_summary_score_against_the_base() -> None:
    headline = verdict(facts_with_plain_sight()).utility
    assert headline == UtilityHeadline("summary.rouge1", 0.33, 0.15, 20, higher_is_better=True)
    assert headline is not None and round(headline.delta or 0, 4) == 0.18
    metrics = stage_metrics()
    metrics["evaluate"] = {"adapter": {"dialogsum.summary.rouge1": 0.2}, "base": {}}
    only_dialogsum = verdict(ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE)).utility
    assert only_dialogsum is not None and only_dialogsum.metric == "dialogsum.summary.rouge1"
    metrics["evaluate"] = {}
    assert verdict(ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE)).utility is None


def test_the_banner_comes_before_any_section_and_states_the_verdict() -> None:
    page = compliance_report_html(facts_with_plain_sight(), None, utility_png=None)
    assert page.index('<div id="verdict"') < page.index("<section")
    text = banner_text(page)
    assert "Residual-risk gate: pass : μ+σ = 0.74 against threshold 5" in text
    assert "Audits: 3 of 4 passed ; failed: membership" in text
    assert "reported only, held to no threshold and not counted: plain_sight" in text
    assert "not champion : failed audit(s): membership" in text
    assert "summary.rouge1 (↑ higher is better) adapter 0.33 against base model 0.15" in text
    assert "difference +0.18, over 20 held-out examples; no confidence interval" in text
    # the model card sits beside the page in the bundle, linked from the verdict
    assert '<a href="model_card.html">model_card.html</a>' in page[: page.index("<section")]


@pytest.mark.parametrize(
    ("difference", "said"),
    [
        ((0.05, 0.31), "the adapter is better"),
        ((-0.04, 0.31), "the difference is within chance"),
        ((-0.3, -0.02), "the base model is better"),
    ],
)
def test_the_banner_gives_the_headline_score_its_intervals_and_what_they_show(
    difference: tuple[float, float], said: str
) -> None:
    metrics = stage_metrics()
    metrics["evaluate"] = {
        **metrics["evaluate"],
        "intervals": {
            "summary.rouge1": {
                "adapter": {"estimate": 0.33, "low": 0.29, "high": 0.37},
                "base": {"estimate": 0.15, "low": 0.12, "high": 0.19},
                "adapter_minus_base": {
                    "estimate": 0.18,
                    "low": difference[0],
                    "high": difference[1],
                },
            }
        },
    }
    facts = ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE)
    text = banner_text(compliance_report_html(facts, None, utility_png=None))
    assert "adapter 0.33 [0.29, 0.37] against base model 0.15 [0.12, 0.19]" in text
    assert f"difference +0.18 [{difference[0]:.3g}, {difference[1]:.3g}]" in text
    assert f"95% bootstrap intervals over held-out conversations: {said}" in text
