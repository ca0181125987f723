"""The compliance report: one self-contained HTML page an auditor reads top to bottom.

What data came in (every dataset with its source and licence), what anonymization removed,
the residual risk against the gate, the audits against their thresholds, the utility, the
sensitive information in the model's summaries (the judge's scores per setting), and the
decision. Inline CSS, charts as PNG data URIs, no scripts, no external resource (the one link,
to the gate's page, is relative, inside the bundle). The page is the template
``templates/report.html``, autoescaped: every string from data is escaped. What is here
gathers each section's facts; the template says them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from components.core.html import Pages
from components.export.audit_evidence import audit_evidence
from components.export.charts import audit_chart_png, utility_chart_png, zero_figures
from components.export.facts import (
    PLAIN_SIGHT_COLUMNS,
    PLAIN_SIGHT_INTRO,
    ExportFacts,
    UtilityRow,
    audit_rows,
    flat_numbers,
    format_value,
    lower_is_better,
    plain_sight_figures,
    plain_sight_rows,
    threshold_pairs,
    utility_rows,
    with_interval,
)
from components.export.verdict import verdict
from components.ingest import DATASET, SENSITIVE, mixed_in_statement
from components.risk import risk_sources_statement

GATE_PAGE = "gate/validation.html"  # the gate's validation page, beside the report

SECTIONS = (
    ("data", "1. What data"),
    ("removed", "2. What anonymization removed"),
    ("residual-risk", "3. Residual risk against the gate"),
    ("audits", "4. Audits against their thresholds"),
    ("utility", "5. Utility"),
    ("sensitive", "6. Sensitive information in outputs"),
    ("decision", "7. Decision"),
    ("lineage", "Lineage"),
)

_NUMBER = re.compile(r"[−-]?\d[\d.]*(e[-+]?\d+)?")


def _number_like(text: str) -> bool:
    """Whether a table cell reads as a number (it aligns right)."""
    return _NUMBER.fullmatch(text) is not None


_PAGES = Pages(
    "components.export", filters={"fmt": format_value}, tests={"number_like": _number_like}
)
_INGEST_FACTS = (
    ("conversations", "n_conversations"),
    ("turns", "n_turns"),
    ("characters", "n_characters"),
    ("labelled PI mentions", "n_pi_mentions"),
    ("training conversations", "n_train"),
    ("held-out conversations", "n_heldout"),
)
_RISK_COLUMNS = ("count", "mean", "std", "p95", "max", "mu_plus_sigma")


def _data_section(facts: ExportFacts) -> dict[str, Any]:
    ingest = facts.stage("ingest")
    return {
        "datasets": [[d.title, d.n_conversations, d.source, d.licence] for d in facts.datasets()],
        "mixed_in": mixed_in_statement(facts.datasets()),
        "ingest": [(label, ingest.get(key)) for label, key in _INGEST_FACTS],
        "by_context": sorted((ingest.get("by_context") or {}).items()),
    }


def _removed_section(facts: ExportFacts) -> dict[str, Any]:
    anonymize = facts.stage("anonymize")
    config = facts.params.get("anonymize") or {}
    removed = facts.removed_by_type()
    total = anonymize.get("n_replacements", sum(v for v in removed.values() if isinstance(v, int)))
    return {
        "total": total,
        "n_conversations": anonymize.get("n_conversations"),
        "replacement": config.get("replacement"),
        "score_threshold": config.get("score_threshold"),
        "by_type": sorted(removed.items(), key=lambda kv: (-kv[1], kv[0])),
        "models": [[m.role, m.title, m.source, m.licence] for m in facts.detection_models()],
        **_policy_lists(facts.policy),
    }


def _policy_lists(policy: Mapping[str, Any]) -> dict[str, str]:
    """The exclusion lists and custom dictionaries by type, with their term counts."""
    exclusions = policy.get("exclusions") or {}
    dictionaries = policy.get("dictionaries") or {}
    excluded = ", ".join(f"{t} ({n} terms)" for t, n in sorted(exclusions.items())) or "none"
    redacted = (
        ", ".join(f"{t} ({d.get('n_terms')} terms)" for t, d in sorted(dictionaries.items()))
        or "none"
    )
    return {"excluded": excluded, "redacted": redacted}


def _risk_section(facts: ExportFacts, histogram_png: bytes | None) -> dict[str, Any]:
    risk, gate = facts.stage("risk"), facts.stage("gate")
    return {
        "source": risk.get("source"),
        "sources": risk_sources_statement(risk),
        "statistic": gate.get("mu_plus_sigma", risk.get("mu_plus_sigma")),
        "threshold": gate.get("threshold", (facts.params.get("gate") or {}).get("threshold")),
        "passed": gate.get("passed"),
        "n_failed": gate.get("n_failed_expectations"),
        "n_expectations": gate.get("n_expectations"),
        "by_context": [
            [name, *(stats.get(c) for c in _RISK_COLUMNS)]
            for name, stats in sorted((risk.get("by_context") or {}).items())
        ],
        "total": [risk.get(c) for c in _RISK_COLUMNS],
        "histogram_png": histogram_png,
        "review": _review_sample(facts.review),
    }


def _review_sample(review: Mapping[str, Any]) -> dict[str, Any]:
    def counted(key: str) -> str:
        masked = review.get(key) or {}
        return ", ".join(f"{n} {t}" for t, n in sorted(masked.items())) if masked else "none"

    return {
        "n_records": review.get("n_records"),
        "residual_masked": counted("residual_masked"),
        "detector_masked": counted("detector_masked"),
    }


def _audits_section(facts: ExportFacts) -> dict[str, Any]:
    audit = facts.stage("audit")
    rows = audit_rows(audit)
    pairs = [p for r in rows for p in threshold_pairs(r)]
    return {
        "rows": [audit_evidence(r) for r in rows],
        "passed": audit.get("passed"),
        "corpus": audit.get("train_corpus"),
        "chart_png": audit_chart_png(pairs) if pairs else None,
        "zero_figures": zero_figures(pairs),
        # The plain-sight audit by view, or why it measured nothing; neither if it did not run.
        "plain_sight_intro": PLAIN_SIGHT_INTRO,
        "plain_sight_columns": PLAIN_SIGHT_COLUMNS,
        "plain_sight_rows": plain_sight_rows(audit),
        "plain_sight_reason": plain_sight_figures(audit).get("not_computed"),
    }


# The datasets evaluate scores apart, by the prefix of their metrics; the rest is the main
# corpus (the embedded one or the user's).
DATASET_TITLES = {DATASET: "DialogSum", SENSITIVE: "sensitive-information calls"}
MAIN_TITLE = "main corpus"


def _utility_section(facts: ExportFacts, utility_png: bytes | None) -> dict[str, Any]:
    evaluate = facts.stage("evaluate")
    rows = utility_rows(evaluate, facts.utility_intervals)
    return {
        "n_conversations": evaluate.get("n_conversations"),
        "variant": evaluate.get("variant"),
        "every_interval": facts.utility_intervals is not None,
        "groups": utility_groups(rows),
        "chart_png": utility_chart_png(rows),
        "report": _utility_report(facts.utility_report, utility_png),
    }


def utility_groups(rows: list[UtilityRow]) -> list[tuple[str, list[list[Any]]]]:
    """The utility table's rows by dataset, the main corpus first, each row with the
    direction that is better (↑ or ↓)."""
    groups: dict[str, list[list[Any]]] = {}
    for row in rows:
        head = row.metric.split(".")[0]
        groups.setdefault(DATASET_TITLES.get(head, MAIN_TITLE), []).append(_utility_row(row))
    order = [MAIN_TITLE, *DATASET_TITLES.values()]
    return sorted(groups.items(), key=lambda kv: order.index(kv[0]))


def _utility_row(row: UtilityRow) -> list[Any]:
    better = "↓ lower" if lower_is_better(row.metric) else "↑ higher"
    return [
        row.metric,
        row.n,
        with_interval(row.adapter, row.adapter_interval),
        with_interval(row.base, row.base_interval),
        with_interval(row.delta, row.delta_interval, signed=True),
        better,
    ]


def _utility_report(report: Mapping[str, Any] | None, png: bytes | None) -> dict[str, Any] | None:
    """The privacy–utility report's variants and comparison; None when there is none."""
    if report is None:
        return None
    variants = report.get("variants") or {}
    keys = sorted({k for v in variants.values() for k in _numeric_keys(v.get("metrics") or {})})
    return {
        "metrics": keys,
        "rows": [
            [name, body.get("run"), *((body.get("metrics") or {}).get(k) for k in keys)]
            for name, body in sorted(variants.items())
        ],
        "comparison": sorted((report.get("comparison") or {}).items()),
        "png": png,
    }


def _numeric_keys(metrics: Mapping[str, Any]) -> list[str]:
    return [k for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)]


# The judge's scores; no other metric of evaluate.json bears these names. The task they
# score is the key's part that names a summary (private_summary, dual_summary).
SUMMARY_SCORES = ("privacy", "completeness", "acceptable_rate")


def _sensitive_section(facts: ExportFacts) -> dict[str, Any]:
    """The judge's scores of the privacy-preserving summaries (``[dataset.]<task>.[setting.]
    <score>`` in evaluate.json), a row per task, dataset and setting, the adapter beside the
    base model; no rows when evaluate judged none."""
    evaluate = facts.stage("evaluate")
    adapter = flat_numbers(evaluate.get("adapter") or {})
    base = flat_numbers(evaluate.get("base") or {})
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for key in sorted(adapter):
        head, _, score = key.rpartition(".")
        parts = head.split(".")
        tasks = [i for i, part in enumerate(parts) if part.endswith("_summary")]
        if score not in SUMMARY_SCORES or not tasks:
            continue
        at = tasks[0]
        name = ".".join(parts[: at + 1])  # [dataset.]task
        setting = ".".join(parts[at + 1 :]) or "all settings"
        row = groups.setdefault((name, setting), {})
        row[score] = (adapter[key], base.get(key))
    rows = [
        [name, setting, *(v for score in SUMMARY_SCORES for v in row.get(score, (None, None)))]
        for (name, setting), row in sorted(groups.items(), key=lambda item: _setting_order(item[0]))
    ]
    return {"rows": rows, "scores": SUMMARY_SCORES}


