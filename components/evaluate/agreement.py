"""Agreement between raters (graders, the judge): Cohen's kappa, unweighted for verdicts and
weighted for ordinal scores (the 1–5 Privacy and Completeness marks), by scikit-learn's
``cohen_kappa_score`` with the edge cases a report needs named."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

WEIGHTS = ("none", "linear", "quadratic")


def cohen_kappa(
    first: Sequence[Hashable], second: Sequence[Hashable], *, weights: str = "none"
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
    if not first:
        return 0.0
    labels = sorted(set(first) | set(second), key=repr)
    if len(labels) == 1:  # one label for every item: no disagreement was possible
        return 1.0
    if weights != "none":
        # scikit-learn weighs a disagreement by the labels' positions: on every integer of
        # the range, positions are the scores' own distances (a 1-5 mark skipping 3 too).
        values = [_number(label) for label in labels]
        if all(float(v).is_integer() for v in values):
            labels = list(range(int(min(values)), int(max(values)) + 1))
        elif len(labels) > 2:
            raise ValueError("kappa: weighted kappa needs integer scores")
    from sklearn.metrics import cohen_kappa_score

    kappa = cohen_kappa_score(
        list(first), list(second), labels=labels, weights=None if weights == "none" else weights
    )
    return float(kappa)


def _number(label: Hashable) -> float:
    if isinstance(label, bool) or not isinstance(label, int | float):
        raise ValueError(f"kappa: weighted kappa needs numbers, got {type(label).__name__}")
    return float(label)
