"""The training and eval loss logged to MLflow while the Trainer runs, step by step."""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

LOGGED = ("loss", "eval_loss")


class MlflowLossCallback(TrainerCallback):
    """Logs each ``loss`` and ``eval_loss`` the Trainer reports to the active MLflow run, at
    its step, as it happens; ``logged`` keeps the steps sent, by metric."""

    def __init__(self) -> None:
        self.logged: dict[str, set[int]] = {name: set() for name in LOGGED}

    def on_log(
        self,
        args: Any,
        state: Any,
        control: Any,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        import mlflow

        if not state.is_world_process_zero or not logs:
            return
        for name in LOGGED:
            if name in logs:
                mlflow.log_metric(name, float(logs[name]), step=int(state.global_step))
                self.logged[name].add(int(state.global_step))
