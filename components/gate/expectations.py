"""Custom Great Expectations metrics and expectation for the residual-risk gate.

The gate's statistic is μ+σ of the per-conversation risk score, with σ the *population*
standard deviation (ddof=0): the risk table holds every conversation of the corpus, not a
sample of it, so there is nothing to correct for. GX's built-in ``column.standard_deviation``
is the sample one (ddof=1), hence a metric of our own.

Importing this module registers, for the Pandas execution engine:

- metric ``column.population_standard_deviation``;
- metric ``column.mean_plus_std`` (built from ``column.mean`` and the one above);
- expectation ``expect_column_mean_plus_std_to_be_less_than``, with a prescriptive renderer so
  that the gate's page (``components.gate.page``) states the rule (μ+σ, population σ,
  threshold, row condition) in words.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import pandas as pd
from great_expectations.core import ExpectationValidationResult
from great_expectations.execution_engine import ExecutionEngine, PandasExecutionEngine
from great_expectations.expectations.expectation import ColumnAggregateExpectation
from great_expectations.expectations.expectation_configuration import ExpectationConfiguration
from great_expectations.expectations.metrics.column_aggregate_metric_provider import (
    ColumnAggregateMetricProvider,
    column_aggregate_value,
)
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.row_conditions import (
    ComparisonCondition,
    PassThroughCondition,
    deserialize_row_condition,
)
from great_expectations.render import LegacyRendererType, RenderedStringTemplateContent
from great_expectations.render.renderer.renderer import renderer
from great_expectations.util import convert_pandas_series_decimal_to_float_dtype
from great_expectations.validator.metric_configuration import MetricConfiguration

MEAN_METRIC = "column.mean"
POPULATION_STD_METRIC = "column.population_standard_deviation"
MEAN_PLUS_STD_METRIC = "column.mean_plus_std"
RULE_TEMPLATE = (
    "$column μ+σ (mean plus population standard deviation, ddof=0) "
    "must be strictly less than $threshold."
)


def describe_row_condition(row_condition: Any) -> str:
    """A row condition as one readable line; a compared string value is shown quoted."""
    condition = deserialize_row_condition(row_condition)
    if isinstance(condition, ComparisonCondition):
        return f"{condition.column.name} {condition.operator} {condition.parameter!r}"
    if isinstance(condition, PassThroughCondition):
        return condition.pass_through_filter
    return str(condition)


def _finite_or_none(value: Any) -> float | None:
    """Return ``value`` as a float, or None when it is missing, NaN or infinite (empty column)."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class ColumnPopulationStandardDeviation(ColumnAggregateMetricProvider):
    """Population standard deviation (ddof=0) of a numeric column; NaN when it has no values."""

    metric_name = POPULATION_STD_METRIC

    @column_aggregate_value(engine=PandasExecutionEngine)
    def _pandas(cls, column: pd.Series, **kwargs: Any) -> float:
        convert_pandas_series_decimal_to_float_dtype(data=column, inplace=True)
        return float(column.std(ddof=0))


class ColumnMeanPlusStd(ColumnAggregateMetricProvider):
    """μ+σ of a numeric column (σ with ddof=0); None when the column has no values."""

    metric_name = MEAN_PLUS_STD_METRIC

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(*args: Any, metrics: dict[str, Any], **kwargs: Any) -> float | None:
        mean = _finite_or_none(metrics.get(MEAN_METRIC))
        std = _finite_or_none(metrics.get(POPULATION_STD_METRIC))
        if mean is None or std is None:
            return None
        return mean + std

    @classmethod
    def _get_evaluation_dependencies(  # noqa: PLR0917 (Great Expectations' signature)
        cls,
        metric: MetricConfiguration,
        configuration: Any = None,
        execution_engine: ExecutionEngine | None = None,
        runtime_configuration: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        dependencies: dict[str, Any] = super()._get_evaluation_dependencies(
            metric=metric,
            configuration=configuration,
            execution_engine=execution_engine,
            runtime_configuration=runtime_configuration,
        )
        for name in (MEAN_METRIC, POPULATION_STD_METRIC):
            dependencies[name] = MetricConfiguration(
                metric_name=name, metric_domain_kwargs=metric.metric_domain_kwargs
            )
        return dependencies


class ExpectColumnMeanPlusStdToBeLessThan(ColumnAggregateExpectation):
    """Expect μ+σ of the column (population σ, ddof=0) to be strictly less than ``threshold``.

    The observed value is μ+σ; ``details`` carries μ and σ. A column with no values has no
    μ+σ and fails, with an observed value of None.
    """

    threshold: float

    metric_dependencies = (MEAN_PLUS_STD_METRIC, MEAN_METRIC, POPULATION_STD_METRIC)
    success_keys = ("threshold",)
    args_keys = ("column", "threshold")

    library_metadata: ClassVar[dict[str, Any]] = {
        "maturity": "experimental",
        "tags": ["veiltune", "residual risk"],
        "contributors": ["veiltune"],
    }

    def _validate(  # noqa: PLR0917 (Great Expectations' signature)
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: ExecutionEngine | None = None,
    ) -> dict[str, Any]:
        observed = _finite_or_none(metrics.get(MEAN_PLUS_STD_METRIC))
        threshold = float(self._get_success_kwargs()["threshold"])
        return {
            "success": observed is not None and observed < threshold,
            "result": {
                "observed_value": observed,
                "details": {
                    "mean": _finite_or_none(metrics.get(MEAN_METRIC)),
                    "std": _finite_or_none(metrics.get(POPULATION_STD_METRIC)),
                    "threshold": threshold,
                },
            },
        }

    @classmethod
    @renderer(renderer_type=LegacyRendererType.PRESCRIPTIVE)
    def _prescriptive_renderer(  # noqa: PLR0917 (Great Expectations' signature)
        cls,
        configuration: ExpectationConfiguration | None = None,
        result: ExpectationValidationResult | None = None,
        runtime_configuration: dict[str, Any] | None = None,
    ) -> list[RenderedStringTemplateContent]:
        """The rule in words for the gate's page; either argument may be absent (GX dispatches)."""
        if configuration is None and result is not None:
            configuration = result.expectation_config
        kwargs: dict[str, Any] = dict(configuration.kwargs) if configuration is not None else {}
        include_column = (runtime_configuration or {}).get("include_column_name") is not False
        template = RULE_TEMPLATE if include_column else RULE_TEMPLATE.removeprefix("$column ")
        params: dict[str, Any] = {
            "column": kwargs.get("column"),
            "threshold": kwargs.get("threshold"),
        }
        if kwargs.get("row_condition") is not None:
            params["row_condition"] = describe_row_condition(kwargs["row_condition"])
            template = "If $row_condition, then " + template
        return [
            RenderedStringTemplateContent(
                content_block_type="string_template",
                string_template={"template": template, "params": params},
            )
        ]
