"""The DP benchmark's figures: intervals and paired differences against the non-DP
reference, the wall-time ratio, the noise; its table; a workspace that is no reference is
refused."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from benchmarks.dp_utility import figures_of, main, read_run
from benchmarks.headlines import dp_utility, dp_utility_headline


def fake_workspace(folder: Path, *, shift: float, train: Mapping[str, float]) -> Path:
    (folder / "data" / "evaluate").mkdir(parents=True)
    (folder / "metrics").mkdir()
    rows = [
        {
            "model": model,
            "dataset": "main",
            "id": f"c{i}",
            "scores": {"summary.rouge1": 0.1 * (i % 4) + shift},
            "n_tokens": 10,
            "loss_sum": 20.0 + i % 3,
        }
        for i in range(20)
        for model in ("adapter", "base")
    ]
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (folder / "data" / "evaluate" / "per_conversation.jsonl").write_text(lines)
    (folder / "metrics" / "train.json").write_text(json.dumps(train))
    return folder


NON_DP = {"runtime_s": 100.0, "train_loss": 2.0, "steps": 40}
DP = {
    **NON_DP,
    "runtime_s": 150.0,
    "dp.epsilon": 3.98,
    "dp.delta": 1e-5,
    "dp.noise_multiplier": 1.2,
    "dp.sample_rate": 0.005,
    "dp.expected_batch": 2,
    "dp.units": 400,
}


def test_a_dp_run_is_paired_with_the_reference(tmp_path: Path) -> None:
    reference = read_run(fake_workspace(tmp_path / "a", shift=0.2, train=NON_DP))
    private = read_run(fake_workspace(tmp_path / "b", shift=0.1, train=DP))
    row = figures_of(private, reference)
    # every conversation lost 0.1: the paired interval is exactly that
    diff = row["summary.rouge1 - non_dp"]
    assert diff["estimate"] == pytest.approx(-0.1) and diff["n_conversations"] == 20
    assert diff["low"] == pytest.approx(-0.1) and diff["high"] == pytest.approx(-0.1)
    assert row["perplexity_raw"]["estimate"] == pytest.approx(reference_perplexity(), rel=1e-6)
    assert row["wall_time_ratio"] == 1.5 and row["dp.noise_multiplier"] == 1.2
    figures = {
        "base": {
            "summary.rouge1": row["summary.rouge1"],
            "perplexity_raw": row["perplexity_raw"],
        },
        "runs": {"non_dp": figures_of(reference, reference), "epsilon_4": row},
    }
    table = dp_utility(figures)
    assert table[2].startswith("| non_dp | ∞ (no DP) |") and table[3].startswith(
        "| epsilon_4 | 3.98 |"
    )
    assert "ε 3.98: 0.250" in dp_utility_headline(figures)


def reference_perplexity() -> float:
    import math

    losses = [20.0 + i % 3 for i in range(20)]
    return math.exp(sum(losses) / (10 * 20))


def test_a_workspace_trained_with_dp_is_no_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = fake_workspace(tmp_path, shift=0.1, train=DP)
    assert main(["--workspace", str(workspace)]) == 1
    assert "trained with DP: not a reference" in capsys.readouterr().err
    assert main(["--workspace", str(tmp_path / "none")]) == 1
