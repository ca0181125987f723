"""Bootstrap intervals on synthetic per-conversation scores whose truth is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.evaluate.intervals import (
    bootstrap_interval,
    paired_difference,
    seed_average,
    seed_spread,
    statistic,
)


def _scores(values: np.ndarray) -> dict[str, tuple[float, float]]:
    return {f"c{i:03d}": (float(v), 1.0) for i, v in enumerate(values)}


def test_the_interval_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(1)
    covered = 0
    for trial in range(200):
        sample = _scores(rng.normal(0.3, 0.1, size=40))
        interval = bootstrap_interval(sample, resamples=500, seed=trial)
        covered += interval.low <= 0.3 <= interval.high
    # a percentile bootstrap at n=40 runs a little narrow; 95% +/- sampling noise of 200 trials
    assert 0.88 <= covered / 200 <= 0.99


def test_the_interval_narrows_with_more_conversations_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(2)
    small = bootstrap_interval(_scores(rng.uniform(0, 1, size=30)))
    large = bootstrap_interval(_scores(rng.uniform(0, 1, size=480)))
    assert small.low < small.estimate < small.high
    # the width shrinks as 1/sqrt(n): 4x narrower for 16x the conversations
    assert large.width == pytest.approx(small.width / 4, rel=0.3)


def test_the_same_seed_gives_the_same_interval() -> None:
    sample = _scores(np.linspace(0, 1, 25))
    assert bootstrap_interval(sample, seed=7) == bootstrap_interval(sample, seed=7)
    assert bootstrap_interval(sample, seed=7) != bootstrap_interval(sample, seed=8)


def test_perplexity_is_recomputed_from_summed_losses_not_averaged() -> None:
    # Two conversations: 10 tokens at mean loss 1, 90 tokens at mean loss 2.
    sample = {"short": (10.0, 10.0), "long": (180.0, 90.0)}
    assert statistic(sample, exponentiate=True) == pytest.approx(math.exp(190 / 100))
    assert statistic(sample, exponentiate=True) != pytest.approx((math.e + math.e**2) / 2)
    interval = bootstrap_interval(sample, exponentiate=True, resamples=400)
    # every resample is a mix of the two: between exp(1) and exp(2)
    assert math.exp(1) <= interval.low <= interval.estimate <= interval.high <= math.exp(2)


def test_a_paired_interval_is_narrower_than_an_unpaired_one_for_correlated_runs() -> None:
    rng = np.random.default_rng(3)
    difficulty = rng.normal(0.4, 0.15, size=60)  # what conversations share across models
    oracle = _scores(difficulty + rng.normal(0, 0.02, size=60))
    variant = _scores(difficulty - 0.03 + rng.normal(0, 0.02, size=60))
    paired = paired_difference(variant, oracle, resamples=1000)
    assert paired.absolute.low < -0.03 < paired.absolute.high
    assert paired.absolute.high < 0  # the pairing resolves a gap of 0.03
    assert paired.absolute.width < _unpaired_width(variant, oracle) / 3
    assert paired.n_conversations == 60


def _unpaired_width(
    variant: dict[str, tuple[float, float]], oracle: dict[str, tuple[float, float]]
) -> float:
    """Each run resampled on its own draw of conversations, as if they were unrelated."""
    rng = np.random.default_rng(0)
    v = np.array([s for s, _ in variant.values()])
    o = np.array([s for s, _ in oracle.values()])
    draws = [
        rng.choice(v, size=v.size).mean() - rng.choice(o, size=o.size).mean() for _ in range(1000)
    ]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(high - low)


def test_identical_runs_differ_by_exactly_zero() -> None:
    sample = _scores(np.random.default_rng(4).uniform(0, 1, size=30))
    difference = paired_difference(sample, dict(sample))
    assert (difference.absolute.low, difference.absolute.high) == (0.0, 0.0)
    assert difference.relative is not None
    assert (difference.relative.low, difference.relative.high) == (0.0, 0.0)


def test_the_relative_difference_is_the_ratio_minus_one() -> None:
    oracle = {"a": (0.4, 1.0), "b": (0.6, 1.0), "only-oracle": (1.0, 1.0)}
    variant = {"a": (0.38, 1.0), "b": (0.57, 1.0)}
    difference = paired_difference(variant, oracle, resamples=200)
    assert difference.n_conversations == 2  # the conversations both scored
    assert difference.absolute.estimate == pytest.approx(-0.025)
    assert difference.relative is not None
    assert difference.relative.estimate == pytest.approx(0.475 / 0.5 - 1)


def test_no_relative_difference_against_a_zero_reference() -> None:
    zero = {"a": (0.0, 1.0), "b": (0.0, 1.0)}
    assert paired_difference({"a": (1.0, 1.0), "b": (0.0, 1.0)}, zero).relative is None


def test_seeds_are_averaged_per_conversation_on_the_conversations_all_scored() -> None:
    seed_13 = {"a": (0.2, 1.0), "b": (0.4, 1.0), "c": (0.9, 1.0)}
    seed_14 = {"a": (0.4, 1.0), "b": (0.8, 1.0)}
    averaged = seed_average([seed_13, seed_14])
    assert averaged == {"a": pytest.approx((0.3, 1.0)), "b": pytest.approx((0.6, 1.0))}
    losses = seed_average([{"a": (20.0, 10.0)}, {"a": (30.0, 10.0)}])
    assert statistic(losses, exponentiate=True) == pytest.approx(math.exp(2.5))


def test_seed_spread_is_min_max_and_std_of_the_seed_means() -> None:
    spread = seed_spread([0.25, 0.27, 0.23])
    assert spread.per_seed == (0.25, 0.27, 0.23)
    assert (spread.low, spread.high) == (0.23, 0.27)
    assert spread.std == pytest.approx(np.std([0.25, 0.27, 0.23]))


def test_headline_intervals_are_the_per_conversation_records_bootstrap() -> None:
    """What evaluate writes as ``intervals`` in metrics/evaluate.json: the headline score's
    interval for each model and the paired difference, from the records it writes beside."""
    from components.evaluate.intervals import headline_intervals, utility_intervals
    from components.evaluate.runs import samples

    rng = np.random.default_rng(3)
    base_scores = rng.uniform(0.1, 0.3, size=30)
    records = [
        {
            "model": model,
            "dataset": dataset,
            "id": f"{dataset}-{i}",
            "scores": {"summary.rouge1": float(score + shift)},
            "loss_sum": 1.0,
            "n_tokens": 1,
        }
        for model, shift in (("adapter", 0.02), ("base", 0.0))
        for dataset in ("main", "dialogsum")
        for i, score in enumerate(base_scores)
    ]
    found = headline_intervals(
        utility_intervals({m: samples(records, m) for m in ("adapter", "base")})
    )
    assert set(found) == {"summary.rouge1", "dialogsum.summary.rouge1"}
    main = found["summary.rouge1"]
    assert main["adapter"]["low"] < main["adapter"]["estimate"] < main["adapter"]["high"]
    # every conversation gains exactly 0.02: the paired difference has no spread at all,
    # where the two models' own intervals overlap
    assert main["adapter_minus_base"] == {"estimate": 0.02, "low": 0.02, "high": 0.02}
    assert main["base"]["high"] > main["adapter"]["low"]
    # a run without the base model: the adapter's interval alone
    alone = headline_intervals(utility_intervals({"adapter": samples(records, "adapter")}))
    assert set(alone["summary.rouge1"]) == {"adapter"}


def test_every_score_of_every_model_has_its_interval_and_its_difference_from_the_base() -> None:
    """What evaluate writes to data/evaluate/intervals.json: every metric any model scored
    (a baseline beside the adapter too), each model's interval with the conversations it is
    over, and each model's paired difference from the base on the conversations both scored."""
    from components.evaluate.intervals import utility_intervals
    from components.evaluate.runs import samples

    rng = np.random.default_rng(5)
    truth = rng.uniform(0.2, 0.6, size=30)
    shifts = {"adapter": 0.1, "masked": 0.05, "base": 0.0}
    records = [
        {
            "model": model,
            "dataset": "main",
            "id": f"c{i}",
            "scores": {"summary.rouge1": float(score + shift), "outcome.accuracy": float(i % 2)},
            "loss_sum": 2.0 + shift,
            "n_tokens": 4,
        }
        for model, shift in shifts.items()
        for i, score in enumerate(truth)
        if model != "base" or i < 20  # the base model answered 20 of the 30
    ]
    found = utility_intervals({m: samples(records, m) for m in shifts})
    assert set(found) == {"summary.rouge1", "outcome.accuracy", "perplexity_raw"}
    rouge = found["summary.rouge1"]
    assert set(rouge) == {"adapter", "masked", "base", "adapter_minus_base", "masked_minus_base"}
    assert (rouge["adapter"]["n"], rouge["base"]["n"], rouge["adapter_minus_base"]["n"]) == (
        30,
        20,
        20,
    )
    assert rouge["adapter"]["low"] < rouge["adapter"]["estimate"] < rouge["adapter"]["high"]
    assert rouge["masked_minus_base"] == {"estimate": 0.05, "low": 0.05, "high": 0.05, "n": 20}
    # perplexity: exp of the summed loss over the summed tokens, its difference on that scale
    perplexity = found["perplexity_raw"]
    assert perplexity["adapter"]["estimate"] == round(math.exp(2.1 / 4), 4)
    difference = perplexity["adapter_minus_base"]["estimate"]
    assert difference == pytest.approx(math.exp(2.1 / 4) - math.exp(0.5), abs=1e-4)
    # the same seed, the same intervals
    assert utility_intervals({m: samples(records, m) for m in shifts}) == found
