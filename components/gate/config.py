"""The gate stage's params."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from components.core.config import Positive, params_section


@dataclass
@params_section("gate")
class GateConfig:
    SECTION: ClassVar[str] = "gate"

    threshold: Positive = 5.0
    known_contexts: list[str] | None = field(
        default_factory=lambda: [
            "customer_support",
            "sales",
            "internal_meeting",
            "one_to_one",
            "voicemail",
            "dialogue",
            "unknown",
        ]
    )  # every conversation's context must be one of these
    per_context: bool = False  # also require mu + sigma < threshold within each context
