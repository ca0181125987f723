"""The run's verdict in one line: Prefect's pipeline-summary opens with it."""

from __future__ import annotations

from typing import Any

from components.core.headline import headline_metrics, verdict_line


def test_the_verdict_line_says_gate_audits_champion_and_utility() -> None:
    metrics: dict[str, Any] = {
        "gate": {"passed": True, "mu_plus_sigma": 0.4919, "threshold": 5.0},
        "audit": {
            "passed": False,
            "audits": {
                "canary": {"passed": True, "thresholds": {"max_exposure": 10.0}},
                "membership": {"passed": False, "thresholds": {"max_auc": 0.75}},
                "plain_sight": {"passed": True, "thresholds": {}},
            },
        },
        "evaluate": {"adapter": {"summary.rouge1": 0.2634}, "base": {"summary.rouge1": 0.2481}},
        "register": {"champion": False, "model_version": "4"},
    }
    line = verdict_line(headline_metrics(metrics, {}))
    assert line == (
        "Verdict: gate passed (μ+σ 0.492 against 5); audits failed (1/2 passed); "
        "champion: no (v4); summary.rouge1 0.263 against the base model's 0.248."
    )


def test_a_run_with_no_verdict_yet_says_so() -> None:
    assert verdict_line(headline_metrics({}, {})) == "Verdict: no verdict yet."
    gate_only = headline_metrics({"gate": {"passed": False}}, {})
    assert verdict_line(gate_only) == "Verdict: gate failed."
