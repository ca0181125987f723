"""The numbers of the utility report: each variant's seed-averaged scores with their bootstrap
intervals and per-seed spread, paired differences against the oracle, and the verdict on
issue 17's targets.

The targets: the best surrogate variant (and the placeholder one) within 5% of the oracle
on summary ROUGE-1 and raw perplexity, on the main corpus and DialogSum, and the surrogate
above placeholders. A verdict states each gap with its interval, whether the interval
decides it (lies wholly on one side of the target), and whether it is narrower than the
gap: a comparison that cannot resolve the gap it reports has not told the variants apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from components.evaluate.intervals import (
    RESAMPLES,
    Difference,
    Interval,
    Sample,
    bootstrap_interval,
    paired_difference,
    seed_average,
    seed_spread,
)
from components.evaluate.runs import Run, is_perplexity, samples
from components.evaluate.variants import BASE, ORACLE, PLACEHOLDER, SURROGATE_PREFIX

TOLERANCE = 0.05  # within 5% of the oracle
ROUGE_TARGETS = ("summary.rouge1", "dialogsum.summary.rouge1")
VERDICT_METRICS = (*ROUGE_TARGETS, "perplexity_raw", "dialogsum.perplexity_raw")

Samples = dict[str, dict[str, tuple[float, float]]]


def summarize(runs: Sequence[Run], resamples: int = RESAMPLES, *, seed: int = 0) -> dict[str, Any]:
    """The report's numbers: ``variants`` (each with ``run``, ``seeds``, ``metrics``,
    ``intervals``, ``spread``), ``differences`` from the oracle, and ``comparison``."""
    groups = _groups(runs)
    averaged = {v: _seed_averaged(group, _model(v)) for v, group in groups.items()}
    variants = {
        v: _variant_entry(group, _model(v), averaged=averaged[v], resamples=resamples, seed=seed)
        for v, group in groups.items()
    }
    differences = {
        v: _differences(
            variants[v],
            variants[ORACLE],
            variant_samples=averaged[v],
            oracle_samples=averaged[ORACLE],
            resamples=resamples,
            seed=seed,
        )
        for v in variants
        if ORACLE in variants and v != ORACLE
    }
    return {
        "variants": variants,
        "differences": differences,
        "comparison": comparison(
            variants, differences, averaged=averaged, resamples=resamples, seed=seed
        ),
    }


def _model(variant: str) -> str:
    return "base" if variant == BASE else "adapter"


def _groups(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """Runs by variant, plus the base model's zero-shot scores, which every run holds: taken
    from the oracle's runs (the first variant's without one), which score the same
    conversations as the oracle they are compared with."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.variant, []).append(run)
    reference = groups.get(ORACLE) or next(iter(groups.values()), [])
    with_base = [run for run in reference if "base" in run.evaluation]
    if with_base:
        groups[BASE] = with_base
    return groups


def _seed_averaged(group: Sequence[Run], model: str) -> Samples:
    """Each metric's sample averaged over the group's seeds; empty when any run lacks
    per-conversation records (means only, then)."""
    if any(run.records is None for run in group):
        return {}
    per_run = [samples(run.records or (), model) for run in group]
    keys = set.intersection(*(set(s) for s in per_run))
    return {key: seed_average([s[key] for s in per_run]) for key in sorted(keys)}


def _variant_entry(
    group: Sequence[Run], model: str, *, averaged: Samples, resamples: int, seed: int
) -> dict[str, Any]:
    per_seed = _per_seed_metrics(group, model)
    metrics = {key: sum(values) / len(values) for key, values in per_seed.items()}
    intervals: dict[str, list[float]] = {}
    for key, sample in averaged.items():
        if sample:
            interval = bootstrap_interval(
                sample, is_perplexity(key), resamples=resamples, seed=seed
            )
            metrics[key], intervals[key] = interval.estimate, [interval.low, interval.high]
    spread = {key: _spread(values) for key, values in per_seed.items() if len(values) > 1}
    return {
        "run": ", ".join(run.label for run in group),
        "seeds": [run.seed for run in group],
        "n_conversations": _n_conversations(group),
        "metrics": metrics,
        "intervals": intervals,
        "spread": spread,
    }


def _per_seed_metrics(group: Sequence[Run], model: str) -> dict[str, list[float]]:
    """Each numeric metric every run of the group has, as each run's evaluate.json says."""
    sections = [run.evaluation[model] for run in group]
    keys = set.intersection(*(set(s) for s in sections))
    return {
        key: [float(s[key]) for s in sections]
        for key in sorted(keys)
        if all(isinstance(s[key], int | float) and not isinstance(s[key], bool) for s in sections)
    }


def _spread(values: Sequence[float]) -> dict[str, Any]:
    spread = seed_spread(values)
    return {
        "per_seed": list(spread.per_seed),
        "min": spread.low,
        "max": spread.high,
        "std": spread.std,
    }


def _n_conversations(group: Sequence[Run]) -> dict[str, int]:
    """Held-out conversations scored per dataset (the fewest any run of the group scored)."""
    keys = ("n_conversations", "dialogsum.n_conversations")
    return {
        key.removesuffix("n_conversations").rstrip(".") or "main": min(
            int(run.evaluation.get(key) or 0) for run in group
        )
        for key in keys
    }


