"""Tests for the residual-risk gate, run through a real Great Expectations suite."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from components.core.errors import ParamsError
from components.gate.expectations import ExpectColumnMeanPlusStdToBeLessThan
from components.gate.suite import (
    MEAN_PLUS_STD_TYPE,
    GateResult,
    validate_risk_table,
)
from components.risk import RISK_COLUMNS

THRESHOLD = 5.0


def risk_table(
    scores: Sequence[Any],
    ids: Sequence[Any] | None = None,
    *,
    contexts: Sequence[str] | None = None,
    score_dtype: str | None = None,
) -> pd.DataFrame:
    """A risk table with one row per score; ids c0, c1, ... and context "chat" unless given."""
    n = len(scores)
    return pd.DataFrame(
        {
            "conversation_id": list(ids) if ids is not None else [f"c{i}" for i in range(n)],
            "context": list(contexts) if contexts is not None else ["chat"] * n,
            "score": pd.Series(list(scores), dtype=score_dtype),
            "n_leaked": [0] * n,
        }
    )


def failed_types(result: GateResult) -> set[str]:
    return {entry["expectation"] for entry in result.failed_expectations()}


def population_mu_plus_sigma(scores: Sequence[float]) -> float:
    values = np.asarray(scores, dtype=float)
    return float(values.mean() + values.std(ddof=0))


@pytest.mark.parametrize("score_dtype", ["int64", "int32", "uint8", "Int64"])
def test_table_below_threshold_passes(score_dtype: str) -> None:
    scores = [1, 2, 2, 3, 0]
    table = risk_table(scores, score_dtype=score_dtype)

    result, validation = validate_risk_table(
        table, THRESHOLD, known_contexts=["chat", "email"], expected_ids=[f"c{i}" for i in range(5)]
    )

    assert result.passed, result.failure_message()
    assert validation["success"] is True
    assert result.failure_message() == ""
    assert result.failed_expectations() == []
    assert result.n_conversations == 5
    assert result.mean == pytest.approx(np.mean(scores))
    assert result.std == pytest.approx(np.std(scores))
    assert result.mu_plus_sigma == pytest.approx(population_mu_plus_sigma(scores))
    assert result.mu_plus_sigma < THRESHOLD


def test_table_above_threshold_fails_naming_statistic_value_and_threshold() -> None:
    scores = [1, 2, 6]
    expected = population_mu_plus_sigma(scores)  # 5.1602...

    result, validation = validate_risk_table(risk_table(scores), THRESHOLD)

    assert not result.passed
    assert validation["success"] is False
    assert failed_types(result) == {MEAN_PLUS_STD_TYPE}
    message = result.failure_message()
    assert "mu_plus_sigma" in message
    assert f"{expected:.4f}" in message
    assert "threshold 5" in message
    assert "is not <" in message


@pytest.mark.parametrize("scores", [[5, 5, 5], [3, 5]], ids=["constant", "mean4-std1"])
def test_mu_plus_sigma_exactly_at_threshold_fails(scores: list[int]) -> None:
    assert population_mu_plus_sigma(scores) == THRESHOLD

    result, _ = validate_risk_table(risk_table(scores), THRESHOLD)

    assert not result.passed
    assert result.mu_plus_sigma == THRESHOLD
    assert failed_types(result) == {MEAN_PLUS_STD_TYPE}
    # Strictly below is what passes: nudging the threshold up lets the same table through.
    assert validate_risk_table(risk_table(scores), THRESHOLD + 1e-9)[0].passed


@pytest.mark.parametrize(
    ("table", "kwargs", "expected_failure"),
    [
        pytest.param(
            risk_table([-1, 1, 2]), {}, "expect_column_values_to_be_between", id="negative-score"
        ),
        pytest.param(
            risk_table([1.5, 1, 2]),
            {},
            "expect_column_values_to_be_in_type_list",
            id="fractional-score",
        ),
        pytest.param(
            risk_table([1.0, 2.0, 0.0]),
            {},
            "expect_column_values_to_be_in_type_list",
            id="float-typed-score",
        ),
        pytest.param(
            risk_table(["1", "2", "0"]),
            {},
            "expect_column_values_to_be_in_type_list",
            id="string-score",
        ),
        pytest.param(
            risk_table([1, 2, 0], score_dtype="object"),
            {},
            "expect_column_values_to_be_in_type_list",
            id="object-typed-score",
        ),
        pytest.param(
            risk_table([True, False, True]),
            {},
            "expect_column_values_to_be_in_type_list",
            id="bool-score",
        ),
        pytest.param(
            risk_table([1, None, 2], score_dtype="Int64"),
            {},
            "expect_column_values_to_not_be_null",
            id="null-score",
        ),
        pytest.param(
            risk_table([1, 2, 0], ids=["c0", "c0", "c2"]),
            {},
            "expect_column_values_to_be_unique",
            id="duplicate-ids",
        ),
        pytest.param(
            risk_table([1, 2, 0], ids=["c0", None, "c2"]),
            {},
            "expect_column_values_to_not_be_null",
            id="null-id",
        ),
        pytest.param(
            risk_table([1, 2, 0], contexts=["chat", "chat", "sms"]),
            {"known_contexts": ["chat", "email"]},
            "expect_column_values_to_be_in_set",
            id="unknown-context",
        ),
        pytest.param(
            risk_table([1, 2, 0]),
            {"expected_ids": ["c0", "c1", "c2", "c3"]},
            "expect_column_distinct_values_to_equal_set",
            id="missing-conversation",
        ),
        pytest.param(
            risk_table([1, 2, 0]),
            {"expected_ids": ["c0", "c1"]},
            "expect_column_distinct_values_to_equal_set",
            id="unexpected-conversation",
        ),
        pytest.param(
            risk_table([1, 2, 0]).drop(columns=["n_leaked"]),
            {},
            "expect_table_columns_to_match_set",
            id="missing-column",
        ),
    ],
)
def test_structural_violation_fails_even_with_low_risk(
    table: pd.DataFrame, kwargs: dict[str, Any], *, expected_failure: str
) -> None:
    result, validation = validate_risk_table(table, THRESHOLD, **kwargs)

    assert not result.passed
    assert validation["success"] is False
    assert expected_failure in failed_types(result)
    assert expected_failure in result.failure_message()
    assert "mu_plus_sigma" in result.failure_message()


def test_known_context_and_expected_ids_are_only_checked_when_given() -> None:
    table = risk_table([1, 2, 0], contexts=["chat", "chat", "sms"])

    result, _ = validate_risk_table(table, THRESHOLD)

    assert result.passed, result.failure_message()
    checked = {entry["expectation"] for entry in result.expectations}
    assert "expect_column_values_to_be_in_set" not in checked
    assert "expect_column_distinct_values_to_equal_set" not in checked


@pytest.mark.parametrize(
    "table",
    [pd.DataFrame(columns=list(RISK_COLUMNS)), pd.DataFrame()],
    ids=["no-rows", "no-columns"],
)
def test_empty_table_fails_clearly(table: pd.DataFrame) -> None:
    result, validation = validate_risk_table(table, THRESHOLD)

    assert not result.passed
    assert validation["success"] is False
    assert result.n_conversations == 0
    assert math.isnan(result.mu_plus_sigma)
    assert "expect_table_row_count_to_be_between" in failed_types(result)
    message = result.failure_message()
    assert "mu_plus_sigma" in message
    assert "undefined" in message
    assert "over 0 conversations" in message
    metrics = result.to_metrics()
    assert metrics["passed"] is False
    assert metrics["mu_plus_sigma"] is None
    json.dumps(metrics, allow_nan=False)


def test_validation_dict_reports_custom_expectation_with_population_mu_plus_sigma() -> None:
    scores = [0, 1, 1, 4, 2, 3]

    result, validation = validate_risk_table(risk_table(scores), THRESHOLD)

    json.dumps(validation, allow_nan=False)
    custom = [
        entry
        for entry in validation["results"]
        if entry["expectation_config"]["type"] == MEAN_PLUS_STD_TYPE
    ]
    assert MEAN_PLUS_STD_TYPE == "expect_column_mean_plus_std_to_be_less_than"
    assert ExpectColumnMeanPlusStdToBeLessThan.expectation_type == MEAN_PLUS_STD_TYPE
    assert len(custom) == 1
    observed = custom[0]["result"]["observed_value"]
    assert observed == pytest.approx(np.mean(scores) + np.std(scores, ddof=0), rel=1e-12)
    assert observed != pytest.approx(np.mean(scores) + np.std(scores, ddof=1))
    assert custom[0]["expectation_config"]["kwargs"]["threshold"] == THRESHOLD
    assert custom[0]["result"]["details"]["std"] == pytest.approx(np.std(scores, ddof=0))
    assert result.mu_plus_sigma == observed


def test_result_lists_one_entry_per_expectation_and_metrics() -> None:
    result, validation = validate_risk_table(
        risk_table([1, 2]), THRESHOLD, known_contexts=["chat"], expected_ids=["c0", "c1"]
    )

    assert len(result.expectations) == len(validation["results"])
    for entry in result.expectations:
        assert set(entry) >= {"expectation", "success", "observed"}
    type_check = next(
        e
        for e in result.expectations
        if e["expectation"] == "expect_column_values_to_be_in_type_list"
    )
    assert type_check["observed"] == "int64"
    metrics = result.to_metrics()
    assert {"passed", "mu_plus_sigma", "threshold", "mean", "std", "n_conversations"} <= set(
        metrics
    )
    assert metrics["mu_plus_sigma"] == pytest.approx(2.0)
    assert metrics["n_failed_expectations"] == 0
    json.dumps(metrics, allow_nan=False)


@pytest.mark.parametrize("threshold", [math.nan, math.inf, "5"])
def test_unusable_threshold_is_a_params_error(threshold: Any) -> None:
    with pytest.raises(ParamsError, match=r"gate\.threshold"):
        validate_risk_table(risk_table([1, 2]), threshold)


def test_logs_only_aggregates(caplog: pytest.LogCaptureFixture) -> None:
    ids = ["conv-alpha-7731", "conv-bravo-9182"]
    table = risk_table([4, 9], ids=ids, contexts=["ctx-private-zulu", "ctx-private-zulu"])

    with caplog.at_level(logging.DEBUG, logger="components.gate.suite"):
        validate_risk_table(table, THRESHOLD, expected_ids=[*ids, "conv-charlie-0001"])

    gate_records = [r for r in caplog.records if r.name == "components.gate.suite"]
    assert gate_records, "the gate logs its outcome"
    text = "\n".join(r.getMessage() for r in gate_records)
    assert "failed" in text
    for value in [*ids, "conv-charlie-0001", "ctx-private-zulu"]:
        assert value not in text


def context_table(scores_by_context: dict[str, list[int]]) -> pd.DataFrame:
    """A risk table with the given scores in each context, ids c0, c1, ... in order."""
    contexts = [context for context, scores in scores_by_context.items() for _ in scores]
    scores = [score for values in scores_by_context.values() for score in values]
    return risk_table(scores, contexts=contexts)


def test_per_context_gate_passes_when_every_context_is_below_threshold() -> None:
    by_context = {"sales": [1, 2, 4], "chat": [0, 1, 1, 3], "email": [2]}

    result, validation = validate_risk_table(context_table(by_context), THRESHOLD, per_context=True)

    assert result.passed, result.failure_message()
    assert validation["success"] is True
    assert result.context_failures == {}
    assert result.by_context is not None
    assert list(result.by_context) == ["chat", "email", "sales"]
    for context, scores in by_context.items():
        assert result.by_context[context] == pytest.approx(population_mu_plus_sigma(scores))
    gated = [entry for entry in result.expectations if entry["context"] is not None]
    assert {entry["context"] for entry in gated} == set(by_context)
    assert {entry["expectation"] for entry in gated} == {MEAN_PLUS_STD_TYPE}
    metrics = result.to_metrics()
    assert metrics["by_context"] == pytest.approx(result.by_context)
    json.dumps(metrics, allow_nan=False)


def test_per_context_gate_fails_naming_the_context_above_threshold_though_corpus_is_below() -> None:
    table = context_table({"chat": [0] * 8, "sales": [5, 6]})
    corpus_result, _ = validate_risk_table(table, THRESHOLD)
    assert corpus_result.passed, "the corpus-wide μ+σ alone lets this table through"
    assert corpus_result.mu_plus_sigma < THRESHOLD
    assert corpus_result.by_context is None
    assert "by_context" not in corpus_result.to_metrics()

    result, validation = validate_risk_table(table, THRESHOLD, per_context=True)

    assert not result.passed
    assert validation["success"] is False
    assert result.mu_plus_sigma == pytest.approx(corpus_result.mu_plus_sigma)
    assert result.context_failures == {"sales": pytest.approx(6.0)}
    assert result.by_context == {"chat": 0.0, "sales": pytest.approx(6.0)}
    assert failed_types(result) == {MEAN_PLUS_STD_TYPE}
    message = result.failure_message()
    assert "context sales: mu_plus_sigma = 6.0000 is not < threshold 5" in message
    assert "context chat" not in message
    assert result.to_metrics()["by_context"] == {"chat": 0.0, "sales": 6.0}


@pytest.mark.parametrize(
    "name",
    ["it's", 'say "hi"', "a' or '1'=='1", "back\\slash", "`tick` @x #y", "é ü 中", ""],
    ids=[
        "apostrophe",
        "double-quotes",
        "injection",
        "backslash",
        "backtick-at-hash",
        "unicode",
        "empty",
    ],
)
def test_per_context_gate_handles_context_names_with_quotes_and_odd_characters(
    name: str,
) -> None:
    table = context_table({"chat": [0] * 10, name: [6, 7]})

    result, _ = validate_risk_table(table, THRESHOLD, per_context=True)

    # A name that leaked into the query as code would select other rows (or none, or raise).
    assert result.context_failures == {name: pytest.approx(7.0)}
    assert result.by_context == {name: pytest.approx(7.0), "chat": 0.0}
    assert failed_types(result) == {MEAN_PLUS_STD_TYPE}
    shown = name if name and name.isprintable() else repr(name)
    assert f"context {shown}: mu_plus_sigma = 7.0000 is not < threshold 5" in (
        result.failure_message()
    )


@pytest.mark.parametrize(
    ("contexts", "expected_failure"),
    [
        pytest.param(["chat", None, "chat"], "expect_column_values_to_not_be_null", id="null"),
        pytest.param(["chat", 3, "chat"], "expect_column_values_to_be_of_type", id="not-a-string"),
    ],
)
def test_per_context_gate_refuses_contexts_that_are_not_strings(
    contexts: list[Any], expected_failure: str
) -> None:
    table = risk_table([1, 2, 0])
    table["context"] = pd.Series(contexts, dtype=object)

    result, _ = validate_risk_table(table, THRESHOLD, per_context=True)

    assert not result.passed
    assert expected_failure in failed_types(result)
    assert expected_failure in result.failure_message()
    assert list(result.by_context or {}) == ["chat"]
    # Without the per-context gate the context column is not the gate's business.
    assert validate_risk_table(table, THRESHOLD)[0].passed


def test_per_context_gate_logs_no_context_name(caplog: pytest.LogCaptureFixture) -> None:
    table = context_table({"ctx-private-zulu": [6, 7], "chat": [0] * 10})

    with caplog.at_level(logging.DEBUG, logger="components.gate.suite"):
        result, _ = validate_risk_table(table, THRESHOLD, per_context=True)

    assert result.context_failures
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "components.gate.suite")
    assert "1/2 contexts failed" in text
    assert "ctx-private-zulu" not in text
