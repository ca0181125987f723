"""Cohen's kappa, checked against values computed by hand."""

from __future__ import annotations

import pytest

from components.evaluate.agreement import cohen_kappa


def test_unweighted_kappa_of_a_textbook_table() -> None:
    # 2x2 table: both yes 20, both no 15, first yes/second no 5, first no/second yes 10
    first = [True] * 20 + [False] * 15 + [True] * 5 + [False] * 10
    second = [True] * 20 + [False] * 15 + [False] * 5 + [True] * 10
    # observed 0.7; expected 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5
    assert cohen_kappa(first, second) == pytest.approx(0.4)


def test_weighted_kappa_forgives_near_misses_more_than_far_ones() -> None:
    truth = [1, 2, 3, 4, 5] * 4
    near = [min(5, v + 1) if i % 2 else v for i, v in enumerate(truth)]
    far = [1 if v >= 4 else 5 for v in truth]
    assert cohen_kappa(truth, truth, weights="quadratic") == pytest.approx(1.0)
    assert cohen_kappa(truth, near, weights="quadratic") > cohen_kappa(truth, near, weights="none")
    assert (
        cohen_kappa(truth, far, weights="quadratic")
        < 0
        < cohen_kappa(truth, near, weights="linear")
    )


def test_one_label_everywhere_is_agreement_and_bad_input_is_refused() -> None:
    assert cohen_kappa([5, 5], [5, 5]) == 1.0
    assert cohen_kappa([], []) == 0.0
    with pytest.raises(ValueError, match="2 ratings against 1"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="weights 'cubic'"):
        cohen_kappa([1], [1], weights="cubic")
    with pytest.raises(ValueError, match="needs numbers"):
        cohen_kappa(["a", "b"], ["a", "a"], weights="linear")