def _differences(
    variant: Mapping[str, Any],
    oracle: Mapping[str, Any],
    *,
    variant_samples: Samples,
    oracle_samples: Samples,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """``variant − oracle`` per metric: paired bootstrap where both have per-conversation
    samples, the difference of means (no interval) otherwise."""
    found: dict[str, Any] = {}
    for key in sorted(set(variant["metrics"]) & set(oracle["metrics"])):
        if variant_samples.get(key) and oracle_samples.get(key):
            difference = paired_difference(
                variant_samples[key],
                oracle_samples[key],
                exponentiate=is_perplexity(key),
                resamples=resamples,
                seed=seed,
            )
            found[key] = _difference_entry(difference)
        else:
            found[key] = _means_difference(variant["metrics"][key], oracle["metrics"][key])
    return found


def _difference_entry(difference: Difference) -> dict[str, Any]:
    return {
        "absolute": _interval_entry(difference.absolute),
        "relative": None if difference.relative is None else _interval_entry(difference.relative),
        "n_conversations": difference.n_conversations,
    }


def _means_difference(value: float, reference: float) -> dict[str, Any]:
    relative = {"estimate": value / reference - 1, "low": None, "high": None} if reference else None
    return {
        "absolute": {"estimate": value - reference, "low": None, "high": None},
        "relative": relative,
        "n_conversations": None,
    }


def _interval_entry(interval: Interval) -> dict[str, Any]:
    return {"estimate": interval.estimate, "low": interval.low, "high": interval.high}


def comparison(
    variants: Mapping[str, Mapping[str, Any]],
    differences: Mapping[str, Mapping[str, Any]],
    *,
    averaged: Mapping[str, Samples],
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Check name → the check, for the best surrogate variant and the placeholder one:
    within 5% of the oracle on each of ``VERDICT_METRICS``, and the surrogate above the
    placeholder on ROUGE-1."""
    checks: dict[str, dict[str, Any]] = {}
    surrogate = best_surrogate(variants)
    for candidate in [c for c in (surrogate, PLACEHOLDER) if c is not None and c in differences]:
        for key in VERDICT_METRICS:
            relative = (differences[candidate].get(key) or {}).get("relative")
            if relative is not None:
                name = f"{candidate} {key} vs oracle"
                checks[name] = _check(
                    name, relative, target="within 5% of oracle", passes=_within(key)
                )
    if surrogate is not None and PLACEHOLDER in variants:
        for key in ROUGE_TARGETS:
            relative = _relative(
                variants,
                averaged,
                variant=surrogate,
                reference=PLACEHOLDER,
                key=key,
                resamples=resamples,
                seed=seed,
            )
            if relative is not None:
                name = f"{surrogate} {key} vs {PLACEHOLDER}"
                checks[name] = _check(
                    name, relative, target="above placeholder", passes=lambda r: r > 0
                )
    return checks


def best_surrogate(variants: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The surrogate variant with the highest (seed-averaged) summary ROUGE-1."""
    surrogates = [v for v in variants if v.startswith(SURROGATE_PREFIX)]
    return max(
        surrogates,
        key=lambda v: float(variants[v]["metrics"].get("summary.rouge1", float("-inf"))),
        default=None,
    )


def _within(key: str) -> Callable[[float], bool]:
    """The test a relative difference from the oracle must pass: no more than 5% worse."""
    if is_perplexity(key):
        return lambda relative: relative <= TOLERANCE
    return lambda relative: relative >= -TOLERANCE


def _relative(
    variants: Mapping[str, Mapping[str, Any]],
    averaged: Mapping[str, Samples],
    *,
    variant: str,
    reference: str,
    key: str,
    resamples: int,
    seed: int,
) -> dict[str, Any] | None:
    """The relative difference ``variant / reference − 1`` of one metric (paired when both
    have per-conversation samples); None when either lacks the metric."""
    v_sample: Sample = averaged[variant].get(key) or {}
    r_sample: Sample = averaged[reference].get(key) or {}
    if v_sample and r_sample:
        difference = paired_difference(
            v_sample, r_sample, exponentiate=is_perplexity(key), resamples=resamples, seed=seed
        )
        entry = _difference_entry(difference)
        return entry["relative"]
    v_metric, r_metric = (variants[name]["metrics"].get(key) for name in (variant, reference))
    if v_metric is None or r_metric is None:
        return None
    return _means_difference(v_metric, r_metric)["relative"]


def _check(
    name: str, relative: Mapping[str, Any], *, target: str, passes: Callable[[float], bool]
) -> dict[str, Any]:
    """One verdict line: the gap and its interval, whether the estimate meets the target,
    whether the whole interval agrees (None without one), and whether the interval is
    narrower than the gap it brackets."""
    estimate, low, high = relative["estimate"], relative["low"], relative["high"]
    has_interval = low is not None and high is not None
    cell = f"{estimate:+.1%}" + (f" [{low:+.1%}, {high:+.1%}]" if has_interval else "")
    return {
        "statement": f"{name}: {cell}",
        "target": target,
        "met": bool(passes(estimate)),
        "decided": (passes(low) == passes(high)) if has_interval else None,
        "interval_narrower_than_gap": (high - low < abs(estimate)) if has_interval else None,
        "relative": dict(relative),
    }
