"""Agreement between raters (graders, the judge): Cohen's kappa, unweighted for verdicts and
weighted for ordinal scores (the 1–5 Privacy and Completeness marks)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence

WEIGHTS = ("none", "linear", "quadratic")


def cohen_kappa(
    first: Sequence[Hashable], second: Sequence[Hashable], weights: str = "none"
) -> float:
    """Cohen's kappa of two raters' labels of the same items.

    Args:
        first, second: the two raters' labels, item by item (numbers for weighted kappa).
        weights: ``none`` (every disagreement counts alike), ``linear`` or ``quadratic``
            (a disagreement costs its distance, or its square, over the labels' range).

    Returns:
        1 for perfect agreement, 0 for chance; 1.0 when both raters gave one and the same
        label to every item (no disagreement is possible), 0.0 for no items.

    Raises:
        ValueError: the raters rated different numbers of items, or an unknown ``weights``.
    """
    if len(first) != len(second):
        raise ValueError(f"kappa: {len(first)} ratings against {len(second)}")
    if weights not in WEIGHTS:
        raise ValueError(f"kappa: weights {weights!r} is not one of {', '.join(WEIGHTS)}")
    n = len(first)
    if not n:
        return 0.0
    labels = sorted(set(first) | set(second), key=repr)
    cost = _cost(labels, weights)
    observed = sum(cost(a, b) for a, b in zip(first, second, strict=True)) / n
    left, right = Counter(first), Counter(second)
    expected = sum(left[a] * right[b] * cost(a, b) for a in labels for b in labels) / n**2
    return 1.0 if expected == 0 else 1.0 - observed / expected


def _cost(labels: Sequence[Hashable], weights: str) -> Callable[[Hashable, Hashable], float]:
    """What a pair of labels costs: 1 for any disagreement, or its (squared) distance."""
    if weights == "none":
        return lambda a, b: float(a != b)
    values = [_number(label) for label in labels]
    span = (max(values) - min(values)) or 1.0
    power = 1 if weights == "linear" else 2
    return lambda a, b: (abs(_number(a) - _number(b)) / span) ** power


def _number(label: Hashable) -> float:
    if isinstance(label, bool) or not isinstance(label, int | float):
        raise ValueError(f"kappa: weighted kappa needs numbers, got {type(label).__name__}")
    return float(label)
