"""What every card of a veiltune model states alike: its intended use, and which training
params apply to it (the register stage's card in the registry and the export stage's model
card both read them from here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INTENDED_USE = """\
- For: the conversation tasks it was tuned on (summaries, action items, purpose and outcome
  of a conversation), on conversations of the contexts listed under Training data, inside
  the organization that holds the data. Only the version holding the `champion` alias is
  approved for use; a `candidate` is for evaluation.
- Not for: identifying, profiling or contacting the people in conversations; writing
  about named individuals; decisions about people without human review; contexts or
  languages the corpus does not cover.
"""

# A train param that only some settings read: (the param that decides, its default, the
# values under which it applies). A card lists it only then: `beta` means nothing to SFT.
_APPLIES_WHEN: Mapping[str, tuple[str, Any, frozenset[Any]]] = {
    "beta": ("method", "sft", frozenset({"dpo", "orpo"})),
    "only_good": ("method", "sft", frozenset({"sft"})),
    "mask_loss_weight": ("corpus", "anonymized", frozenset({"masked"})),
    "fragments": ("corpus", "anonymized", frozenset({"fragmented"})),
    "padding": ("packing", True, frozenset({False})),
}


def applicable_train_params(train: Mapping[str, Any]) -> dict[str, Any]:
    """The ``train`` params that this run's method, corpus and packing read, sorted by key."""
    applicable = {}
    for key, value in train.items():
        rule = _APPLIES_WHEN.get(key)
        if rule is None or train.get(rule[0], rule[1]) in rule[2]:
            applicable[key] = value
    return dict(sorted(applicable.items()))
