"""What the register stage writes beside the registry: the run's verdicts in one row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.stage import StageContext
from components.register.stage import write_headline


def test_register_writes_the_runs_verdicts_in_one_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``metrics/headline.json`` is register's declared output: the verdicts of the metrics
    files it read and of the version it registered, with the utility metric it judged."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    audits = {
        "canary": {"passed": True, "thresholds": {"max_exposure": 10.0}},
        "plain_sight": {"passed": True, "thresholds": {}},  # reports only: never counted
    }
    files = {
        "gate": {"passed": True, "mu_plus_sigma": 0.4912, "threshold": 5.0},
        "audit": {"passed": True, "audits": audits},
        "evaluate": {"adapter": {"summary.rouge2": 0.1}, "base": {"summary.rouge2": 0.05}},
    }
    for stage, body in files.items():
        (tmp_path / "metrics" / f"{stage}.json").write_text(json.dumps(body))
    registered = {"champion": True, "model_version": "7"}
    params = {"register": {"utility_metric": "summary.rouge2"}}
    write_headline(registered, StageContext(tmp_path / "params.yaml", params, {}))
    assert json.loads((tmp_path / "metrics" / "headline.json").read_text()) == {
        "gate": "passed",
        "mu+sigma": 0.4912,
        "audits": "1/1 passed",
        "champion": "yes (v7)",
        "summary.rouge2": 0.1,
        "base": 0.05,
    }
