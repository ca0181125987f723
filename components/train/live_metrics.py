"""The training and eval loss logged to MLflow while the Trainer runs, step by step, and
shown on the Trainer's step bar."""

from __future__ import annotations

import logging
from typing import Any

from transformers import ProgressCallback, Trainer, TrainerCallback

logger = logging.getLogger(__name__)

LOGGED = ("loss", "eval_loss")


class MlflowLossCallback(TrainerCallback):
    """Logs each ``loss`` and ``eval_loss`` the Trainer reports to the active MLflow run, at
    its step, as it happens; ``logged`` keeps the steps sent, by metric."""

    def __init__(self) -> None:
        self.logged: dict[str, set[int]] = {name: set() for name in LOGGED}

    def on_log(  # noqa: PLR0917 (the Trainer's callback signature)
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


class StepBarCallback(ProgressCallback):
    """The Trainer's step bar, with the latest ``loss`` and ``eval_loss`` on it.

    The Trainer's own bar prints the whole dict of every log (a line per logging step,
    ``logging_steps: 1``) under it: 40-odd lines of a default run. The dicts go to the
    debug log (``veiltune -v``); the losses stay in MLflow and metrics/train.json.
    """

    def __init__(self) -> None:
        super().__init__()
        self.shown: dict[str, str] = {}

    def on_log(  # noqa: PLR0917 (the Trainer's callback signature)
        self,
        args: Any,
        state: Any,
        control: Any,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        logger.debug("trainer log at step %d: %s", state.global_step, logs)
        self.shown.update({name: f"{float(logs[name]):.4g}" for name in LOGGED if name in logs})
        if self.training_bar is not None and self.shown:
            self.training_bar.set_postfix(self.shown, refresh=False)


def use_step_bar(trainer: Trainer) -> None:
    """Put :class:`StepBarCallback` in the place of the Trainer's own step bar, if it has one
    (none with ``disable_tqdm``)."""
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(StepBarCallback())
