"""DP training through the pipeline: `dvc repro` of train and audit with train.privacy on,
from a copy of the gated tiny repo (whose ingest drew the one-run audit's canaries). The ε
the accountant spent reaches train's metrics, and the one-run audit holds the model to it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pipeline_repo import copy_gated_repo, dvc_repro

PRIVATE = {"privacy": {"enabled": True, "epsilon": 4.0, "accountant": "rdp"}}


def test_dp_training_reports_its_epsilon_and_the_one_run_audit_checks_it(
    tmp_path: Path, gated_repo: Path
) -> None:
    repo = copy_gated_repo(gated_repo, tmp_path, train=PRIVATE)
    ran = dvc_repro(repo, "audit")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    train = json.loads((repo / "metrics" / "train.json").read_text())
    canaries = [
        json.loads(line)
        for line in (repo / "data" / "raw" / "audit_canaries.jsonl").read_text().splitlines()
    ]
    assert len(canaries) == 24
    assert train["n_audit_canaries"] == sum(c["inserted"] for c in canaries) > 0
    assert train["engine"] == "opacus-dp-sgd"
    assert 0 < train["dp.epsilon"] <= 4.0 + 0.05
    assert train["dp.delta"] < 1 / train["dp.units"]
    assert f"DP ε {train['dp.epsilon']} spent" in ran.stdout  # train's summary line
    audit = json.loads((repo / "metrics" / "audit.json").read_text())["audits"]["dp_one_run"]
    assert audit["passed"] and audit["thresholds"] == {
        "max_epsilon_lower_bound": train["dp.epsilon"]
    }
    assert 0 <= audit["figures"]["epsilon_lower_bound"] <= train["dp.epsilon"]
