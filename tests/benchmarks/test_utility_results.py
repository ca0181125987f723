"""A run store as a results file: the report's figures, in the envelope of the machine that
ran the runs (not the one that reports them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import results
from benchmarks.utility_results import main, utility_figures
from tests.evaluate.test_report import write_run


@pytest.fixture
def store(tmp_path: Path) -> Path:
    store = tmp_path / "runs"
    for seed in (13, 14):
        write_run(store, "oracle", seed=seed, level=0.40, loss=2.00)
        write_run(store, "placeholder", seed=seed, level=0.30, loss=2.02)
    return store


def test_each_variant_has_its_intervals_and_its_difference_from_the_oracle(store: Path) -> None:
    figures = utility_figures(store)
    placeholder = figures["variants"]["placeholder"]
    cell = placeholder["metrics"]["summary.rouge1"]
    assert cell["interval"][0] < cell["mean"] < cell["interval"][1]
    relative = placeholder["vs_oracle"]["summary.rouge1"]
    assert relative["low"] < relative["estimate"] < relative["high"] < 0  # 0.30 vs 0.40
    assert figures["variants"]["oracle"]["seeds"] == [13, 14] and figures["train_steps"] == 40


def test_the_envelope_names_the_runs_machine(
    store: Path, tmp_path: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    written: dict[str, dict] = {}

    def write(name: str, figures: dict, *, command: str, envelope: dict) -> None:
        written[name] = {"figures": figures, "command": command, **envelope}

    monkeypatch.setattr("benchmarks.utility_results.write_result", write)
    for folder in store.glob("*/seed-*"):
        evaluation = json.loads((folder / "evaluate.json").read_text())
        (folder / "evaluate.json").write_text(json.dumps(evaluation | {"device": "GPU X"}))
    main(
        ["--runs", str(store), "--name", "u", "--commit", "HEAD", "--machine", '{"cpu_count": 16}']
    )
    record = written["u"]
    assert record["machine"]["gpu"] == "GPU X" and record["machine"]["cpu_count"] == 16
    assert record["machine"]["cpu_model"] is None  # not this machine's
    assert len(record["commit"]) == 40 and record["dirty"] is False


def test_an_envelope_key_outside_commit_dirty_machine_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="envelope"):
        results.write_result("x", {}, envelope={"date": "now"}, folder=tmp_path)
