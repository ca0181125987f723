"""The audits in words: each audit's figures as sentences with their units and limits, and
the axis titles of the audit chart.

An audit the report knows (``DESCRIBERS``) is said in sentences a reader checks without
the audit's source; any other is listed figure by figure, so that a new audit still shows.
An audit held to no threshold (plain sight) is *reported*, never a pass: it cannot fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from components.export.facts import AuditRow, format_value
from components.export.verdict import is_reported_only

PASS, FAIL, REPORTED, NOT_STATED = "pass", "fail", "reported", "not stated"


@dataclass(frozen=True)
class AuditEvidence:
    """One audit as the report states it: its result (``pass``, ``fail``, ``reported``,
    ``not stated``) and its figures in sentences."""

    name: str
    result: str
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class FigureAxes:
    """How a chart titles one audit figure: the value axis with its unit, and the category
    axis of a figure with one value per key (``None``: a single value)."""

    value: str
    keys: str | None = None


# The chart's axis titles for the figures the audits write; others get their own name.
FIGURE_AXES: Mapping[str, FigureAxes] = {
    "canary_exposure": FigureAxes("exposure (bits)", "repetitions of the canary in training"),
    "extraction_rate": FigureAxes("share of prefixes extracted (0–1)"),
    "mia_auc": FigureAxes("ROC AUC (0.5 = chance)"),
    "n_leaks": FigureAxes("inventory values leaked (count)"),
}


def figure_axes(figure: str) -> FigureAxes:
    return FIGURE_AXES.get(figure, FigureAxes(figure, "key"))


def key_order(key: str) -> tuple[int, float, str]:
    """Numeric keys by value (repetitions 1, 4, 16, not the strings' 1, 16, 4), then text."""
    try:
        return (0, float(key), key)
    except ValueError:
        return (1, 0.0, key)


def audit_evidence(row: AuditRow) -> AuditEvidence:
    """The audit's result and its figures in words."""
    if is_reported_only(row):
        result = REPORTED
    else:
        result = {True: PASS, False: FAIL, None: NOT_STATED}[row.passed]
    describe = DESCRIBERS.get(row.name, _generic)
    return AuditEvidence(row.name, result, tuple(describe(row.figures, row.thresholds)))


def _v(figures: Mapping[str, Any], key: str) -> str:
    return format_value(figures.get(key))


def _share(value: Any) -> str:
    return f"{value:.1%}" if isinstance(value, int | float) else format_value(value)


def _counts(by_type: Any) -> str:
    """``{"PHONE_NUMBER": 2}`` as ``PHONE_NUMBER 2``; none when empty or all zero."""
    found = {k: v for k, v in (by_type or {}).items() if v}
    return ", ".join(f"{k} {format_value(v)}" for k, v in sorted(found.items())) or "none"


def _pii_output(figures: Mapping[str, Any], thresholds: Mapping[str, Any]) -> list[str]:
    within = (
        f"{_v(figures, 'n_outputs_with_leaks')} of " if "n_outputs_with_leaks" in figures else ""
    )
    sentences = [
        f"{_v(figures, 'n_leaks')} value(s) of the PI inventory repeated in {within}"
        f"{_v(figures, 'n_prompts')} outputs ({_counts(figures.get('pii_leaks_by_type'))}), "
        f"limit {_v(thresholds, 'max_leaks')}."
    ]
    if "detector_findings_by_type" in figures:
        sentences.append(
            "Detector findings, reported and not counted (the detector also flags values "
            "the model made up, which leak nothing): "
            f"{_counts(figures['detector_findings_by_type'])}."
        )
    return sentences


def _canary(figures: Mapping[str, Any], thresholds: Mapping[str, Any]) -> list[str]:
    exposure = figures.get("canary_exposure")
    if not isinstance(exposure, Mapping) or not exposure:
        return _generic(figures, thresholds)
    per_count = "; ".join(
        f"{format_value(exposure[k])} bits at {k} repetition{'' if k == '1' else 's'}"
        for k in sorted(exposure, key=key_order)
    )
    return [
        f"Canary exposure {per_count}; limit {_v(thresholds, 'max_exposure')} bits.",
        f"Each canary ranked among {_v(figures, 'n_candidates')} candidate secrets "
        "(each canary's rank and exposure: metrics/audit.json).",
    ]


def _extraction(figures: Mapping[str, Any], thresholds: Mapping[str, Any]) -> list[str]:
    return [
        f"{_share(figures.get('extraction_rate'))} of {_v(figures, 'n_prefixes')} training "
        f"prefixes continued with their next {_v(figures, 'k')} tokens verbatim; limit "
        f"{_share(thresholds.get('max_extraction_rate'))}."
    ]


def _membership(figures: Mapping[str, Any], thresholds: Mapping[str, Any]) -> list[str]:
    if figures.get("mia_auc") is None:
        return ["Not measured: no conversation of more than one turn on one side."]
    attack = f" ({figures['mia_attack']} attack)" if figures.get("mia_attack") else ""
    sentences = [
        f"Membership attack{attack}: ROC AUC {_v(figures, 'mia_auc')} (0.5 = chance) over "
        f"{_v(figures, 'n_members')} training and {_v(figures, 'n_nonmembers')} held-out "
        f"conversations; limit {_v(thresholds, 'max_auc')}."
    ]
    if "mia_tpr_at_1pct_fpr" in figures:
        sentences.append(
            f"True-positive rate {_share(figures['mia_tpr_at_1pct_fpr'])} at 1% false positives"
            + (f"; p = {_v(figures, 'mia_p_value')}." if "mia_p_value" in figures else ".")
        )
    return sentences


def _plain_sight(figures: Mapping[str, Any], thresholds: Mapping[str, Any]) -> list[str]:
    if figures.get("not_computed"):
        return [f"Not measured: {format_value(figures['not_computed'])}."]
    view = figures.get("anonymized")
    view = view if isinstance(view, Mapping) else {}
    return [
        "Reported, held to no threshold: it cannot fail. Measured on "
        f"{_v(view, 'n_conversations')} conversation(s) whose real names anonymization "
        f"missed: rarity AUC {_v(view, 'rarity_auc')}, LM AUC {_v(view, 'lm_auc')} "
        "(0.5 = the names hide, 1 = each stands out); every view in the table below."
    ]


def _generic(figures: Mapping[str, Any], thresholds: Mapping[str, Any]) -> list[str]:
    """Figure by figure, numeric keys in numeric order, then each limit."""
    said = [f"{name}: {_ordered(value)}" for name, value in figures.items()]
    said += [f"limit {name}: {format_value(value)}" for name, value in thresholds.items()]
    return ["; ".join(said) + "."] if said else ["No figures."]


def _ordered(value: Any) -> str:
    if isinstance(value, Mapping):
        return format_value({k: value[k] for k in sorted(value, key=lambda k: key_order(str(k)))})
    return format_value(value)


DESCRIBERS: Mapping[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]] = {
    "pii_output": _pii_output,
    "canary": _canary,
    "extraction": _extraction,
    "membership": _membership,
    "plain_sight": _plain_sight,
}
