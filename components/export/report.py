"""The compliance report: one self-contained HTML page an auditor reads top to bottom.

What data came in (every dataset with its source and licence), what anonymization removed,
the residual risk against the gate, the audits against their thresholds, the utility, and the
decision. Inline CSS, charts as PNG data URIs, no scripts, no external resource (the one link,
to the gate's page, is relative, inside the bundle); every string from data is escaped.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from components.export.charts import audit_chart_png, utility_chart_png
from components.export.facts import (
    PLAIN_SIGHT_COLUMNS,
    PLAIN_SIGHT_INTRO,
    ExportFacts,
    UtilityRow,
    audit_rows,
    format_value,
    plain_sight_figures,
    plain_sight_rows,
    threshold_pairs,
    utility_rows,
)

GATE_PAGE = "gate/validation.html"  # the gate's validation page, beside the report

SECTIONS = (
    ("data", "1. What data"),
    ("removed", "2. What anonymization removed"),
    ("residual-risk", "3. Residual risk against the gate"),
    ("audits", "4. Audits against their thresholds"),
    ("utility", "5. Utility"),
    ("decision", "6. Decision"),
    ("lineage", "Lineage"),
)

_NUMBER = re.compile(r"[−-]?\d[\d.]*(e[-+]?\d+)?")
_CSS = """\
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 62em; color: #222;
  line-height: 1.45; }
