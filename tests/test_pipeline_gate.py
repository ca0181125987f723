"""A corpus the gate refuses stops `dvc repro` before training, on the tiny base model (its
stages before train need no pretrained model): apart from the end-to-end module, so that it
runs beside it on another worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pipeline_repo import copy_gated_repo, dvc_repro

pytestmark = pytest.mark.slow


def test_failing_gate_stops_the_pipeline_before_training(tmp_path: Path, gated_repo: Path) -> None:
    # Detecting only IP addresses leaves every name in clear: the corpus must be refused.
    repo = copy_gated_repo(gated_repo, tmp_path, anonymize={"info_types": ["IP_ADDRESS"]})
    result = dvc_repro(repo, "train")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "veiltune gate: error: gate refused the corpus" in output
    assert "mu_plus_sigma" in output and "threshold 5" in output
    assert json.loads((repo / "metrics" / "gate.json").read_text())["passed"] is False
    assert not (repo / "models" / "adapter").exists()
    assert not (repo / "metrics" / "train.json").exists()
