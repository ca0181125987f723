"""The verdict: gate, audits, champion and headline utility, first on the report."""

from __future__ import annotations

import re
from typing import Any

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
    page = compliance_report_html(facts_with_plain_sight(), None, None)
    assert page.index('<div id="verdict"') < page.index("<section")
    text = banner_text(page)
    assert "Residual-risk gate: pass : μ+σ = 0.74 against threshold 5" in text
    assert "Audits: 3 of 4 passed ; failed: membership" in text
    assert "reported only, held to no threshold and not counted: plain_sight" in text
    assert "not champion : failed audit(s): membership" in text
    assert (
        "summary.rouge1 (↑ higher is better) adapter 0.33 against base model 0.15 (+0.18)" in text
    )
    assert "over 20 held-out examples; no confidence interval" in text