def _setting_order(key: tuple[str, str]) -> tuple[str, int, str]:
    name, setting = key
    return (name, setting != "all settings", setting)


def _decision_section(facts: ExportFacts) -> dict[str, Any]:
    decided = facts.decision()
    return {
        "facts": [
            ("residual-risk gate", "pass" if facts.stage("gate").get("passed") else "fail"),
            ("audits", "pass" if facts.stage("audit").get("passed") else "fail"),
            ("registered model", decided.model_name),
            ("version", decided.model_version),
            ("aliases", list(decided.aliases) or "none"),
            ("aliases read from", decided.aliases_source),
        ],
        "champion": decided.champion,
        "reason": decided.reason,
        "champion_version": decided.champion_version,
    }


def _lineage_section(facts: ExportFacts) -> list[tuple[str, Any]]:
    lineage = facts.lineage
    mlflow = lineage.get("mlflow") or {}
    signing = lineage.get("signing") or {}
    return [
        ("created (UTC)", lineage.get("created_at")),
        ("git commit", lineage.get("git_commit")),
        ("dvc.lock sha256", lineage.get("dvc_lock_sha256")),
        ("params hash", lineage.get("params_hash")),
        ("MLflow pipeline run", mlflow.get("pipeline_run_id")),
        ("MLflow export run", mlflow.get("export_run_id")),
        ("signing key (Ed25519) sha256", signing.get("public_key_sha256", "unsigned")),
    ]


def compliance_report_html(
    facts: ExportFacts, histogram_png: bytes | None, *, utility_png: bytes | None
) -> str:
    """The report page: the verdict banner, then the sections of ``SECTIONS`` in order.

    Args:
        histogram_png: the risk stage's histogram, embedded as it is.
        utility_png: the utility report's chart, when there is a utility report.
    """
    decided = facts.decision()
    content = {
        "data": _data_section(facts),
        "removed": _removed_section(facts),
        "residual-risk": _risk_section(facts, histogram_png),
        "audits": _audits_section(facts),
        "utility": _utility_section(facts, utility_png),
        "sensitive": _sensitive_section(facts),
        "decision": _decision_section(facts),
        "lineage": _lineage_section(facts),
    }
    return _PAGES.render(
        "report.html",
        title=f"Compliance report: {decided.model_name} version {decided.model_version}",
        sections=SECTIONS,
        content=content,
        gate_page=GATE_PAGE,
        verdict_facts=verdict(facts),
        created_at=facts.lineage.get("created_at"),
    )
