"""The audits in words, the audit and utility charts' axes, the utility table's groups."""

from __future__ import annotations

import re
from typing import Any

from components.export.audit_evidence import audit_evidence
from components.export.charts import audit_figure, utility_figure, zero_figures
from components.export.facts import ExportFacts, audit_rows, threshold_pairs, utility_rows
from components.export.report import compliance_report_html
from tests.export.fixtures import LINEAGE, PARAMS, REGISTRY, stage_metrics
from tests.export.test_charts import EVALUATE

PLAIN_SIGHT = {
    "passed": True,
    "figures": {
        "n_with_residual": 1,
        "anonymized": {"n_conversations": 1, "rarity_auc": 0.5, "lm_auc": 1.0},
    },
}


def audit_metrics() -> dict[str, Any]:
    """The fixture's audits as a default run writes them: exposure keys in JSON's string
    order, detector findings beside the inventory's count, plain sight on one conversation."""
    audit: dict[str, Any] = stage_metrics()["audit"]
    audits = audit["audits"]
    audits["canary"]["figures"]["canary_exposure"] = {"1": 3.1, "16": 2.1, "4": 0.8}
    audits["pii_output"]["figures"]["detector_findings_by_type"] = {
        "PHONE_NUMBER": 2,
        "USER_NAME": 31,
    }
    audits["plain_sight"] = PLAIN_SIGHT
    return audit


def evidence() -> dict[str, Any]:
    return {row.name: audit_evidence(row) for row in audit_rows(audit_metrics())}


def test_audits_are_said_in_words_with_units_and_limits() -> None:
    said = evidence()
    assert said["canary"].sentences[0] == (
        "Canary exposure 3.1 bits at 1 repetition; 0.8 bits at 4 repetitions; "
        "2.1 bits at 16 repetitions; limit 6 bits."
    )
    assert said["extraction"].sentences == (
        "2.0% of 50 training prefixes continued with their next 16 tokens verbatim; limit 20.0%.",
    )
    assert "ROC AUC 0.81 (0.5 = chance)" in said["membership"].sentences[0]
    assert (said["membership"].result, said["canary"].result) == ("fail", "pass")


def test_a_reported_only_audit_is_reported_never_a_pass() -> None:
    plain_sight = evidence()["plain_sight"]
    assert plain_sight.result == "reported"
    assert "Measured on 1 conversation(s)" in plain_sight.sentences[0]
    page = compliance_report_html(
        ExportFacts({**stage_metrics(), "audit": audit_metrics()}, PARAMS, REGISTRY, LINEAGE),
        None,
        utility_png=None,
    )
    row = re.search(r"<tr><td>plain_sight</td><td>(.*?)</td>", page)
    assert row is not None and "reported" in row.group(1) and "pass" not in row.group(1)


def test_detector_findings_are_reported_and_said_not_to_count() -> None:
    (inventory, detector) = evidence()["pii_output"].sentences
    assert inventory == ("0 value(s) of the PI inventory repeated in 40 outputs (none), limit 0.")
    assert detector.startswith("Detector findings, reported and not counted")
    assert detector.endswith("PHONE_NUMBER 2, USER_NAME 31.")


def test_an_unknown_audit_is_listed_figure_by_figure_in_numeric_order() -> None:
    row = audit_rows({"audits": {"novel": {"passed": True, "figures": {"x": {"10": 1, "2": 3}}}}})
    assert audit_evidence(row[0]).sentences == ("x: 2: 3, 10: 1.",)
    assert audit_evidence(row[0]).result == "reported"  # no threshold: it cannot fail


