"""The gate's validation page: every rule in GX's words, its verdict, what it observed;
offline, escaped, and made without a network connection."""

from __future__ import annotations

import html
import re
import socket
from typing import Any

import pytest

from components.gate.page import expectation_rows, rule_text, validation_page_html
from components.gate.suite import validate_risk_table
from tests.gate.test_suite import THRESHOLD, context_table, population_mu_plus_sigma, risk_table
from tests.offline_html import page_references

RULE = "μ+σ (mean plus population standard deviation, ddof=0) must be strictly less than 5"


def page_status(page: str) -> str:
    match = re.search(r"Status: <span class=\"\w+\">(\w+)</span>", page)
    assert match, "no status on the page"
    return match.group(1)


def test_the_page_states_every_rule_and_its_verdict() -> None:
    table = context_table({"sales": [1, 2], "chat": [0, 1]})
    result, validation = validate_risk_table(
        table, THRESHOLD, known_contexts=["sales", "chat"], per_context=True
    )

    page = validation_page_html(validation)

    assert result.passed, result.failure_message()
    assert page_status(page) == "Succeeded"
    assert f"score {RULE}" in page
    assert f"If context == 'sales', then score {RULE}" in html.unescape(page)
    assert "context values must belong to this set: sales chat." in page
    assert "score values must be greater than or equal to 0." in page
    rows = expectation_rows(validation)
    assert len(rows) == len(result.expectations) and all(row.success for row in rows)
    assert page.count('<span class="pass">pass</span>') == len(rows)


def test_a_failing_gate_shows_what_failed_and_the_observed_value() -> None:
    _, validation = validate_risk_table(risk_table([1, 2, 6]), THRESHOLD)

    page = validation_page_html(validation)

    assert page_status(page) == "Failed"
    assert f"{population_mu_plus_sigma([1, 2, 6]):.4f}" in page  # observed ≈5.160246899
    assert page.count('<span class="fail">fail</span>') == 1


def test_a_long_value_set_is_folded_and_strings_are_escaped() -> None:
    ids = [f"conv-{i:05d}" for i in range(200)] + ["<script>x</script>"]
    table = risk_table([0] * len(ids), ids=ids, contexts=["<b>odd</b>"] * len(ids))
    _, validation = validate_risk_table(table, THRESHOLD, expected_ids=ids, known_contexts=["x"])

    page = validation_page_html(validation)

    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<b>odd</b>" not in page and "&lt;b&gt;odd&lt;/b&gt;" in page  # unexpected context
    assert "<details><summary>conversation_id distinct values must match this set:" in page
    remote, _ = page_references(page)
    assert remote == [] and "<script" not in page and "<link" not in page


def test_an_expectation_without_a_renderer_is_shown_by_its_arguments() -> None:
    config = {"type": "expect_nothing_known", "kwargs": {"column": "score", "batch_id": "b"}}
    assert rule_text(config) == "expect_nothing_known(column=score)"


def test_the_page_is_made_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"the gate opened a network connection to {args[1:]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)

    result, validation = validate_risk_table(risk_table([1, 2]), THRESHOLD, per_context=True)

    assert result.passed, result.failure_message()
    assert page_status(validation_page_html(validation)) == "Succeeded"
