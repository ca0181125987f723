"""The train stage's params: ``TrainConfig``, whose ``train.method`` is one of the training
methods registered in ``components/train/methods.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import params_section
from components.core.config import require as _require
from components.train.methods import TRAINING_METHODS
from components.train.params import FragmentsConfig, GenerationSettings, TrainParams

__all__ = ["FragmentsConfig", "GenerationSettings", "TrainConfig"]


@dataclass
@params_section("train")
class TrainConfig(TrainParams):
    """``params.yaml``'s ``train``: :class:`TrainParams`, with ``train.method`` a registered
    method's name and the params that method needs."""

    SECTION: ClassVar[str] = "train"

    def check_method(self) -> None:
        """Refuse an unregistered ``train.method``, then whatever its method refuses."""
        _require(
            self.method in TRAINING_METHODS, "train.method", allowed=" | ".join(TRAINING_METHODS)
        )
        TRAINING_METHODS[self.method].check(self)
