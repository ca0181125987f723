"""The shape of a training method (``train.method``): a name, a check of the params it
needs, and a ``train`` that turns a :class:`TrainingJob` into a saved adapter and its
:class:`TrainResult`. The methods are registered in ``components/train/methods.py``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from components.core.corpus import Conversation
from components.train.params import TrainParams
from components.train.result import TrainResult
from components.train.tasks import Example, TrainingExamples


@dataclass(frozen=True)
class TrainingJob:
    """What the train stage asks of a method: a LoRA adapter of the base model, trained on
    the conversations as ``config`` says, saved to ``output_dir``; checkpoints go to
    ``work_dir``, a run killed there resumes from them."""

    base_model_dir: Path
    conversations: Sequence[Conversation]
    config: TrainParams
    output_dir: Path
    work_dir: Path
    callbacks: Sequence[Any] = ()  # Trainer callbacks (the live MLflow loss)
    # Examples the stage built from the corpus (train.corpus: fragmented), trained on
    # instead of the conversations' task examples by methods that train on examples.
    examples: TrainingExamples | None = None
    source: str = "the training corpus"  # the corpus file, named in input errors
    # The one-run audit's inserted canaries (``ingest.audit_canaries``), each trained on as
    # a unit of its own beside the conversations' examples.
    canaries: Sequence[Example] = ()


class TrainingMethod(Protocol):
    """How an adapter learns: one per ``train.method`` value."""

    @property
    def name(self) -> str:
        """The ``train.method`` value that selects this method."""
        ...

    def check(self, config: TrainParams) -> None:
        """Refuse params this method cannot train with, before any data is read.

        Raises:
            ParamsError: naming the key and what it allows with this method.
        """
        ...

    def train(self, job: TrainingJob) -> TrainResult:
        """Train and save the job's adapter; the run's figures."""
        ...
