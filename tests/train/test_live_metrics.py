"""The training loss reaches MLflow while the Trainer runs, not only once it has ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from transformers import TrainerCallback

from components.core.tracking import configure_tracking
from components.train.config import TrainConfig
from components.train.live_metrics import MlflowLossCallback
from components.train.lora import train_lora
from tests.train.test_lora import conversations


class LossSeenMidRun(TrainerCallback):
    """Reads the run's loss history in MLflow when the second step begins."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.seen: list[int] | None = None

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:  # noqa: PLR0917 (the Trainer's callback signature)
        from mlflow.tracking import MlflowClient

        if state.global_step == 1:
            history = MlflowClient().get_metric_history(self.run_id, "loss")
            self.seen = [m.step for m in history]


def test_each_step_loss_is_logged_as_it_happens(
    tmp_path: Path, base_model_dir: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = TrainConfig(max_steps=2, batch_size=2, max_seq_length=96, lora_r=2, lora_alpha=4)
    live = MlflowLossCallback()
    with mlflow.start_run(experiment_id=configure_tracking("live")) as run:
        probe = LossSeenMidRun(run.info.run_id)
        result = train_lora(
            base_model_dir,
            conversations(4),
            config=config,
            output_dir=tmp_path / "a",
            work_dir=tmp_path / "w",
            callbacks=[live, probe],
        )
    assert probe.seen == [1]  # step 1's loss was in MLflow before step 2 ran
    history = MlflowClient().get_metric_history(run.info.run_id, "loss")
    assert [m.step for m in history] == [step for step, _ in result.loss_history]
    assert [m.value for m in history] == pytest.approx([loss for _, loss in result.loss_history])
    assert live.logged["loss"] == {1, 2}


def test_the_step_bar_shows_the_loss_and_prints_no_log_dicts(
    tmp_path: Path, base_model_dir: Path, *, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    # The Trainer's own bar printed a dict per logging step under it: 42 lines of a
    # default run (issue 39).
    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = TrainConfig(max_steps=2, batch_size=2, max_seq_length=96, lora_r=2, lora_alpha=4)
    with mlflow.start_run(experiment_id=configure_tracking("bar")):
        train_lora(
            base_model_dir,
            conversations(4),
            config=config,
            output_dir=tmp_path / "a",
            work_dir=tmp_path / "w",
            callbacks=[],
        )
    printed = capfd.readouterr()
    assert "2/2" in printed.err  # the bar is there
    assert "loss=" in printed.err  # with the loss on it
    assert "'loss'" not in printed.err + printed.out
    assert "'train_runtime'" not in printed.err + printed.out
