"""Bootstrap intervals over held-out conversations: how far a utility score would move on
another draw of conversations, and whether two variants' difference outlasts that.

Every metric is a ratio of sums over conversations, so one resampling serves all: a mean
score is ``sum(score) / sum(1)``; corpus perplexity is ``exp(sum(loss) / sum(tokens))``, the
summed next-token loss and token count of each conversation (resampling conversations, not
tokens, because tokens of one conversation are not independent draws).

Several training seeds of one variant are averaged per conversation *before* resampling:
the interval is then over conversations for the seed-averaged model, and the spread of the
per-seed means is reported beside it, not mixed into it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from components.core.headline import HEADLINE_METRICS
from components.evaluate.runs import is_perplexity

RESAMPLES = 2000
CONFIDENCE = 0.95

# conversation id -> (numerator, denominator): (score, 1) for a mean, (loss sum, tokens)
# for perplexity.
Sample = Mapping[str, tuple[float, float]]
_Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Interval:
    """A statistic on the full sample and its percentile bootstrap interval."""

    estimate: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class Difference:
    """A paired difference ``variant − reference``: absolute, and relative
    (``variant / reference − 1``; None where a resample's reference is 0)."""

    absolute: Interval
    relative: Interval | None
    n_conversations: int


@dataclass(frozen=True)
class SeedSpread:
    """Each seed's statistic on its own conversations, and their min, max and std."""

    per_seed: tuple[float, ...]
    low: float
    high: float
    std: float


def statistic(sample: Sample, exponentiate: bool = False) -> float:
    """The ratio of sums (``exp`` of it for perplexity) over every conversation of ``sample``."""
    numerators, denominators = _arrays(sample, sorted(sample))
    return float(_ratio(numerators[None, :], denominators[None, :], exponentiate)[0])


def bootstrap_interval(
    sample: Sample, exponentiate: bool = False, resamples: int = RESAMPLES, seed: int = 0
) -> Interval:
    """Percentile bootstrap interval (``CONFIDENCE``) of the statistic, resampling
    conversations with replacement."""
    ids = sorted(sample)
    numerators, denominators = _arrays(sample, ids)
    rows = _resample_rows(len(ids), resamples, seed)
    draws = _ratio(numerators[rows], denominators[rows], exponentiate)
    return _interval(statistic(sample, exponentiate), draws)


def paired_difference(
    variant: Sample,
    reference: Sample,
    exponentiate: bool = False,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Difference:
    """``variant − reference`` over the conversations both scored, each resample drawing the
    same conversations for both: what conversations share (a hard call is hard for every
    model) cancels, so the interval is that of the difference, not of two noisy means."""
    ids = sorted(set(variant) & set(reference))
    v_num, v_den = _arrays(variant, ids)
    r_num, r_den = _arrays(reference, ids)
    everything = np.arange(len(ids))[None, :]
    rows = _resample_rows(len(ids), resamples, seed)
    v_full, v_draws = (_ratio(v_num[r], v_den[r], exponentiate) for r in (everything, rows))
    r_full, r_draws = (_ratio(r_num[r], r_den[r], exponentiate) for r in (everything, rows))
    absolute = _interval(float(v_full[0] - r_full[0]), v_draws - r_draws)
    relative = None
    if np.all(r_draws != 0) and r_full[0] != 0:
        relative = _interval(float(v_full[0] / r_full[0] - 1), v_draws / r_draws - 1)
    return Difference(absolute, relative, len(ids))


def seed_average(samples: Sequence[Sample]) -> dict[str, tuple[float, float]]:
    """Each conversation's numerator and denominator averaged over the seeds' samples, for
    the conversations every seed scored."""
    if not samples:
        return {}
    ids = sorted(set.intersection(*(set(s) for s in samples)))
    arrays = [_arrays(s, ids) for s in samples]
    numerators = np.mean([n for n, _ in arrays], axis=0)
    denominators = np.mean([d for _, d in arrays], axis=0)
    return {i: (float(n), float(d)) for i, n, d in zip(ids, numerators, denominators, strict=True)}


def seed_spread(per_seed: Sequence[float]) -> SeedSpread:
    """Min, max and (population) std of per-seed statistics."""
    values = np.asarray(per_seed, dtype=float)
    return SeedSpread(
        tuple(float(v) for v in values),
        float(values.min()),
        float(values.max()),
        float(values.std()),
    )


def _arrays(sample: Sample, ids: Sequence[str]) -> tuple[_Array, _Array]:
    pairs = np.array([sample[i] for i in ids], dtype=float).reshape(len(ids), 2)
    return pairs[:, 0], pairs[:, 1]


def _resample_rows(n: int, resamples: int, seed: int) -> npt.NDArray[np.intp]:
    if n == 0:
        raise ValueError("no conversations to resample")
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _ratio(numerators: _Array, denominators: _Array, exponentiate: bool) -> _Array:
    """Row-wise ``sum(numerators) / sum(denominators)`` (``exp`` of it when asked)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = numerators.sum(axis=-1) / denominators.sum(axis=-1)
    return np.exp(ratio) if exponentiate else ratio


def _interval(estimate: float, draws: _Array) -> Interval:
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Interval(estimate, float(low), float(high))


def utility_intervals(
    by_model: Mapping[str, Mapping[str, Sample]], reference: str = "base", seed: int = 0
) -> dict[str, dict[str, dict[str, float]]]:
    """Every metric any model scored, from each model's samples (model → metric key → its
    bootstrap sample, as ``runs.samples`` builds them): each model's 95% interval, and each
    other model's paired difference from ``reference`` (``<model>_minus_<reference>``) on the
    conversations both scored; each with ``n``, the conversations it is over. What evaluate
    writes to ``data/evaluate/intervals.json``."""
    keys = sorted({key for sampled in by_model.values() for key, s in sampled.items() if s})
    return {key: _metric_intervals(key, by_model, reference, seed) for key in keys}


def _metric_intervals(
    key: str, by_model: Mapping[str, Mapping[str, Sample]], reference: str, seed: int
) -> dict[str, dict[str, float]]:
    exponentiate = is_perplexity(key)
    scored = {model: sampled[key] for model, sampled in by_model.items() if sampled.get(key)}
    entry = {
        model: _as_dict(bootstrap_interval(sample, exponentiate, seed=seed), len(sample))
        for model, sample in scored.items()
    }
    base = scored.get(reference)
    for model, sample in scored.items():
        if base is None or model == reference or not set(sample) & set(base):
            continue
        difference = paired_difference(sample, base, exponentiate, seed=seed)
        entry[f"{model}_minus_{reference}"] = _as_dict(
            difference.absolute, difference.n_conversations
        )
    return entry


def intervals_record(every: Mapping[str, Any]) -> dict[str, Any]:
    """``utility_intervals``' result as ``data/evaluate/intervals.json`` holds it: how the
    intervals were drawn, then ``metrics`` (metric → model or difference → interval)."""
    return {
        "confidence": CONFIDENCE,
        "resamples": RESAMPLES,
        "over": "held-out conversations",
        "metrics": dict(every),
    }


def headline_intervals(
    every: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> dict[str, dict[str, dict[str, float]]]:
    """The ``HEADLINE_METRICS`` among ``utility_intervals``' (estimate, low, high), as
    ``metrics/evaluate.json`` records them (``intervals``): the rest stays in the detail
    file, since ``dvc metrics show`` prints a column per key of a metrics file."""
    return {
        metric: {
            name: {k: v for k, v in bounds.items() if k != "n"}
            for name, bounds in every[metric].items()
        }
        for metric in HEADLINE_METRICS
        if metric in every
    }


def _as_dict(interval: Interval, n: int) -> dict[str, float]:
    return {
        "estimate": round(interval.estimate, 4),
        "low": round(interval.low, 4),
        "high": round(interval.high, 4),
        "n": n,
    }
