"""The gate's verdict: what the suite decided, and what ``metrics/gate.json`` records of it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.core.errors import InputError
from components.risk import SCORE_COLUMN

STATISTIC = "mu_plus_sigma"
# The type name GX derives from ExpectColumnMeanPlusStdToBeLessThan (a test holds them equal).
MEAN_PLUS_STD_TYPE = "expect_column_mean_plus_std_to_be_less_than"
MetricValue = bool | int | float | dict[str, float | None] | None


@dataclass(frozen=True)
class GateResult:
    """Outcome of the residual-risk gate.

    ``std`` is the population standard deviation (ddof=0) of the scores; ``mean``, ``std``
    and ``mu_plus_sigma`` are NaN when there is no score to aggregate (empty table, missing
    or non-numeric column). ``expectations`` holds one entry per expectation of the suite:
    ``{"expectation": type name, "column": column or None, "context": context or None,
    "success": bool, "observed": ...}`` where ``context`` is set only on a per-context μ+σ
    expectation and ``observed`` is the observed value, or the counts when there is none.

    ``by_context`` maps each context to its μ+σ (None where undefined) when the per-context
    gate ran, and is None when it did not; ``context_failures`` holds the contexts whose μ+σ
    expectation failed.
    """

    passed: bool
    mean: float
    std: float
    mu_plus_sigma: float
    threshold: float
    n_conversations: int
    expectations: list[dict[str, Any]]
    by_context: dict[str, float | None] | None = None
    context_failures: dict[str, float | None] = field(default_factory=dict)

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any], source: str) -> GateResult:
        """The verdict as ``metrics/gate.json`` records it (``source`` names it in errors).

        The file keeps the counts of the expectations, not their entries: ``expectations``
        is empty; read ``data/gate/validation.json`` for them.

        Raises:
            InputError: a key the verdict needs is missing.
        """
        missing = [k for k in ("passed", STATISTIC, "threshold") if k not in metrics]
        if missing:
            raise InputError(f"{source}: missing key '{missing[0]}'")

        def number(key: str) -> float:
            value = metrics.get(key)
            return math.nan if value is None else float(value)

        return cls(
            passed=bool(metrics["passed"]),
            mean=number("mean"),
            std=number("std"),
            mu_plus_sigma=number(STATISTIC),
            threshold=float(metrics["threshold"]),
            n_conversations=int(metrics.get("n_conversations", 0)),
            expectations=[],
        )

    def failed_expectations(self) -> list[dict[str, Any]]:
        """The entries of ``expectations`` that did not succeed."""
        return [entry for entry in self.expectations if not entry["success"]]

    def failure_message(self) -> str:
        """Why the gate refused the corpus, naming μ+σ, its value and the threshold.

        Returns an empty string when the gate passed.
        """
        if self.passed:
            return ""
        others = [
            _describe(entry)
            for entry in self.failed_expectations()
            if entry["expectation"] != MEAN_PLUS_STD_TYPE
        ]
        message = f"residual-risk gate failed: {self._statistic_clause()}"
        for context, value in self.context_failures.items():
            message += f"; {self._context_clause(context, value)}"
        if others:
            message += "; failed expectations: " + "; ".join(others)
        return message

    def _statistic_clause(self) -> str:
        """μ+σ, its value, how it compares with the threshold, and over how many conversations."""
        name = f"{STATISTIC} (μ+σ of {SCORE_COLUMN}, population σ)"
        over = f"over {self.n_conversations} conversations"
        if math.isnan(self.mu_plus_sigma):
            return f"{name} is undefined {over}, so it is not < threshold {self.threshold:g}"
        verdict = "is not <" if self.mu_plus_sigma >= self.threshold else "is <"
        return f"{name} = {self.mu_plus_sigma:.4f} {over} {verdict} threshold {self.threshold:g}"

    def _context_clause(self, context: str, value: float | None) -> str:
        """One failing context, its μ+σ and the threshold; odd names are shown quoted."""
        plain = context and context.isprintable() and context.strip() == context
        shown = context if plain else repr(context)
        threshold = f"threshold {self.threshold:g}"
        if value is None:
            return f"context {shown}: {STATISTIC} is undefined, so it is not < {threshold}"
        verdict = "is not <" if value >= self.threshold else "is <"
        return f"context {shown}: {STATISTIC} = {value:.4f} {verdict} {threshold}"

    def to_metrics(self) -> dict[str, MetricValue]:
        """Metrics for MLflow/DVC; non-finite values become None so the dict is strict JSON.

        Flat, except ``by_context`` (context → μ+σ), present only when the per-context gate ran.
        """
        metrics: dict[str, MetricValue] = {
            "passed": self.passed,
            STATISTIC: _finite_or_none(self.mu_plus_sigma),
            "threshold": self.threshold,
            "mean": _finite_or_none(self.mean),
            "std": _finite_or_none(self.std),
            "n_conversations": self.n_conversations,
            "n_expectations": len(self.expectations),
            "n_failed_expectations": len(self.failed_expectations()),
        }
        if self.by_context is not None:
            metrics["by_context"] = {
                context: None if value is None else _finite_or_none(value)
                for context, value in self.by_context.items()
            }
        return metrics


def _describe(entry: dict[str, Any]) -> str:
    """A failed expectation as one line: its type, its column, what it observed."""
    column = f" on {entry['column']}" if entry["column"] else ""
    return f"{entry['expectation']}{column} (observed {entry['observed']})"


def _finite_or_none(value: float) -> float | None:
    """``value`` when finite, else None."""
    return value if math.isfinite(value) else None
