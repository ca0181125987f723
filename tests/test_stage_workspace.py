"""A stage reads and writes its workspace, never the working directory: run from an empty
folder on a copy of the gated repo, risk and gate write what `dvc repro` wrote there, byte
for byte but for the ids and times Great Expectations stamps on each validation, and log to
the repo's own MLflow store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from components.core import paths
from components.core.tracking import PARENT_RUN_ENV
from components.stages import BY_NAME, run_stage
from tests.pipeline_repo import copy_gated_repo

STAGES = ("risk", "gate")  # the template ran both (review is not upstream of gate)


# What GX stamps on every validation (data/gate/validation.json), and its page shows.
STAMPED = ("id", "checkpoint_id", "run_id", "validation_id", "validation_time", "ge_load_time")
GATE_PAGE = paths.GATE_PAGE.as_posix()


def _unstamped(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unstamped(v) for k, v in value.items() if k not in STAMPED}
    return [_unstamped(v) for v in value] if isinstance(value, list) else value


def _written(repo: Path) -> dict[str, bytes]:
    """Every file the stages declare they write, by its path in the repo."""
    written = {}
    for name in STAGES:
        stage = BY_NAME[name]
        for artifact in (*stage.outs, *stage.metrics):
            path = repo / artifact.path
            files = sorted(path.rglob("*")) if path.is_dir() else [path]
            for file in (f for f in files if f.is_file()):
                written[file.relative_to(repo).as_posix()] = file.read_bytes()
    return written


@pytest.mark.slow
def test_stages_run_from_another_folder_write_their_workspace_byte_for_byte(
    tmp_path: Path, gated_repo: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_gated_repo(gated_repo, tmp_path)
    by_dvc = _written(repo)
    for name in by_dvc:  # each must be written again
        (repo / name).unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv(PARENT_RUN_ENV, raising=False)
    for name in STAGES:
        run_stage(name, repo / "params.yaml", workspace=repo)
    assert list(elsewhere.iterdir()) == []
    again = _written(repo)
    assert sorted(again) == sorted(by_dvc)
    differ = [name for name in by_dvc if again[name] != by_dvc[name]]
    assert sorted(differ) == sorted([paths.GATE_RESULT.as_posix(), GATE_PAGE])
    gate = [json.loads(r[paths.GATE_RESULT.as_posix()]) for r in (by_dvc, again)]
    assert _unstamped(gate[0]) == _unstamped(gate[1]) and gate[0]["results"]
    with sqlite3.connect(repo / "mlflow.db") as store:
        logged = {name for (name,) in store.execute("SELECT name FROM runs")}
    assert set(STAGES) <= logged
    assert (repo / paths.metrics_file("gate")).is_file()
