"""The review stage's params: the sample of anonymized conversations reviewers read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import Count, params_section


@dataclass
@params_section("review")
class ReviewConfig:
    SECTION: ClassVar[str] = "review"

    sample_size: Count = 40  # conversations in the sample (stratified by context and risk band)
    seed: int = 7
