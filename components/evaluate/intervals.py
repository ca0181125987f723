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

import warnings
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
    return float(_ratio(numerators, denominators, exponentiate=exponentiate))


def bootstrap_interval(
    sample: Sample, exponentiate: bool = False, *, resamples: int = RESAMPLES, seed: int = 0
) -> Interval:
    """Percentile bootstrap interval (``CONFIDENCE``) of the statistic, resampling
    conversations with replacement (``scipy.stats.bootstrap``)."""
    ids = sorted(sample)
    numerators, denominators = _arrays(sample, ids)

    def ratio(num: _Array, den: _Array, *, axis: int = -1) -> _Array:
        return _ratio(num, den, exponentiate=exponentiate, axis=axis)

    low, high = _bootstrap((numerators, denominators), ratio, resamples=resamples, seed=seed)
    return Interval(statistic(sample, exponentiate), float(low), float(high))


def paired_difference(
    variant: Sample,
    reference: Sample,
    *,
    exponentiate: bool = False,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Difference:
    """``variant − reference`` over the conversations both scored, each resample drawing the
    same conversations for both: what conversations share (a hard call is hard for every
    model) cancels, so the interval is that of the difference, not of two noisy means."""
    ids = sorted(set(variant) & set(reference))
    arrays = (*_arrays(variant, ids), *_arrays(reference, ids))

    # scipy.stats.bootstrap passes each sample positionally
    def both(  # noqa: PLR0917
        v_num: _Array, v_den: _Array, r_num: _Array, r_den: _Array, axis: int = -1
    ) -> _Array:
        v = _ratio(v_num, v_den, exponentiate=exponentiate, axis=axis)
        r = _ratio(r_num, r_den, exponentiate=exponentiate, axis=axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.stack([v - r, v / r - 1, r])

    v_num, v_den, r_num, r_den = (a[None, :] for a in arrays)
    full = both(v_num, v_den, r_num, r_den)[:, 0]
    (abs_low, rel_low, _), (abs_high, rel_high, _), draws = _bootstrap(
        arrays, both, resamples=resamples, seed=seed, keep_draws=True
    )
    absolute = Interval(float(full[0]), float(abs_low), float(abs_high))
    relative = None
    if np.all(draws[2] != 0) and full[2] != 0:  # no resample with a zero reference
        relative = Interval(float(full[1]), float(rel_low), float(rel_high))
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


def _bootstrap(
    arrays: Sequence[_Array],
    statistic: Any,
    *,
    resamples: int,
    seed: int,
    keep_draws: bool = False,
) -> Any:
    """``scipy.stats.bootstrap``'s percentile interval, conversations resampled together
    across ``arrays`` (paired); ``(low, high)``, and the resampled statistics when asked.
    One conversation has no spread to resample: its interval is its value."""
    from scipy.stats import DegenerateDataWarning, bootstrap

    n = len(arrays[0])
    if n == 0:
        raise ValueError("no conversations to resample")
    if n == 1:
        value = statistic(*(a[None, :] for a in arrays))[..., 0]
        draws = np.repeat(np.asarray(value)[..., None], resamples, axis=-1)
        return (value, value, draws) if keep_draws else (value, value)
    # A zero denominator gives inf, kept; every resample alike gives a zero-width interval.
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        result = bootstrap(
            tuple(arrays),
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=resamples,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    low, high = result.confidence_interval
    return (low, high, result.bootstrap_distribution) if keep_draws else (low, high)


def _ratio(
    numerators: _Array, denominators: _Array, *, exponentiate: bool, axis: int = -1
) -> _Array:
    """``sum(numerators) / sum(denominators)`` along ``axis`` (``exp`` of it when asked)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = numerators.sum(axis=axis) / denominators.sum(axis=axis)
        return np.exp(ratio) if exponentiate else ratio


def utility_intervals(
    by_model: Mapping[str, Mapping[str, Sample]], reference: str = "base", *, seed: int = 0
) -> dict[str, dict[str, dict[str, float]]]:
    """Every metric any model scored, from each model's samples (model → metric key → its
    bootstrap sample, as ``runs.samples`` builds them): each model's 95% interval, and each
    other model's paired difference from ``reference`` (``<model>_minus_<reference>``) on the
    conversations both scored; each with ``n``, the conversations it is over. What evaluate
    writes to ``data/evaluate/intervals.json``."""
    keys = sorted({key for sampled in by_model.values() for key, s in sampled.items() if s})
    return {key: _metric_intervals(key, by_model, reference=reference, seed=seed) for key in keys}


def _metric_intervals(
    key: str, by_model: Mapping[str, Mapping[str, Sample]], *, reference: str, seed: int
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
        difference = paired_difference(sample, base, exponentiate=exponentiate, seed=seed)
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
