"""The residual-risk gate: a Great Expectations suite over the per-conversation risk table.

The table has one row per conversation with columns ``conversation_id`` (str), ``context``
(str), ``score`` (int >= 0) and ``n_leaked`` (int). The gate's statistic is μ+σ of ``score``
(``mu_plus_sigma``), with σ the population standard deviation (ddof=0): the table is the
whole corpus, not a sample drawn from it. The corpus passes only when μ+σ is strictly below
the threshold *and* every structural expectation holds (scores integer, non-null and >= 0,
ids unique and non-null, contexts known, every expected conversation scored, table non-empty).

With ``per_context`` the suite also holds one μ+σ expectation per context present in the
table, restricted to that context's rows by a GX row condition (a ``Column("context") == name``
Condition object: GX quotes the name itself, so quotes or any other character in it are
safe); contexts must then be non-null strings. The run goes through a Checkpoint with no
action: GX's Data Docs are not built (they load their assets from CDNs); the gate stage
renders the result as its own offline page (``components.gate.page``).

Each call builds its own ephemeral Data Context (in memory, analytics and progress bars off;
this GX build makes no network calls in validation), so calls share no suite state; GX does
make it the process's "current" context. Only aggregates and counts are logged, never a cell
value nor a context name. A call takes ~50 ms; ``expected_ids`` dominates beyond that,
because GX re-serializes its value set many times per run (~0.6 s for 10k ids, ~6 s for 100k).
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Sequence
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
from great_expectations.expectations.row_conditions import Column

from components.core.errors import BackendError, ParamsError
from components.gate.expectations import ExpectColumnMeanPlusStdToBeLessThan
from components.gate.result import MEAN_PLUS_STD_TYPE, STATISTIC, GateResult
from components.risk import CONTEXT_COLUMN, RISK_COLUMNS, SCORE_COLUMN

logger = logging.getLogger(__name__)

# The score column must have an integer dtype (numpy or nullable extension). An object column
# is refused even when it holds Python ints: it may as well hold bools (ints to Python) or
# strings, and a well-formed risk table never needs one.
INTEGER_TYPES = (
    *(f"{prefix}int{bits}" for prefix in ("", "u") for bits in (8, 16, 32, 64)),
    *(f"{prefix}Int{bits}Dtype" for prefix in ("", "U") for bits in (8, 16, 32, 64)),
)
_COUNT_KEYS = ("element_count", "unexpected_count", "missing_count")


def validate_risk_table(
    table: pd.DataFrame,
    threshold: float,
    *,
    known_contexts: Sequence[str] | None = None,
    expected_ids: Sequence[str] | None = None,
    per_context: bool = False,
) -> tuple[GateResult, dict[str, Any]]:
    """Run the residual-risk suite on ``table``; a failing table is a result, not an exception.

    Args:
        table: the per-conversation risk table.
        threshold: μ+σ of ``score`` must be strictly below this.
        known_contexts: when given, every ``context`` must be one of these.
        expected_ids: when given, the table's ``conversation_id`` values must equal this set.
        per_context: also require μ+σ below ``threshold`` within each context of the table.

    Returns:
        The gate result and the Great Expectations validation result as a JSON-ready dict.

    Raises:
        ParamsError: ``threshold`` is not a finite number.
        BackendError: Great Expectations itself failed to run the suite.
    """
    _check_threshold(threshold)
    contexts = _table_contexts(table) if per_context else None
    expectations = build_gate_expectations(
        float(threshold), known_contexts, expected_ids=expected_ids, gated_contexts=contexts
    )
    validation = _checkpoint_run(table, expectations)
    result = _gate_result(
        validation, float(threshold), n_conversations=len(table), per_context=contexts is not None
    )
    logger.info(
        "residual-risk gate %s: %d conversations, %s=%.4f, threshold %g, %d/%d expectations "
        "failed, %d/%d contexts failed",
        "passed" if result.passed else "failed",
        result.n_conversations,
        STATISTIC,
        result.mu_plus_sigma,
        result.threshold,
        len(result.failed_expectations()),
        len(result.expectations),
        len(result.context_failures),
        len(result.by_context or {}),
    )
    return result, validation.to_json_dict()


def build_gate_expectations(
    threshold: float,
    known_contexts: Sequence[str] | None = None,
    *,
    expected_ids: Sequence[str] | None = None,
    gated_contexts: Sequence[str] | None = None,
) -> list[Expectation]:
    """The gate's expectations: μ+σ below ``threshold`` first, then the structural checks.

    ``gated_contexts`` turns the per-context gate on: contexts must be non-null strings, and
    each listed context gets its own μ+σ expectation over its rows (an empty list still
    checks the contexts themselves).
    """
    expectations: list[Expectation] = [
        ExpectColumnMeanPlusStdToBeLessThan(column=SCORE_COLUMN, threshold=threshold),
        gxe.ExpectTableColumnsToMatchSet(column_set=list(RISK_COLUMNS), exact_match=False),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column=SCORE_COLUMN),
        gxe.ExpectColumnValuesToBeInTypeList(column=SCORE_COLUMN, type_list=list(INTEGER_TYPES)),
        gxe.ExpectColumnValuesToBeBetween(column=SCORE_COLUMN, min_value=0),
        gxe.ExpectColumnValuesToNotBeNull(column="conversation_id"),
        gxe.ExpectColumnValuesToBeUnique(column="conversation_id"),
    ]
    if known_contexts is not None:
        expectations.append(
            gxe.ExpectColumnValuesToBeInSet(column=CONTEXT_COLUMN, value_set=list(known_contexts))
        )
    if expected_ids is not None:
        expectations.append(
            gxe.ExpectColumnDistinctValuesToEqualSet(
                column="conversation_id", value_set=list(expected_ids)
            )
        )
    if gated_contexts is not None:
        expectations.extend(_per_context_expectations(threshold, gated_contexts))
    return expectations


def _per_context_expectations(threshold: float, contexts: Sequence[str]) -> list[Expectation]:
    """Contexts non-null strings (a row outside every context escapes the gate), then μ+σ each.

    The row condition is a GX Condition object rather than a pandas query string (deprecated
    since GX 1.9): GX renders the compared value with ``repr``, so no name can break the query.
    """
    expectations: list[Expectation] = [
        gxe.ExpectColumnValuesToNotBeNull(column=CONTEXT_COLUMN),
        gxe.ExpectColumnValuesToBeOfType(column=CONTEXT_COLUMN, type_="str"),
    ]
    expectations.extend(
        ExpectColumnMeanPlusStdToBeLessThan(
            column=SCORE_COLUMN, threshold=threshold, row_condition=Column(CONTEXT_COLUMN) == name
        )
        for name in contexts
    )
    return expectations


def _table_contexts(table: pd.DataFrame) -> list[str]:
    """The distinct string contexts of ``table``, sorted; other values fail the type check."""
    if CONTEXT_COLUMN not in table.columns:
        return []
    return sorted({value for value in table[CONTEXT_COLUMN] if isinstance(value, str)})


def _check_threshold(threshold: float) -> None:
    """Reject a threshold no score could be compared against."""
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise ParamsError(f"gate.threshold: expected a number, got {type(threshold).__name__}")
    if not math.isfinite(threshold):
        raise ParamsError(f"gate.threshold: expected a finite number, got {threshold}")


def _checkpoint_run(
    table: pd.DataFrame, expectations: list[Expectation]
) -> ExpectationSuiteValidationResult:
    """One Checkpoint run of the suite in a fresh ephemeral Data Context."""
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
        checkpoint = context.checkpoints.add(
            gx.Checkpoint(name="residual_risk_gate", validation_definitions=[definition])
        )
        outcome = checkpoint.run(batch_parameters={"dataframe": table})
    except GreatExpectationsError as exc:
        raise BackendError(f"great_expectations could not validate the risk table: {exc}") from exc
    (validation,) = outcome.run_results.values()
    return validation


def _context_config() -> DataContextConfig:
    """In-memory stores, no analytics, no progress bars, no Data Docs site."""
    return DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
        data_docs_sites={},
    )


def _gate_result(
    validation: ExpectationSuiteValidationResult,
    threshold: float,
    *,
    n_conversations: int,
    per_context: bool,
) -> GateResult:
    """Summarize a suite run into a GateResult; μ, σ and μ+σ come from the custom expectation."""
    entries = [_summarize(result.to_json_dict()) for result in validation.results]
    details = _mean_plus_std_details(entries, validation)
    gated = sorted(
        (entry for entry in entries if entry["context"] is not None), key=lambda e: e["context"]
    )
    by_context = {entry["context"]: _number_or_none(entry["observed"]) for entry in gated}
    failures = {e["context"]: by_context[e["context"]] for e in gated if not e["success"]}
    return GateResult(
        passed=bool(validation.success) and all(entry["success"] for entry in entries),
        mean=details["mean"],
        std=details["std"],
        mu_plus_sigma=details[STATISTIC],
        threshold=threshold,
        n_conversations=n_conversations,
        expectations=entries,
        by_context=by_context if per_context else None,
        context_failures=failures,
    )


def _mean_plus_std_details(
    entries: list[dict[str, Any]], validation: ExpectationSuiteValidationResult
) -> dict[str, float]:
    """μ, σ and μ+σ of the whole table as the custom expectation observed them; NaN if none."""
    for entry, result in zip(entries, validation.results, strict=True):
        if entry["expectation"] == MEAN_PLUS_STD_TYPE and entry["context"] is None:
            observed = result.result or {}
            details = observed.get("details") or {}
            return {
                "mean": _nan_if_none(details.get("mean")),
                "std": _nan_if_none(details.get("std")),
                STATISTIC: _nan_if_none(observed.get("observed_value")),
            }
    raise BackendError(f"the gate suite returned no result for {MEAN_PLUS_STD_TYPE}")


def _summarize(result: dict[str, Any]) -> dict[str, Any]:
    """One expectation's type, column, context, success and observed value (or counts, error)."""
    config = result.get("expectation_config") or {}
    outcome = result.get("result") or {}
    observed: Any = outcome.get("observed_value")
    errors = _exception_messages(result.get("exception_info") or {})
    if errors:
        observed = {"error": "; ".join(errors)}
    elif observed is None:
        observed = {key: outcome[key] for key in _COUNT_KEYS if key in outcome} or None
    kwargs = config.get("kwargs") or {}
    return {
        "expectation": config.get("type"),
        "column": kwargs.get("column"),
        "context": _gated_context(kwargs.get("row_condition")),
        "success": bool(result.get("success")),
        "observed": observed,
    }


def _gated_context(row_condition: Any) -> str | None:
    """The context a serialized ``Column("context") == name`` row condition selects, else None."""
    if not isinstance(row_condition, dict) or row_condition.get("type") != "comparison":
        return None
    if (row_condition.get("column") or {}).get("name") != CONTEXT_COLUMN:
        return None
    parameter = row_condition.get("parameter")
    return parameter if isinstance(parameter, str) else None


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


def _nan_if_none(value: Any) -> float:
    """``value`` as a float, NaN when it is missing."""
    return math.nan if value is None else float(value)


def _number_or_none(value: Any) -> float | None:
    """An observed value as a float, None when it is missing or not a number (an error)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)
