"""The audit stage's params: which attacks run and their pass thresholds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from pydantic import Field

from audits.registry import AUDITS
from components.core.config import Count, NonNegativeInt, Positive, Unit, params_section
from components.core.config import require as _require


@dataclass
@params_section("audit")
class AuditConfig:
    SECTION: ClassVar[str] = "audit"

    audits: list[str] = field(default_factory=lambda: list(AUDITS))  # which attacks run
    max_new_tokens: Count = 48
    # PI in outputs: task prompts over held-out anonymized conversations plus adversarial
    # questions; a leak is an inventory value (by salted hash) in an output.
    n_prompts: Count = 16
    min_value_chars: int = 6  # inventory values shorter than this are too common to count
    max_leaks: NonNegativeInt = 0
    # Canary exposure: each canary ranked among this many random secrets of its format.
    canary_candidates: Annotated[int, Field(ge=10)] = 200
    max_canary_exposure: Positive = 10.0  # bits, estimated beyond the sample (normal fit)
    # Verbatim extraction: prefixes of training conversations that end where a PI value
    # starts that the context has not shown; extracted if the greedy continuation
    # reproduces the next k tokens.
    extraction_prefixes: Count = 24
    extraction_k: Count = 8
    max_extraction_rate: Unit = 0.05
    # Membership inference: the loss on the PI tokens of training vs held-out conversations.
    mia_conversations: Annotated[int, Field(ge=2)] = 24  # at most this many of each side
    max_mia_auc: Annotated[float, Field(ge=0.5, le=1)] = 0.75
    # Hiding in plain sight: real residual names vs the name-like words around them (the
    # surrogates), scored by corpus rarity and the base LM; reports, never fails.
    plain_sight_conversations: Count = 40  # at most this many training conversations
    max_prompt_tokens: Annotated[int, Field(ge=32)] = 768  # longer contexts keep their end
    # The one-run DP audit (ingest.audit_canaries): "inserted" guessed for this many
    # best-scoring canaries and "not inserted" for as many of the worst; the rest abstain.
    dp_guesses: Count = 100
    seed: int = 13

    def __post_init__(self) -> None:
        unknown = sorted(set(self.audits) - set(AUDITS))
        _require(
            bool(self.audits) and not unknown,
            "audit.audits",
            allowed=f"a non-empty list of {tuple(AUDITS)}",  # audits/registry.py's names
        )
