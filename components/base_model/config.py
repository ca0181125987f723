"""The base_model stage's params."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import NonEmpty, params_section


@dataclass
@params_section("base_model")
class BaseModelConfig:
    SECTION: ClassVar[str] = "base_model"

    source: NonEmpty = "bundled:smollm2"  # or a local Hugging Face model folder
