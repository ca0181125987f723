"""The train stage's params."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from components.core.config import require as _require
from components.train.tasks import TASK_PROMPTS, TRAIN_TASKS

TRAIN_CORPORA = ("anonymized", "raw", "masked")

PADDINGS = ("longest", "max_length")


@dataclass
class TrainConfig:
    SECTION: ClassVar[str] = "train"

    max_steps: int = 40
    learning_rate: float = 2e-4
    batch_size: int = 2
    gradient_accumulation_steps: int = 1
    max_seq_length: int = 768
    lora_r: int = 32
    lora_alpha: int = 64
    lora_dropout: float = 0.1
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"]
    )
    seed: int = 13
    packing: bool = True  # several short examples per sequence, attention kept within each
    # Without packing, a batch is padded to its longest example, or to max_seq_length for
    # fixed shapes (compiled graphs, XLA); the benchmark measures packing against both.
    padding: str = "longest"
    save_steps: int = 20  # checkpoint every N steps; a re-run resumes from the last one
    # A DeepSpeed config (infra/deepspeed/zero2.json, zero3.json, zero3_offload.json) or
    # null for plain PyTorch. The same entry point runs under the `deepspeed` launcher on
    # GPUs and nodes, and on CPU (gloo) as a single process.
    deepspeed: str | None = None
    # What the adapter learns from: the anonymized corpus (the product), or, as baselines
    # for the utility report, the raw corpus (the "oracle") or placeholders as a bare [MASK].
    corpus: str = "anonymized"
    eval_fraction: float = 0.05  # conversations whose examples measure eval loss
    early_stopping_patience: int = 3  # evaluations without improvement; 0 never stops
    # The tasks trained on. "continuation" (continue a call from its first half: agent
    # assist, domain adaptation) trains on transcript text itself, where a model can
    # memorize what anonymizing missed; off by default: in 30 steps it teaches the model to
    # continue transcripts when asked for a summary.
    tasks: list[str] = field(default_factory=lambda: list(TASK_PROMPTS))

    def __post_init__(self) -> None:
        unknown = sorted(set(self.tasks) - set(TRAIN_TASKS))
        _require(
            bool(self.tasks) and not unknown, "train.tasks", f"a non-empty list of {TRAIN_TASKS}"
        )
        _require(self.max_steps >= 1, "train.max_steps", "an integer >= 1")
        _require(self.save_steps >= 1, "train.save_steps", "an integer >= 1")
        _require(self.corpus in TRAIN_CORPORA, "train.corpus", " | ".join(TRAIN_CORPORA))
        _require(self.padding in PADDINGS, "train.padding", " | ".join(PADDINGS))
        _require(0.0 <= self.eval_fraction < 0.5, "train.eval_fraction", "0 <= x < 0.5")
        _require(self.early_stopping_patience >= 0, "train.early_stopping_patience", ">= 0")
        _require(self.learning_rate > 0, "train.learning_rate", "a number > 0")
        _require(self.batch_size >= 1, "train.batch_size", "an integer >= 1")
        _require(
            self.gradient_accumulation_steps >= 1,
            "train.gradient_accumulation_steps",
            "an integer >= 1",
        )
        _require(self.max_seq_length >= 16, "train.max_seq_length", "an integer >= 16")
        _require(self.lora_r >= 1, "train.lora_r", "an integer >= 1")
        _require(0.0 <= self.lora_dropout < 1.0, "train.lora_dropout", "0 <= x < 1")
        _require(bool(self.target_modules), "train.target_modules", "a non-empty list")
