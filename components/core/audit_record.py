"""``metrics/audit.json`` and its detail file: which of an audit's figures are metrics.

DVC prints a column per key of every metrics file, and a figure that maps items to values
(each canary, each info type the detector found, each view of the corpus) is as many
columns as there are items: thousands of characters in ``dvc metrics show``. So the audit's
metrics file keeps, per audit, its verdict, its thresholds and the figures they hold
(``max_x`` bounds ``x``; the canaries' exposure by repetition is one value per repetition):
what decides, and what runs are compared on. Every other figure moves, under the same audit
and figure names, to the detail file the audit stage declares as a plain output
(``paths.AUDIT_DETAILS``); ``with_details`` puts them back for a reader that shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Figures = Mapping[str, Any]


def bound_figure(threshold: str, figures: Figures) -> str | None:
    """The figure a numeric threshold holds: ``max_x``/``min_x`` bounds the figure ``x``,
    else the shortest figure named ``<prefix>_x`` (``max_auc`` → ``mia_auc``, ``max_leaks``
    → ``n_leaks``); only a figure with a number, or a mapping with numbers, is held."""
    if not threshold.startswith(("max_", "min_")):
        return None
    target = threshold[4:]
    candidates = [
        (figure != target, len(figure), figure)
        for figure, value in figures.items()
        if (figure == target or figure.endswith("_" + target)) and _has_numbers(value)
    ]
    return min(candidates)[2] if candidates else None


def split_details(summary: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``audit_summary``'s record as ``(metrics, details)``: each audit's figures that no
    threshold holds move to ``details[audit][figure]``."""
    metrics = {k: v for k, v in summary.items() if k != "audits"}
    audits: dict[str, Any] = {}
    details: dict[str, Any] = {}
    for name, result in (summary.get("audits") or {}).items():
        figures = dict(result.get("figures") or {})
        thresholds = result.get("thresholds") or {}
        held = {bound_figure(t, figures) for t in thresholds}
        moved = {k: v for k, v in figures.items() if k not in held}
        audits[name] = {
            **result,
            "figures": {k: v for k, v in figures.items() if k not in moved},
        }
        if moved:
            details[name] = moved
    if "audits" in summary:
        metrics["audits"] = audits
    return metrics, details


def with_details(metrics: Mapping[str, Any], details: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics/audit.json``'s record with the detail file's figures back in each audit."""
    audits = metrics.get("audits")
    if not isinstance(audits, Mapping):
        return dict(metrics)
    merged = {}
    for name, result in audits.items():
        extra = details.get(name) if isinstance(result, Mapping) else None
        if isinstance(extra, Mapping):
            result = {**result, "figures": {**(result.get("figures") or {}), **extra}}
        merged[name] = result
    return {**metrics, "audits": merged}


def _has_numbers(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_is_number(v) for v in value.values())
    return _is_number(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