h2 { border-bottom: 1px solid #bbb; padding-bottom: 0.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.7em; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #1a7f37; font-weight: bold; }
.fail { color: #c62828; font-weight: bold; }
.note { color: #555; }
img { max-width: 100%; }
code { font-family: ui-monospace, monospace; font-size: 0.9em; }
"""


def _e(value: Any) -> str:
    return html.escape(format_value(value))


def _verdict(passed: bool | None) -> str:
    if passed is None:
        return '<span class="note">not stated</span>'
    return '<span class="pass">pass</span>' if passed else '<span class="fail">fail</span>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table of pre-rendered (escaped) cells; numeric-looking cells align right."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(_cell(cell) for cell in row) + "</tr>" for row in rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _cell(cell: str) -> str:
    if _NUMBER.fullmatch(cell):
        return f'<td class="num">{cell}</td>'
    return f"<td>{cell}</td>"


def _image(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _facts_list(items: Iterable[tuple[str, Any]]) -> str:
    lines = (f"<li>{html.escape(label)}: <strong>{_e(v)}</strong></li>" for label, v in items)
    return f"<ul>{''.join(lines)}</ul>"


def _data_section(facts: ExportFacts) -> str:
    ingest = facts.stage("ingest")
    parts = [
        "<p>Datasets of the corpus; its training and held-out splits draw on each:</p>",
        _table(
            ["dataset", "conversations", "source", "licence"],
            [
                [_e(d.title), _e(d.n_conversations), _e(d.source), _e(d.licence)]
                for d in facts.datasets()
            ],
        ),
        _facts_list(
            (label, ingest.get(key))
            for label, key in (
                ("conversations", "n_conversations"),
                ("turns", "n_turns"),
                ("characters", "n_characters"),
                ("labelled PI mentions", "n_pi_mentions"),
                ("training conversations", "n_train"),
                ("held-out conversations", "n_heldout"),
            )
        ),
    ]
    by_context = ingest.get("by_context") or {}
    if by_context:
        rows = [[_e(name), _e(n)] for name, n in sorted(by_context.items())]
        parts.append(_table(["context", "conversations"], rows))
    return "\n".join(parts)


def _removed_section(facts: ExportFacts) -> str:
    anonymize = facts.stage("anonymize")
    config = facts.params.get("anonymize") or {}
    removed = facts.removed_by_type()
    total = anonymize.get("n_replacements", sum(v for v in removed.values() if isinstance(v, int)))
    parts = [
        f"<p>{_e(total)} spans replaced in {_e(anonymize.get('n_conversations'))} "
        f"conversations, as <code>{_e(config.get('replacement'))}</code> "
        f"(score threshold {_e(config.get('score_threshold'))}).</p>",
        _table(
            ["info type", "spans replaced"],
            [[_e(t), _e(n)] for t, n in sorted(removed.items(), key=lambda kv: (-kv[1], kv[0]))],
        ),
        _policy_paragraph(facts.policy),
    ]
    return "\n".join(parts)


def _policy_paragraph(policy: Mapping[str, Any]) -> str:
    exclusions = policy.get("exclusions") or {}
    dictionaries = policy.get("dictionaries") or {}
    excluded = ", ".join(f"{t} ({n} terms)" for t, n in sorted(exclusions.items())) or "none"
    redacted = (
        ", ".join(f"{t} ({d.get('n_terms')} terms)" for t, d in sorted(dictionaries.items()))
        or "none"
    )
    return (
        f"<p>Policy (in <code>policy/</code> of this bundle): exclusion lists, never redacted, "
        f"bundled verbatim: {html.escape(excluded)}. Custom dictionaries, always redacted: "
        f"{html.escape(redacted)}; they name people and companies, so the bundle holds their "
        "sha256 and term counts, not their terms.</p>"
    )


_RISK_COLUMNS = ("count", "mean", "std", "p95", "max", "mu_plus_sigma")


def _risk_section(facts: ExportFacts, histogram_png: bytes | None) -> str:
    risk, gate = facts.stage("risk"), facts.stage("gate")
    threshold = gate.get("threshold", (facts.params.get("gate") or {}).get("threshold"))
    statistic = gate.get("mu_plus_sigma", risk.get("mu_plus_sigma"))
    parts = [
        f"<p>Residual risk per conversation (0–5, source: {_e(risk.get('source'))}). Gate: "
        f"μ+σ = {_e(statistic)} against threshold {_e(threshold)} → {_verdict(gate.get('passed'))}"
        f" ({_e(gate.get('n_failed_expectations'))} of {_e(gate.get('n_expectations'))} Great "
        f'Expectations failed; each rule, its result and what it observed: <a href="{GATE_PAGE}">'
        f"<code>{GATE_PAGE}</code></a>, from <code>gate/validation.json</code>).</p>"
    ]
    rows = [
        [_e(name), *(_e(stats.get(c)) for c in _RISK_COLUMNS)]
        for name, stats in sorted((risk.get("by_context") or {}).items())
    ]
    rows.append(["<strong>total</strong>", *(_e(risk.get(c)) for c in _RISK_COLUMNS)])
    parts.append(_table(["context", "count", "mean", "std", "P95", "max", "μ+σ"], rows))
    if histogram_png:
        parts.append(_image(histogram_png, "Histogram of residual risk scores"))
    parts.append(_review_paragraph(facts.review))
    return "\n".join(parts)


def _review_paragraph(review: Mapping[str, Any]) -> str:
    def counted(key: str) -> str:
        masked = review.get(key) or {}
        return ", ".join(f"{n} {t}" for t, n in sorted(masked.items())) if masked else "none"

    return (
        f"<p>The review sample (<code>review/</code>, {_e(review.get('n_records'))} anonymized "
        "conversations) is bundled with each identifying value it still held masked as "
        "<code>[RESIDUAL_&lt;TYPE&gt;]</code>: inventory values "
        f"{html.escape(counted('residual_masked'))}; what the detector found "
        f"{html.escape(counted('detector_masked'))}.</p>"
    )


def _audits_section(facts: ExportFacts) -> str:
    audit = facts.stage("audit")
    rows = audit_rows(audit)
    if not rows:
        return "<p>No audit results in <code>metrics/audit.json</code>.</p>"
    table = _table(
        ["audit", "result", "figures", "thresholds"],
        [[_e(r.name), _verdict(r.passed), _e(r.figures), _e(r.thresholds)] for r in rows],
    )
    corpus = audit.get("train_corpus")
    parts = [
        f"<p>Overall: {_verdict(audit.get('passed'))}"
        + (f" (model trained on the {_e(corpus)} corpus)" if corpus else "")
        + ".</p>",
        table,
    ]
    chart = audit_chart_png([p for r in rows for p in threshold_pairs(r)])
    if chart:
        parts.append(_image(chart, "Audit figures against their thresholds"))
    parts += _plain_sight_parts(audit)
    return "\n".join(parts)


def _plain_sight_parts(audit: Mapping[str, Any]) -> list[str]:
    """The plain-sight audit by view, or why it measured nothing; none if it did not run."""
    rows = plain_sight_rows(audit)
    if rows:
        cells = [[_e(cell) for cell in row] for row in rows]
        return [f"<p>{html.escape(PLAIN_SIGHT_INTRO)}</p>", _table(PLAIN_SIGHT_COLUMNS, cells)]
    reason = plain_sight_figures(audit).get("not_computed")
    return [f"<p>Hiding in plain sight: not measured ({_e(reason)}).</p>"] if reason else []


def _utility_section(facts: ExportFacts, utility_png: bytes | None) -> str:
    evaluate = facts.stage("evaluate")
    rows = utility_rows(evaluate)
    parts = [
        f"<p>Held-out raw conversations: {_e(evaluate.get('n_conversations'))}; adapter trained "
        f"on the {_e(evaluate.get('variant'))} corpus, base model zero-shot. <em>n</em>: the "
        "held-out examples a score is over (conversations, for perplexity).</p>",
        _table(
            ["metric", "n", "adapter", "base", "adapter − base"], [_utility_row(r) for r in rows]
        ),
    ]
    chart = utility_chart_png(rows)
    if chart:
        parts.append(_image(chart, "Adapter and base model scores"))
    parts.append(_utility_report_part(facts.utility_report, utility_png))
    return "\n".join(parts)


def _utility_row(row: UtilityRow) -> list[str]:
    delta = None if row.adapter is None or row.base is None else row.adapter - row.base
    return [_e(row.metric), _e(row.n), _e(row.adapter), _e(row.base), _e(delta)]


def _utility_report_part(report: Mapping[str, Any] | None, png: bytes | None) -> str:
    if report is None:
        return (
            '<p class="note">No privacy–utility report was present at export time '
            "(<code>reports/utility/</code>): run <code>veiltune utility-report</code> after "
            "the baseline experiments, then <code>veiltune export</code> again.</p>"
        )
    variants = report.get("variants") or {}
    keys = sorted({k for v in variants.values() for k in _numeric_keys(v.get("metrics") or {})})
    rows = [
        [_e(name), _e(body.get("run")), *(_e((body.get("metrics") or {}).get(k)) for k in keys)]
        for name, body in sorted(variants.items())
    ]
    parts = [
        "<h3>Privacy–utility report (<code>utility/</code>)</h3>",
        _table(["variant", "run", *keys], rows),
        _facts_list(sorted((report.get("comparison") or {}).items())),
    ]
    if png:
        parts.append(_image(png, "Privacy-utility report chart"))
    return "\n".join(parts)


def _numeric_keys(metrics: Mapping[str, Any]) -> list[str]:
    return [k for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)]


def _decision_section(facts: ExportFacts) -> str:
    decided = facts.decision()
    status = (
        '<span class="pass">champion</span>'
        if decided.champion
        else '<span class="fail">not champion</span>'
    )
    holder = (
        f"version {html.escape(decided.champion_version)}"
        if decided.champion_version
        else "no version"
    )
    return "\n".join(
        [
            _facts_list(
                [
                    ("residual-risk gate", "pass" if facts.stage("gate").get("passed") else "fail"),
                    ("audits", "pass" if facts.stage("audit").get("passed") else "fail"),
                    ("registered model", decided.model_name),
                    ("version", decided.model_version),
                    ("aliases", list(decided.aliases) or "none"),
                    ("aliases read from", decided.aliases_source),
                ]
            ),
            f"<p>This version is {status}: {html.escape(decided.reason)}. The "
            f"<code>champion</code> alias currently points at {holder}.</p>",
        ]
    )


def _lineage_section(facts: ExportFacts) -> str:
    lineage = facts.lineage
    mlflow = lineage.get("mlflow") or {}
    signing = lineage.get("signing") or {}
    return _facts_list(
        [
            ("git commit", lineage.get("git_commit")),
            ("dvc.lock sha256", lineage.get("dvc_lock_sha256")),
            ("params hash", lineage.get("params_hash")),
            ("MLflow pipeline run", mlflow.get("pipeline_run_id")),
            ("MLflow export run", mlflow.get("export_run_id")),
            ("signing key (Ed25519) sha256", signing.get("public_key_sha256", "unsigned")),
        ]
    ) + (
        '<p class="note">Every file of this bundle has its sha256 in <code>manifest.json</code>'
        " and <code>SHA256SUMS</code>; <code>manifest.sig</code> is the producer's signature "
        "over <code>manifest.json</code>. Check it with the producer's public key, obtained "
        "from them (its sha256 above), not with the bundle's copy; <code>VERIFY.md</code> "
        "says how to check all of it.</p>"
    )


def compliance_report_html(
    facts: ExportFacts, histogram_png: bytes | None, utility_png: bytes | None
) -> str:
    """The report page: the sections of ``SECTIONS`` in order.

    Args:
        histogram_png: the risk stage's histogram, embedded as it is.
        utility_png: the utility report's chart, when there is a utility report.
    """
    decided = facts.decision()
    title = f"Compliance report: {decided.model_name} version {decided.model_version}"
    bodies = {
        "data": _data_section(facts),
        "removed": _removed_section(facts),
        "residual-risk": _risk_section(facts, histogram_png),
        "audits": _audits_section(facts),
        "utility": _utility_section(facts, utility_png),
        "decision": _decision_section(facts),
        "lineage": _lineage_section(facts),
    }
    sections = [
        f'<section id="{key}">\n<h2>{html.escape(heading)}</h2>\n{bodies[key]}\n</section>'
        for key, heading in SECTIONS
    ]
    body = f"<h1>{html.escape(title)}</h1>\n" + "\n".join(sections)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>\n{_CSS}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )
