"""The verdict of an export in one place: the residual-risk gate, the audits, the champion
decision and the headline utility against the base model.

Plain data, no markup: the compliance report's banner renders it, and any other surface
(an MLflow description, a Prefect summary) can state the same verdict from the same facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.core.headline import HEADLINE_METRICS, reported_only
from components.export.facts import (
    AuditRow,
    Bounds,
    ExportFacts,
    UtilityRow,
    audit_rows,
    lower_is_better,
    utility_rows,
)


@dataclass(frozen=True)
class UtilityHeadline:
    """The adapter's main task score beside the base model's, over ``n`` held-out examples,
    with the 95% bootstrap intervals evaluate recorded (None for a run from before it did):
    each model's, and the paired difference adapter − base's."""

    metric: str
    adapter: float | None
    base: float | None
    n: int | None
    higher_is_better: bool
    adapter_interval: Bounds | None = None
    base_interval: Bounds | None = None
    delta_interval: Bounds | None = None

    @property
    def delta(self) -> float | None:
        return None if self.adapter is None or self.base is None else self.adapter - self.base

    @property
    def better(self) -> str | None:
        """``adapter`` or ``base`` when the difference's interval leaves out zero, ``neither``
        when it holds zero; None without an interval."""
        if self.delta_interval is None:
            return None
        low, high = self.delta_interval
        if low <= 0 <= high:
            return "neither"
        return "adapter" if (low > 0) == self.higher_is_better else "base"


@dataclass(frozen=True)
class Verdict:
    """What an auditor wants first: did the corpus pass the gate, did the model pass its
    audits, is it champion, and is it better than the base model.

    Attributes:
        audits_passed: audits held to a threshold that passed.
        audits_held: audits held to a threshold (the reported-only ones are not counted).
        audits_reported: audits that report figures and hold them to no threshold.
    """

    gate_passed: bool | None
    gate_statistic: float | None
    gate_threshold: float | None
    audits_passed: int
    audits_held: int
    audits_failed: tuple[str, ...]
    audits_reported: tuple[str, ...]
    champion: bool
    champion_reason: str
    utility: UtilityHeadline | None


def is_reported_only(row: AuditRow) -> bool:
    """An audit with no threshold reports figures and never fails: it is no pass."""
    return reported_only({"thresholds": row.thresholds})


def verdict(facts: ExportFacts) -> Verdict:
    """The export's verdict, read from the stage metrics of ``facts``."""
    gate, risk = facts.stage("gate"), facts.stage("risk")
    rows = audit_rows(facts.stage("audit"))
    held = [r for r in rows if not is_reported_only(r)]
    decided = facts.decision()
    return Verdict(
        gate_passed=_bool(gate.get("passed")),
        gate_statistic=_number(gate.get("mu_plus_sigma", risk.get("mu_plus_sigma"))),
        gate_threshold=_number(
            gate.get("threshold", (facts.params.get("gate") or {}).get("threshold"))
        ),
        audits_passed=sum(r.passed is True for r in held),
        audits_held=len(held),
        audits_failed=tuple(r.name for r in held if r.passed is False),
        audits_reported=tuple(r.name for r in rows if is_reported_only(r)),
        champion=decided.champion,
        champion_reason=decided.reason,
        utility=utility_headline(facts.stage("evaluate")),
    )


def utility_headline(evaluate: Mapping[str, Any]) -> UtilityHeadline | None:
    """The first of ``HEADLINE_METRICS`` that evaluate scored; None when it scored none."""
    rows = {r.metric: r for r in utility_rows(evaluate)}
    for metric in HEADLINE_METRICS:
        if metric in rows:
            return _headline(rows[metric])
    return None


def _headline(row: UtilityRow) -> UtilityHeadline:
    return UtilityHeadline(
        row.metric,
        row.adapter,
        row.base,
        row.n,
        higher_is_better=not lower_is_better(row.metric),
        adapter_interval=row.adapter_interval,
        base_interval=row.base_interval,
        delta_interval=row.delta_interval,
    )


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
