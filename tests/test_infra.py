"""The cluster launch files under infra/: valid syntax, and each starts the train stage the
way veiltune runs it (the launcher's variables left to the launcher)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from components.anonymize.config import AnonymizeConfig

INFRA = Path(__file__).resolve().parents[1] / "infra"
SBATCH_KEYS = {"job-name", "nodes", "ntasks-per-node", "gpus-per-node", "cpus-per-task"}
SBATCH_KEYS |= {"time", "output"}


def test_the_sbatch_script_is_valid_bash_with_known_directives() -> None:
    script = INFRA / "slurm" / "train.sbatch"
    bash = shutil.which("bash")
    assert bash is not None
    checked = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    text = script.read_text()
    directives = dict(re.findall(r"^#SBATCH --([a-z-]+)=(\S+)$", text, re.MULTILINE))
    assert set(directives) == SBATCH_KEYS
    assert int(directives["nodes"]) >= 2 and directives["ntasks-per-node"] == "1"
    # Every #SBATCH line comes before the first command, or Slurm ignores it.
    first_command = next(
        i for i, line in enumerate(text.splitlines()) if line and not line.startswith("#")
    )
    assert all(
        i < first_command for i, line in enumerate(text.splitlines()) if line.startswith("#SBATCH")
    )
    assert "-m veiltune.cli train" in text and "--rdzv-endpoint" in text


def test_the_pytorchjob_manifest_is_a_master_and_workers_running_the_train_stage() -> None:
    (document,) = list(yaml.safe_load_all((INFRA / "k8s" / "pytorchjob.yaml").read_text()))
    assert (document["apiVersion"], document["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    replicas = document["spec"]["pytorchReplicaSpecs"]
    assert set(replicas) == {"Master", "Worker"} and replicas["Master"]["replicas"] == 1
    for spec in replicas.values():
        (container,) = spec["template"]["spec"]["containers"]
        assert container["name"] == "pytorch"  # the name the operator looks for
        assert container["command"][-3:] == ["-m", "veiltune.cli", "train"]
        env = {item["name"]: item["value"] for item in container["env"]}
        assert env["HF_HUB_OFFLINE"] == "1"
        assert not {"RANK", "WORLD_SIZE", "MASTER_ADDR"} & set(env)  # the operator's
        mounts = {m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"] for v in spec["template"]["spec"]["volumes"]}
        assert mounts <= volumes


@pytest.mark.parametrize("key", ["cluster", "cluster_timeout_s", "cluster_tls", "workers"])
def test_the_dask_readme_names_params_that_exist(key: str) -> None:
    text = (INFRA / "dask" / "README.md").read_text()
    assert f"anonymize.{key}" in text
    assert key in {f.name for f in fields(AnonymizeConfig)}
