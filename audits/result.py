"""The shape every audit returns, and the audit stage's summary of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AuditResult:
    """One audit's verdict: its figures and the thresholds they were held to."""

    name: str
    passed: bool
    figures: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return {"passed": self.passed, "figures": self.figures, "thresholds": self.thresholds}


def audit_summary(results: Sequence[AuditResult], train_corpus: str) -> dict[str, Any]:
    """``metrics/audit.json``: passed only when every selected audit passed."""
    return {
        "passed": all(r.passed for r in results),
        "train_corpus": train_corpus,
        "audits": {r.name: r.to_record() for r in results},
    }
