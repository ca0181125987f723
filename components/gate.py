"""The residual-risk gate: a Great Expectations suite over the per-conversation risk table.

The table has one row per conversation with columns ``conversation_id`` (str), ``context``
(str), ``score`` (int >= 0) and ``n_leaked`` (int). The gate's statistic is μ+σ of ``score``
(``mu_plus_sigma``), with σ the population standard deviation (ddof=0): the table is the
whole corpus, not a sample drawn from it. The corpus passes only when μ+σ is strictly below
the threshold *and* every structural expectation holds (scores integer, non-null and >= 0,
ids unique and non-null, contexts known, every expected conversation scored, table non-empty).

Each call builds its own ephemeral Data Context (in memory, analytics and progress bars off;
this GX build makes no network calls in validation), so calls share no suite state; GX does
make it the process's "current" context. Only aggregates and counts are logged, never a cell
value. A call takes ~50 ms; ``expected_ids`` dominates beyond that, because GX re-serializes
its value set many times per run (~0.6 s for 10k ids, ~6 s for 100k).
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import great_expectations as gx
import great_expectations.expectations as gxe
import pandas as pd
from great_expectations.core import ExpectationSuiteValidationResult
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)
from great_expectations.exceptions import GreatExpectationsError
from great_expectations.expectations.expectation import Expectation

from components.errors import BackendError, ParamsError
from components.gate_expectations import ExpectColumnMeanPlusStdToBeLessThan

logger = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("conversation_id", "context", "score", "n_leaked")
STATISTIC = "mu_plus_sigma"
SCORE_COLUMN = "score"
# The score column must have an integer dtype (numpy or nullable extension). An object column
# is refused even when it holds Python ints: it may as well hold bools (ints to Python) or
# strings, and a well-formed risk table never needs one.
INTEGER_TYPES = (
    *(f"{prefix}int{bits}" for prefix in ("", "u") for bits in (8, 16, 32, 64)),
    *(f"{prefix}Int{bits}Dtype" for prefix in ("", "U") for bits in (8, 16, 32, 64)),
)
MEAN_PLUS_STD_TYPE = ExpectColumnMeanPlusStdToBeLessThan.expectation_type
_COUNT_KEYS = ("element_count", "unexpected_count", "missing_count")


@dataclass(frozen=True)
class GateResult:
    """Outcome of the residual-risk gate.

    ``std`` is the population standard deviation (ddof=0) of the scores; ``mean``, ``std``
    and ``mu_plus_sigma`` are NaN when there is no score to aggregate (empty table, missing
    or non-numeric column). ``expectations`` holds one entry per expectation of the suite:
    ``{"expectation": type name, "column": column or None, "success": bool, "observed": ...}``
    where ``observed`` is the expectation's observed value, or its counts when it has none.
    """

    passed: bool
    mean: float
    std: float
    mu_plus_sigma: float
    threshold: float
    n_conversations: int
    expectations: list[dict[str, Any]]

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

    def to_metrics(self) -> dict[str, bool | int | float | None]:
        """Flat metrics for MLflow/DVC; non-finite values become None so the dict is strict JSON."""
        return {
            "passed": self.passed,
            STATISTIC: _finite_or_none(self.mu_plus_sigma),
            "threshold": self.threshold,
            "mean": _finite_or_none(self.mean),
            "std": _finite_or_none(self.std),
            "n_conversations": self.n_conversations,
            "n_expectations": len(self.expectations),
            "n_failed_expectations": len(self.failed_expectations()),
        }


def validate_risk_table(
    table: pd.DataFrame,
    threshold: float,
    known_contexts: Sequence[str] | None = None,
    expected_ids: Sequence[str] | None = None,
) -> tuple[GateResult, dict[str, Any]]:
    """Run the residual-risk suite on ``table``; a failing table is a result, not an exception.

    Args:
        table: the per-conversation risk table.
        threshold: μ+σ of ``score`` must be strictly below this.
        known_contexts: when given, every ``context`` must be one of these.
        expected_ids: when given, the table's ``conversation_id`` values must equal this set.

    Returns:
        The gate result and the Great Expectations validation result as a JSON-ready dict.

    Raises:
        ParamsError: ``threshold`` is not a finite number.
        BackendError: Great Expectations itself failed to run the suite.
    """
    _check_threshold(threshold)
    expectations = build_gate_expectations(float(threshold), known_contexts, expected_ids)
    validation = _run_suite(table, expectations)
    result = _gate_result(validation, float(threshold), n_conversations=len(table))
    logger.info(
        "residual-risk gate %s: %d conversations, %s=%.4f, threshold %g, %d/%d expectations failed",
        "passed" if result.passed else "failed",
        result.n_conversations,
        STATISTIC,
        result.mu_plus_sigma,
        result.threshold,
        len(result.failed_expectations()),
        len(result.expectations),
    )
    return result, validation.to_json_dict()


def build_gate_expectations(
    threshold: float,
    known_contexts: Sequence[str] | None = None,
    expected_ids: Sequence[str] | None = None,
) -> list[Expectation]:
    """The gate's expectations: μ+σ below ``threshold`` first, then the structural checks."""
    expectations: list[Expectation] = [
        ExpectColumnMeanPlusStdToBeLessThan(column=SCORE_COLUMN, threshold=threshold),
        gxe.ExpectTableColumnsToMatchSet(column_set=list(REQUIRED_COLUMNS), exact_match=False),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column=SCORE_COLUMN),
        gxe.ExpectColumnValuesToBeInTypeList(column=SCORE_COLUMN, type_list=list(INTEGER_TYPES)),
        gxe.ExpectColumnValuesToBeBetween(column=SCORE_COLUMN, min_value=0),
        gxe.ExpectColumnValuesToNotBeNull(column="conversation_id"),
        gxe.ExpectColumnValuesToBeUnique(column="conversation_id"),
    ]
    if known_contexts is not None:
        expectations.append(
            gxe.ExpectColumnValuesToBeInSet(column="context", value_set=list(known_contexts))
        )
    if expected_ids is not None:
        expectations.append(
            gxe.ExpectColumnDistinctValuesToEqualSet(
                column="conversation_id", value_set=list(expected_ids)
            )
        )
    return expectations


