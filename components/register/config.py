"""The register stage's params."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import NonEmpty, params_section
from components.core.config import require as _require


@dataclass
@params_section("register")
class RegisterConfig:
    SECTION: ClassVar[str] = "register"

    model_name: NonEmpty = "veiltune-adapter"
    experiment: str = "veiltune"
    # A key of metrics/evaluate.json's adapter section: a new version becomes champion only
    # if this is at least the current champion's (at most, when lower is better).
    utility_metric: str = "summary.rouge1"
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        _require(
            bool(self.utility_metric.strip()),
            "register.utility_metric",
            allowed="a metric key of evaluate.json's adapter section, e.g. summary.rouge1",
        )
