"""The training methods ``train.method`` chooses from: the train stage trains with the one
it names, and ``TrainConfig`` accepts no other name. A new method is a module with a
:class:`~components.train.training_method.TrainingMethod` and one line here
(``docs/extending/training-methods.md``)."""

from __future__ import annotations

from components.train.lora import SFT
from components.train.preference import DPO, ORPO
from components.train.training_method import TrainingMethod

TRAINING_METHODS: dict[str, TrainingMethod] = {
    method.name: method
    for method in (
        SFT,  # supervised fine-tuning on the tasks' answers
        DPO,  # preference tuning on (private, leaking) summary pairs
        ORPO,
    )
}
