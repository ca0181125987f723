"""What a training run reports: its figures, from the Trainer's log history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrainResult:
    """What a training run reports, whatever its method: the train stage's metrics."""

    n_examples: int
    steps: int
    train_loss: float
    trainable_parameters: int
    total_parameters: int
    runtime_s: float
    loss_history: list[tuple[int, float]]
    n_sequences: int = 0  # training rows: examples, or packed rows of several
    padding_share: float = 0.0
    resumed_from_step: int = 0
    tokens_per_step: float = 0.0  # non-padding tokens in a mean optimizer step
    tokens_trained: int = 0  # non-padding tokens of the rows this run trained on
    engine: str = "torch"  # or "deepspeed-zero<stage>"
    world_size: int = 1  # processes that trained, each on its share of every batch
    eval_history: list[tuple[int, float]] = field(default_factory=list)
    n_eval_examples: int = 0
    n_conversations: int = 0  # conversations whose examples were trained on
    n_conversations_eval: int = 0  # conversations held out to measure eval loss
    n_conversations_skipped: int = 0  # no example for the selected train.tasks
    # preference tuning: TRL's last logged rewards (``preference.rewards_margins`` ...)
    preference: dict[str, float] = field(default_factory=dict)
    n_audit_canaries: int = 0  # the one-run audit's canaries trained on, a unit each
    # train.privacy: the accountant's ε spent, δ, the noise and sampling (``dp.*``)
    privacy: dict[str, float | str] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        """Non-padding tokens trained on per second: the rows the run fetched, counted (the
        dataset's mean batch times the steps, when no count was made)."""
        if not self.runtime_s:
            return 0.0
        if self.tokens_trained:
            return self.tokens_trained / self.runtime_s
        return self.tokens_per_step * (self.steps - self.resumed_from_step) / self.runtime_s

    def to_metrics(self) -> dict[str, float | str]:
        return {
            "n_examples": self.n_examples,
            "steps": self.steps,
            "train_loss": round(self.train_loss, 4),
            "trainable_parameters": self.trainable_parameters,
            "total_parameters": self.total_parameters,
            "runtime_s": round(self.runtime_s, 2),
            "n_sequences": self.n_sequences,
            "padding_share": self.padding_share,
            "resumed_from_step": self.resumed_from_step,
            "tokens_per_second": round(self.tokens_per_second, 1),
            "engine": self.engine,
            "world_size": self.world_size,
            "n_eval_examples": self.n_eval_examples,
            "n_conversations": self.n_conversations,
            "n_conversations_eval": self.n_conversations_eval,
            "n_conversations_skipped": self.n_conversations_skipped,
            "n_audit_canaries": self.n_audit_canaries,
            **self.preference,
            **self.privacy,
            **(
                {"best_eval_loss": round(min(loss for _, loss in self.eval_history), 4)}
                if self.eval_history
                else {}
            ),
        }


def mean_train_loss(log_history: Sequence[dict[str, Any]]) -> float:
    """The mean training loss over every step of the run, from the Trainer's log history.

    Each ``loss`` entry is the mean over the steps since the one logged before it, so it
    weighs that many steps. A resumed Trainer restores the history up to its checkpoint
    (``trainer_state.json``), so a killed and resumed run reports what an uninterrupted one
    does; ``TrainOutput.training_loss`` covers only the steps of this process.
    """
    total, last = 0.0, 0
    for entry in log_history:
        step = int(entry.get("step", 0))
        if "loss" in entry and step > last:
            total += float(entry["loss"]) * (step - last)
            last = step
    return total / last if last else 0.0


def logged(log_history: Sequence[dict[str, Any]], name: str) -> list[tuple[int, float]]:
    """Each step's logged ``name`` (``loss``, ``eval_loss``) in the Trainer's log history."""
    return [(int(h["step"]), float(h[name])) for h in log_history if name in h]
