"""Two runs side by side: the paired difference is over the conversations both scored, its
sign and interval follow the scores, and a folder that is no run is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchmarks.paired_runs import compare, main


def fake_run(folder: Path, replacement: str, *, scores: list[float]) -> Path:
    (folder / "data" / "evaluate").mkdir(parents=True)
    (folder / "metrics").mkdir()
    rows = [
        {"model": "adapter", "dataset": "main", "id": f"c{i}", "scores": {"summary.rouge1": s}}
        for i, s in enumerate(scores)
    ] + [{"model": "base", "dataset": "main", "id": "c0", "scores": {"summary.rouge1": 9.0}}]
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (folder / "data" / "evaluate" / "per_conversation.jsonl").write_text(lines)
    (folder / "params.yaml").write_text(
        yaml.safe_dump({"anonymize": {"replacement": replacement}, "train": {"seed": 13}})
    )
    (folder / "metrics" / "gate.json").write_text('{"mu_plus_sigma": 0.5, "passed": true}')
    (folder / "metrics" / "audit.json").write_text('{"passed": true}')
    return folder


def test_the_difference_is_paired_and_follows_the_scores(tmp_path: Path) -> None:
    low = fake_run(tmp_path / "a", "placeholder", scores=[0.1, 0.2, 0.3, 0.2] * 5)
    high = fake_run(tmp_path / "b", "surrogate", scores=[0.2, 0.3, 0.4, 0.3] * 5)
    figures = compare({"placeholder": low, "surrogate": high}, ("summary.rouge1",))
    row = figures["runs"]["surrogate"]
    assert row["replacement"] == "surrogate" and row["n_conversations"] == 20
    # every conversation gained 0.1: the paired interval is that, not two wide means' gap
    assert row["summary.rouge1 - placeholder"] == "0.1000 [0.1000, 0.1000]"
    assert figures["runs"]["placeholder"]["summary.rouge1"].startswith("0.2000 [")


def test_a_folder_that_is_no_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--name", "x", "--run", f"a={tmp_path}"]) == 1
    assert f"--run a={tmp_path}: NAME=DIR" in capsys.readouterr().err
