"""The train stage with two processes under the DeepSpeed launcher, on this CPU (gloo): a
hostfile of one ``localhost`` node with two slots, the launch a cluster makes with more.

Each rank trains on its own share of every batch; rank 0 alone writes the adapter, the
metrics and the MLflow run; a two-process run killed after its first checkpoint resumes from
it; and the adapter it ends with is the one a single process trains with the same global
batch."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline_repo import (
    BIN,
    REPO_ROOT,
    copy_gated_repo,
    dvc_repro,
    free_port,
    pipeline_env,
    update_params,
)

ZERO2 = REPO_ROOT / "infra" / "deepspeed" / "zero2.json"
# Per rank: one row a step. One process takes two rows a step: the same global batch.
# No LoRA dropout: its masks come from each process's own random stream, so with it the runs
# differ by design (measured: up to 80% of a lora_B tensor's norm after 4 steps).
TRAIN = {
    "lora_dropout": 0.0,
    "deepspeed": str(ZERO2),
    "max_steps": 4,
    "save_steps": 2,
    "batch_size": 1,
    "eval_fraction": 0.0,
    "packing": False,
}


def set_train(repo: Path, **values: Any) -> None:
    update_params(repo, {"train": values})


def launch(repo: Path, **popen: Any) -> subprocess.Popen[str]:
    """``veiltune -v train`` under the deepspeed launcher: two ranks on localhost."""
    hostfile = repo / "hostfile"
    hostfile.write_text("localhost slots=2\n")
    command = [
        str(BIN / "deepspeed"),
        "--hostfile", str(hostfile), "--no_ssh_check",
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
        "--module", "veiltune.cli", "-v", "train",
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        cwd=repo,
        env=pipeline_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the launcher and its ranks: one group to kill
        **popen,
    )


def finished(process: subprocess.Popen[str]) -> str:
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output[-4000:]
    return output


def adapter_weights(repo: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(repo / "models" / "adapter" / "adapter_model.safetensors")


def assert_same_adapter(trained: dict[str, Any], expected: dict[str, Any]) -> None:
    """Each tensor within 1% of the expected one's norm (measured: at most 0.04%; float
    sums in another order)."""
    assert trained.keys() == expected.keys()
    for key, weight in expected.items():
        difference = float((trained[key] - weight).norm() / weight.norm())
        assert difference < 0.01, (key, difference)


def train_metrics(repo: Path) -> dict[str, Any]:
    return json.loads((repo / "metrics" / "train.json").read_text())


def fetched_rows(output: str) -> dict[int, list[int]]:
    """The training rows each rank fetched, from its ``-v`` log."""
    found = re.findall(r"rank (\d+) fetched rows \[([\d, ]*)\]", output)
    return {int(rank): [int(i) for i in rows.split(",") if i.strip()] for rank, rows in found}


def train_runs(repo: Path) -> list[Any]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("veiltune")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    return [r for r in runs if r.data.tags.get("veiltune.stage") == "train"]


@pytest.mark.slow
def test_two_ranks_under_the_deepspeed_launcher(tmp_path: Path, gated_repo: Path) -> None:
    repo = copy_gated_repo(gated_repo, tmp_path, train=TRAIN)
    gated = dvc_repro(repo, "gate")  # nothing to do in the copy
    assert gated.returncode == 0, gated.stderr[-3000:]
    assert "Running stage" not in gated.stdout, gated.stdout[-3000:]

    # One process, two rows a step.
    set_train(repo, batch_size=2)
    single = subprocess.run(
        [str(BIN / "veiltune"), "-v", "train"],
        cwd=repo, env=pipeline_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert single.returncode == 0, single.stderr[-4000:]
    one = adapter_weights(repo)
    one_rows = fetched_rows(single.stderr)[0]
    assert train_metrics(repo)["world_size"] == 1
    single_loss = train_metrics(repo)["train_loss"]

    # Two ranks, one row a step each: killed once rank 0 has written the step-2 checkpoint,
    # then launched again. It resumes there and ends with the one process's adapter.
    set_train(repo, batch_size=1)
    work = repo / ".veiltune" / "train"
    killed = launch(repo)
    state = work / "checkpoint-2" / "trainer_state.json"
    deadline = time.monotonic() + 900
    while not state.is_file() and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert state.is_file(), "no checkpoint before the run ended"
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=60)
    assert killed.returncode != 0

    output = finished(launch(repo))
    rows = fetched_rows(output)
    assert set(rows) == {0, 1}
    # Each rank fetched its own rows of steps 3 and 4, and together the rows the one process
    # trained on at those steps (each rank's loader fetches a batch ahead; the resumed run
    # skips the batches of steps 1 and 2 without fetching them).
    assert not set(rows[0][:2]) & set(rows[1][:2])
    assert sorted(rows[0][:2] + rows[1][:2]) == sorted(one_rows[4:8])
    metrics = train_metrics(repo)
    assert metrics["resumed_from_step"] == 2 and metrics["steps"] == 4
    assert metrics["world_size"] == 2 and metrics["engine"] == "deepspeed-zero2"
    assert not list(work.glob("checkpoint-*"))  # a finished run removes its checkpoints
    assert not (work / "rank-1").exists()
    two = adapter_weights(repo)
    assert_same_adapter(two, one)
    # within 1e-3 of an uninterrupted two-rank run, which is within 1e-3 of one process
    assert metrics["train_loss"] == pytest.approx(single_loss, abs=2e-3)
    assert any(float(w.abs().sum()) > 0 for k, w in two.items() if "lora_B" in k)
    runs = train_runs(repo)
    finished_runs = [r for r in runs if r.info.status == "FINISHED"]
    # one per launch at most (the killed one may have begun its own): rank 1 logged nothing
    assert len(finished_runs) == 2 and len(runs) <= 3
    assert {r.data.metrics["world_size"] for r in finished_runs} == {1.0, 2.0}
