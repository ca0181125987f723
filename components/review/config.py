"""The review stage's params: the sample of anonymized conversations reviewers read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import require as _require


@dataclass
class ReviewConfig:
    SECTION: ClassVar[str] = "review"

    sample_size: int = 40  # conversations in the sample (stratified by context and risk band)
    seed: int = 7

    def __post_init__(self) -> None:
        _require(self.sample_size >= 1, "review.sample_size", "an integer >= 1")
