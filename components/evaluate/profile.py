"""The utility profile's plan: which runs ``veiltune utility-profile`` trains, and the
``dvc exp run -S`` overrides of each.

A run is one variant at one training seed. Its sizes come from a preset (``default`` keeps
params.yaml's; ``large`` trains longer and scores more held-out conversations), each
overridable on the command line. On a GPU, pass a bigger ``--steps``: the preset's steps
are sized for hours on a CPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.core import paths
from components.core.errors import InputError
from components.evaluate.config import SCORED_TASKS
from components.evaluate.variants import MASKED, ORACLE, PLACEHOLDER, variant_overrides

DEFAULT_VARIANTS = (ORACLE, MASKED, PLACEHOLDER, "surrogate-realistic")
DEFAULT_SEEDS = (13, 14)
RUN_STORE = paths.UTILITY_REPORT / "runs"  # <variant>/seed-<seed>/: one run's evaluation


@dataclass(frozen=True)
class Sizes:
    """How big each run is; None keeps params.yaml's value."""

    steps: int | None = None  # train.max_steps
    conversations: int | None = None  # ingest.n_conversations
    heldout_fraction: float | None = None  # ingest.heldout_fraction
    max_eval: int | None = None  # evaluate.max_conversations
    # train.tasks: every variant on the same tasks, e.g. ("continuation",) to compare with
    # fragments, which train on language modelling only; evaluate.tasks follows (the call
    # tasks among them: none scores raw-text perplexity alone)
    tasks: tuple[str, ...] | None = None

    def overrides(self) -> dict[str, Any]:
        """The params these sizes set."""
        keys = {
            "train.max_steps": self.steps,
            "ingest.n_conversations": self.conversations,
            "ingest.heldout_fraction": self.heldout_fraction,
            "evaluate.max_conversations": self.max_eval,
            "train.tasks": list(self.tasks) if self.tasks else None,
            "evaluate.tasks": [t for t in self.tasks if t in SCORED_TASKS] if self.tasks else None,
        }
        return {key: value for key, value in keys.items() if value is not None}


PROFILES = {
    "default": Sizes(),
    # 10x the default steps; 120 held-out generated conversations (and 40 DialogSum).
    "large": Sizes(steps=400, conversations=600, heldout_fraction=0.2, max_eval=120),
}


@dataclass(frozen=True)
class PlannedRun:
    variant: str
    seed: int
    overrides: dict[str, Any]

    def exp_run_args(self) -> list[str]:
        """The ``dvc exp run`` arguments that train and evaluate this run in the workspace
        (the evaluate stage and what it needs; audits and the bundle are not run)."""
        settings = (a for k, v in self.overrides.items() for a in ("-S", f"{k}={_hydra(v)}"))
        return ["exp", "run", *settings, "evaluate"]


def _hydra(value: Any) -> str:
    """A value as DVC's ``-S`` (Hydra's override grammar) reads it: lists as ``[a,b]``."""
    if isinstance(value, list | tuple):
        return "[" + ",".join(_hydra(v) for v in value) + "]"
    return str(value)


def profile_sizes(profile: str, given: Sizes) -> Sizes:
    """A preset's sizes with those ``given`` (not None) in their place.

    Raises:
        InputError: ``profile`` is not a preset's name.
    """
    if profile not in PROFILES:
        raise InputError(f"unknown profile {profile!r}: expected one of {', '.join(PROFILES)}")
    explicit = {f.name: getattr(given, f.name) for f in dataclasses.fields(given)}
    return dataclasses.replace(
        PROFILES[profile], **{k: v for k, v in explicit.items() if v is not None}
    )


def plan_runs(variants: Sequence[str], seeds: Sequence[int], *, sizes: Sizes) -> list[PlannedRun]:
    """A run per variant and seed, in that order; an unknown variant is an InputError
    before anything runs."""
    return [
        PlannedRun(
            variant, seed, {**variant_overrides(variant), "train.seed": seed, **sizes.overrides()}
        )
        for variant in variants
        for seed in seeds
    ]
