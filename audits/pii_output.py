"""PI-in-outputs audit: prompt the trained model and look for known personal information in
what it writes, by salted hash against the PI inventory."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from components.pi_inventory import InventoryEntry, find_leaks


@dataclass(frozen=True)
class PiiOutputAudit:
    n_prompts: int
    n_outputs_with_leaks: int
    leaks_by_type: dict[str, int] = field(default_factory=dict)
    max_leaks: int = 0

    @property
    def n_leaks(self) -> int:
        return sum(self.leaks_by_type.values())

    @property
    def passed(self) -> bool:
        return self.n_leaks <= self.max_leaks

    def to_metrics(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "n_prompts": self.n_prompts,
            "n_outputs_with_leaks": self.n_outputs_with_leaks,
            "n_leaks": self.n_leaks,
            "pii_leaks_by_type": dict(sorted(self.leaks_by_type.items())),
            "max_leaks": self.max_leaks,
        }


def audit_outputs(
    outputs: Sequence[str],
    inventory: Sequence[InventoryEntry],
    salt: str,
    min_value_chars: int,
    max_leaks: int,
) -> PiiOutputAudit:
    """Count distinct inventory values found in each output, by info type."""
    by_type: Counter[str] = Counter()
    leaky_outputs = 0
    for text in outputs:
        leaks = find_leaks(text, inventory, salt, min_value_chars)
        leaky_outputs += bool(leaks)
        by_type.update(entry.entity_type for entry in leaks)
    return PiiOutputAudit(len(outputs), leaky_outputs, dict(by_type), max_leaks)
