"""How a run with overrides becomes a DVC experiment: its name, its `-S` arguments, and
what is copied into DVC's temporary copy of the workspace."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import stages as registry
from flows.experiment import (
    copy_paths,
    exp_run_command,
    experiment_name,
    set_param_args,
    uncached_outputs,
)
from tests.pipeline_repo import REPO_ROOT


@pytest.mark.parametrize(
    ("name", "run_id", "expected"),
    [
        ("brave-tiger", "3f2a9c1d-0000", "brave-tiger-3f2a9c1d"),
        ("a b/c..d~e^f:g?h*[i]@{j}.lock", "0123456789", "a-b-c-d-e-f-g-h-i-j-lock-01234567"),
        ("-", "abcdef12", "run-abcdef12"),
    ],
)
def test_an_experiment_is_named_after_its_flow_run_as_a_valid_git_ref(
    name: str, run_id: str, *, expected: str
) -> None:
    assert experiment_name(name, run_id) == expected
    ref = f"refs/exps/ab/cdef/{expected}"
    assert subprocess.run(["git", "check-ref-format", ref], check=False).returncode == 0


OVERRIDES: dict[str, Any] = {
    "train.max_steps": 5,
    "train.learning_rate": 0.0005,
    "ingest.corpus_path": "/data/my corpus's\\x\\'y.jsonl\\",
    "register.model_name": "1e5",  # a string that reads as a number
    "register.experiment": "nan",
    "ingest.dialogsum.path": None,
    "train.tasks": ["summary", "purpose"],
    "gate.threshold": 4.5,
    "review.sample_size": 12,
    "export.pi_scan_min_chars": 6,
    "base_model.source": "true",  # a string that reads as a boolean
}


def test_dvc_sets_each_override_as_veiltune_would(tmp_path: Path) -> None:
    """The `-S` arguments, applied by DVC's own code, give params.yaml the same values as the
    registry's overrides (and keep every other key)."""
    from dvc.utils.hydra import apply_overrides

    params_file = tmp_path / "params.yaml"
    params_file.write_text((REPO_ROOT / "params.yaml").read_text())
    params = registry.load_params(params_file)
    args = set_param_args(OVERRIDES)
    assert args[::2] == ["-S"] * len(OVERRIDES)
    apply_overrides(params_file, args[1::2])
    assert yaml.safe_load(params_file.read_text()) == registry.apply_overrides(params, OVERRIDES)


def test_the_experiment_runs_the_selected_stages_alone_in_a_temporary_copy() -> None:
    command = exp_run_command(
        "run-1", ["ingest", "risk"], overrides={"train.max_steps": 5}, copy=["data/raw"]
    )
    assert command[-12:] == [
        "exp", "run", "--temp", "-n", "run-1", "-C", "data/raw", "-S", "++train.max_steps=5",
        "--single-item", "ingest", "risk",
    ]  # fmt: skip


def test_what_dvc_keeps_out_of_its_cache_is_copied_into_the_experiment(tmp_path: Path) -> None:
    uncached = uncached_outputs(REPO_ROOT / "dvc.yaml")
    assert {"data/raw", "data/pi_inventory/gold.jsonl", "data/splits.json",
            "metrics/ingest.json"} <= set(uncached)  # fmt: skip
    assert "models/base" not in uncached and "data/anonymized" not in uncached
    for path in ("data/raw/corpus.jsonl", "data/pi_inventory/gold.jsonl", "data/splits.json",
                 "data/anonymized/corpus.jsonl", "metrics/ingest.json", "metrics/gate.json",
                 "notes/kept.json", "dvc.lock"):  # fmt: skip
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "notes/kept.json"], cwd=tmp_path, check=True)
    outputs = [*uncached, "notes/kept.json", "notes/missing.json"]
    # data/raw whole; gold.jsonl and the metrics with their folders (nothing there is tracked,
    # so DVC's copy would find no folder); splits.json alone, into the data/ that copying
    # data/raw made (not data/ whole, with every cached output in it); the tracked file comes
    # with the commit
    first = ["data/raw", "data/pi_inventory", "data/splits.json"]
    assert copy_paths(tmp_path, outputs) == [*first, "metrics", "dvc.lock"]
    subprocess.run(["git", "add", "metrics/gate.json", "dvc.lock"], cwd=tmp_path, check=True)
    assert copy_paths(tmp_path, outputs) == [*first, "metrics/ingest.json"]


def test_a_corpus_path_is_made_absolute_for_the_experiments_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.pipeline import run_changes

    monkeypatch.chdir(tmp_path)
    assert run_changes({"train.max_steps": 5}, "in/c.jsonl") == {
        "train.max_steps": 5,
        "ingest.corpus_path": str(tmp_path / "in" / "c.jsonl"),
    }
    assert run_changes({"ingest.corpus_path": "c.jsonl"}, None) == {
        "ingest.corpus_path": str(tmp_path / "c.jsonl")
    }
    assert run_changes({"ingest.corpus_path": None}, None) == {"ingest.corpus_path": None}
    assert run_changes(None, None) == {}