def _check_threshold(threshold: float) -> None:
    """Reject a threshold no score could be compared against."""
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise ParamsError(f"gate.threshold: expected a number, got {type(threshold).__name__}")
    if not math.isfinite(threshold):
        raise ParamsError(f"gate.threshold: expected a finite number, got {threshold}")


def _run_suite(
    table: pd.DataFrame, expectations: list[Expectation]
) -> ExpectationSuiteValidationResult:
    """Validate ``table`` against ``expectations`` in a fresh ephemeral Data Context."""
    try:
        context = gx.get_context(mode="ephemeral", project_config=_context_config())
        batch_definition = (
            context.data_sources.add_pandas("veiltune_gate")
            .add_dataframe_asset("risk_table")
            .add_batch_definition_whole_dataframe("whole_table")
        )
        suite = context.suites.add(gx.ExpectationSuite(name="residual_risk_gate"))
        for expectation in expectations:
            suite.add_expectation(expectation)
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name="residual_risk_gate", data=batch_definition, suite=suite)
        )
        return definition.run(batch_parameters={"dataframe": table})
    except GreatExpectationsError as exc:
        raise BackendError(f"great_expectations could not validate the risk table: {exc}") from exc


def _context_config() -> DataContextConfig:
    """In-memory stores, no analytics, no progress bars on stderr."""
    return DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )


def _gate_result(
    validation: ExpectationSuiteValidationResult, threshold: float, n_conversations: int
) -> GateResult:
    """Summarize a suite run into a GateResult; μ, σ and μ+σ come from the custom expectation."""
    entries = [_summarize(result.to_json_dict()) for result in validation.results]
    details = _mean_plus_std_details(validation)
    return GateResult(
        passed=bool(validation.success) and all(entry["success"] for entry in entries),
        mean=details["mean"],
        std=details["std"],
        mu_plus_sigma=details[STATISTIC],
        threshold=threshold,
        n_conversations=n_conversations,
        expectations=entries,
    )


def _mean_plus_std_details(validation: ExpectationSuiteValidationResult) -> dict[str, float]:
    """μ, σ and μ+σ as the custom expectation observed them; NaN where it observed none."""
    for result in validation.results:
        config = result.expectation_config
        if config is not None and config.type == MEAN_PLUS_STD_TYPE:
            observed = result.result or {}
            details = observed.get("details") or {}
            return {
                "mean": _nan_if_none(details.get("mean")),
                "std": _nan_if_none(details.get("std")),
                STATISTIC: _nan_if_none(observed.get("observed_value")),
            }
    raise BackendError(f"the gate suite returned no result for {MEAN_PLUS_STD_TYPE}")


def _summarize(result: dict[str, Any]) -> dict[str, Any]:
    """One expectation's type, column, success and observed value (or counts, or the error)."""
    config = result.get("expectation_config") or {}
    outcome = result.get("result") or {}
    observed: Any = outcome.get("observed_value")
    errors = _exception_messages(result.get("exception_info") or {})
    if errors:
        observed = {"error": "; ".join(errors)}
    elif observed is None:
        observed = {key: outcome[key] for key in _COUNT_KEYS if key in outcome} or None
    return {
        "expectation": config.get("type"),
        "column": (config.get("kwargs") or {}).get("column"),
        "success": bool(result.get("success")),
        "observed": observed,
    }


def _exception_messages(info: dict[str, Any]) -> list[str]:
    """Distinct exception messages of a result: flat, or keyed by the metric that raised."""
    if "raised_exception" in info:
        infos = [info]
    else:
        infos = [value for value in info.values() if isinstance(value, dict)]
    messages = [
        str(item.get("exception_message")) for item in infos if item.get("raised_exception")
    ]
    return list(dict.fromkeys(messages))


def _describe(entry: dict[str, Any]) -> str:
    """A failed expectation as one line: its type, its column, what it observed."""
    column = f" on {entry['column']}" if entry["column"] else ""
    return f"{entry['expectation']}{column} (observed {entry['observed']})"


def _nan_if_none(value: Any) -> float:
    """``value`` as a float, NaN when it is missing."""
    return math.nan if value is None else float(value)


def _finite_or_none(value: float) -> float | None:
    """``value`` when finite, else None."""
    return value if math.isfinite(value) else None