def test_audit_chart_axes_are_titled_in_numeric_order_and_zeros_are_said() -> None:
    pairs = [p for r in audit_rows(audit_metrics()) for p in threshold_pairs(r)]
    figure = audit_figure(pairs)
    assert figure is not None
    panels = {a.get_title(): a for a in figure.axes}
    assert "pii_output: n_leaks" not in panels  # all zero: a sentence instead
    assert zero_figures(pairs) == [
        "pii_output: inventory values leaked (count) is 0 (limit 0); no chart."
    ]
    canary = panels["canary: canary_exposure"]
    assert [t.get_text() for t in canary.get_xticklabels()] == ["1", "4", "16"]
    assert canary.get_ylabel() == "exposure (bits)"
    assert canary.get_xlabel() == "repetitions of the canary in training"
    for axes in figure.axes:
        assert axes.get_xlabel() and axes.get_ylabel()


def test_utility_chart_axes_are_titled() -> None:
    figure = utility_figure(utility_rows(EVALUATE))
    assert figure is not None and len(figure.axes) == 2
    for axes in figure.axes:
        assert axes.get_xlabel() and axes.get_ylabel()
    assert {a.get_ylabel() for a in figure.axes} == {
        "score, 0–1 (↑ higher is better)",
        "perplexity or loss (↓ lower is better)",
    }


def test_utility_is_grouped_by_dataset_with_the_better_direction() -> None:
    metrics = {**stage_metrics(), "evaluate": EVALUATE}
    page = compliance_report_html(
        ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE), None, utility_png=None
    )
    utility = page[page.index('<section id="utility">') : page.index('<section id="sensitive">')]
    assert utility.index("<h3>main corpus</h3>") < utility.index("<h3>DialogSum</h3>")
    main = utility[utility.index("<h3>main corpus</h3>") : utility.index("<h3>DialogSum</h3>")]
    assert "dialogsum." not in main and "summary.rouge1" in main
    assert re.search(r"<td>perplexity_raw</td>.*?<td>↓ lower</td>", main)
    assert re.search(r"<td>summary.rouge1</td>.*?<td>↑ higher</td>", main)
    assert "headline score's 95% bootstrap intervals are in the verdict" in utility


# data/evaluate/intervals.json's ``metrics`` for two of EVALUATE's scores.
INTERVALS = {
    "summary.rouge1": {
        "adapter": {"estimate": 0.3263, "low": 0.2771, "high": 0.3683, "n": 29},
        "base": {"estimate": 0.15, "low": 0.125, "high": 0.194, "n": 29},
        "adapter_minus_base": {"estimate": 0.1763, "low": 0.121, "high": 0.2302, "n": 29},
    },
    "dialogsum.perplexity_raw": {
        "adapter": {"estimate": 13.8531, "low": 12.2, "high": 15.61, "n": 27},
        "base": {"estimate": 13.8531, "low": 12.2, "high": 15.61, "n": 27},
        "adapter_minus_base": {"estimate": 0.0, "low": -0.4, "high": 0.38, "n": 27},
    },
}


def test_every_utility_score_is_shown_with_its_interval_and_n() -> None:
    metrics = {**stage_metrics(), "evaluate": EVALUATE}
    facts = ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE, utility_intervals=INTERVALS)
    page = compliance_report_html(facts, None, utility_png=None)
    utility = page[page.index('<section id="utility">') : page.index('<section id="sensitive">')]
    cells = r"<td>{}</td><td[^>]*>{}</td><td[^>]*>{}</td><td[^>]*>{}</td><td[^>]*>{}</td>"
    assert re.search(
        cells.format(
            "summary.rouge1", "29", r"0.326 \[0.277, 0.368\]", r"0.15 \[0.125, 0.194\]",
            r"\+0.176 \[0.121, 0.23\]",
        ),
        utility,
    ), utility  # fmt: skip
    assert re.search(
        cells.format(
            "dialogsum.perplexity_raw", "27", r"13.9 \[12.2, 15.6\]", r"13.9 \[12.2, 15.6\]",
            r"\+0 \[-0.4, 0.38\]",
        ),
        utility,
    ), utility  # fmt: skip
    # a score evaluate recorded no interval for is its point value
    assert re.search(r"<td>purpose.macro_f1</td><td[^>]*>29</td><td[^>]*>0.2531</td>", utility)
    assert "95% bootstrap interval" in utility and "paired difference" in utility
