"""The evaluate stage's params."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import require as _require


@dataclass
class EvaluateConfig:
    SECTION: ClassVar[str] = "evaluate"

    max_conversations: int = 30  # held-out conversations scored (all tasks of each)
    max_new_tokens: int = 48
    max_prompt_tokens: int = 768
    include_base: bool = True  # also score the base model zero-shot, for the report

    def __post_init__(self) -> None:
        _require(self.max_conversations >= 1, "evaluate.max_conversations", "an integer >= 1")
        _require(self.max_new_tokens >= 1, "evaluate.max_new_tokens", "an integer >= 1")
        _require(self.max_prompt_tokens >= 16, "evaluate.max_prompt_tokens", "an integer >= 16")
