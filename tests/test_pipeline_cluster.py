"""The pipeline's data stages with ``anonymize.cluster: local``, under ``dvc repro``: anonymize
and the risk stage's estimate give the same outputs, byte for byte, as in one process, so
DVC sees nothing downstream change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.pipeline_repo import copy_gated_repo, dvc_repro

OUTPUTS = (
    "data/anonymized/corpus.jsonl",
    "data/anonymized/spans.jsonl",
    "data/risk/risk_table.csv",
    "data/risk/estimate_table.csv",
    "data/risk/residual_items.jsonl",
    "metrics/risk.json",
)


@pytest.mark.slow
def test_the_data_stages_on_a_local_cluster_write_the_one_process_outputs(
    tmp_path: Path, gated_repo: Path
) -> None:
    repo = copy_gated_repo(gated_repo, tmp_path)
    first = dvc_repro(repo, "risk")  # in one process: nothing to do in the copy
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Running stage" not in first.stdout, first.stdout[-3000:]
    in_process = {name: (repo / name).read_bytes() for name in OUTPUTS}

    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["anonymize"].update({"cluster": "local", "workers": 2})
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    second = dvc_repro(repo, "risk")
    assert second.returncode == 0, second.stderr[-3000:]
    # Both stages ran on the cluster (its params changed), then wrote what they wrote before.
    assert second.stderr.count("Running on a local Dask cluster of 2 workers") == 2
    assert {name: (repo / name).read_bytes() for name in OUTPUTS} == in_process
    metrics = json.loads((repo / "metrics" / "anonymize.json").read_text())
    assert metrics["workers"] == 2 and metrics["n_conversations"] > 0
    leftovers = [p.name for p in (repo / "data" / "anonymized").iterdir()]
    assert sorted(leftovers) == ["corpus.jsonl", "spans.jsonl"]  # no part folder left
