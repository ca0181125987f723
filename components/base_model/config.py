"""The base_model stage's params."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import require as _require


@dataclass
class BaseModelConfig:
    SECTION: ClassVar[str] = "base_model"

    source: str = "bundled:smollm2"  # or a local Hugging Face model folder

    def __post_init__(self) -> None:
        _require(bool(self.source), "base_model.source", "'bundled:smollm2' or a folder path")
