"""The one-run DP audit (Steinke, Nasr and Jagielski, 2023): its ε lower bound, the
attacker's guesses, the verdict, and the two controls that show it can fail: DP-SGD on a
tiny model with the noise off (the bound must be large) and with the noise on (the bound
must stay below ε)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from audits.dp_one_run import (
    Guesses,
    audit_dp_one_run,
    canary_score,
    epsilon_lower_bound,
    guess_inserted,
    p_value,
)
from audits.protocol import DpClaim
from components.ingest import AUDIT_CANARY_PROMPT, draw_audit_canaries, inserted_canaries
from components.train.params import PrivacyConfig
from components.train.privacy_budget import privacy_budget
from components.train.private import conversation_rows, dp_sgd
from components.train.tasks import canary_examples
from tests.tiny_model import tiny_memorizer

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.mark.parametrize(
    ("m", "r", "v", "expected"),
    [
        # every guess right: the bound only the number of guesses limits
        (200, 100, 100, 3.49),
        (1000, 200, 200, 4.19),
        # a few wrong cost a lot
        (200, 100, 97, 2.50),
        # chance, or worse: nothing is rejected
        (200, 100, 50, 0.0),
        (200, 100, 40, 0.0),
    ],
)
def test_lower_bound_from_right_guesses(m: int, r: int, *, v: int, expected: float) -> None:
    assert epsilon_lower_bound(m, r, v=v, delta=0.0) == pytest.approx(expected, abs=0.01)


def test_the_bound_is_the_largest_epsilon_the_guesses_reject() -> None:
    bound = epsilon_lower_bound(300, 150, v=140, delta=0.0)
    assert p_value(300, 150, v=140, epsilon=bound - 0.01, delta=0.0) < 0.05
    assert p_value(300, 150, v=140, epsilon=bound + 0.01, delta=0.0) >= 0.05


def test_delta_weakens_the_bound_and_a_large_one_voids_it() -> None:
    pure = epsilon_lower_bound(1000, 200, v=190, delta=0.0)
    assert epsilon_lower_bound(1000, 200, v=190, delta=1e-5) < pure
    assert epsilon_lower_bound(1000, 200, v=190, delta=0.01) == 0.0


def test_p_value_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="v <= r <= m"):
        p_value(10, 20, v=5, epsilon=1.0, delta=0.0)


def test_guesses_take_both_ends_of_the_scores() -> None:
    scores = [0.9, 0.8, 0.5, 0.4, 0.1, 0.0]
    inserted = [True, False, True, False, False, True]
    # top two guessed inserted (one right), bottom two not inserted (one right)
    assert guess_inserted(scores, inserted, each_side=2) == Guesses(made=4, right=2)
    # more guesses than canaries: half of them each side
    assert guess_inserted(scores, inserted, each_side=10).made == 6


def test_the_audit_fails_a_claim_its_bound_exceeds() -> None:
    scores = [float(i) for i in range(200)]
    inserted = [i >= 100 for i in range(200)]  # the scores give every coin away
    broken = audit_dp_one_run(scores, inserted, claim=DpClaim(1.0, 1e-6), each_side=50)
    assert not broken.passed
    assert broken.figures["epsilon_lower_bound"] > 3
    assert broken.thresholds == {"max_epsilon_lower_bound": 1.0}
    held = audit_dp_one_run(scores, inserted, claim=DpClaim(8.0, 1e-6), each_side=50)
    assert held.passed
    unclaimed = audit_dp_one_run(scores, inserted, claim=None, each_side=50)
    assert unclaimed.passed and unclaimed.figures["claimed_epsilon"] == "none"


def _trained_on_canaries(noise: bool, *, m: int = 300) -> tuple[Any, Any, list[Any]]:
    """A tiny model trained by DP-SGD on the inserted half of m canaries (its norms frozen:
    Opacus has no per-sample gradient for them), at ε 1, or clipped without the noise that
    ε 1 needs: a broken implementation that still claims it."""
    canaries = draw_audit_canaries(m, "c" * 32)
    model, tokenizer = tiny_memorizer(
        [AUDIT_CANARY_PROMPT, *(c.secret for c in canaries)], CHAT_TEMPLATE
    )
    for name, parameter in model.named_parameters():
        parameter.requires_grad = "norm" not in name
    rows = conversation_rows(
        canary_examples(list(inserted_canaries(canaries))),
        tokenizer,
        max_length=64,
        mask_loss_weight=1.0,
    )
    budget = privacy_budget(
        PrivacyConfig(enabled=True, epsilon=1.0, delta=1e-5),
        n_units=len(rows),
        expected_batch=32,
        steps=200,
    )
    if not noise:
        from dataclasses import replace

        budget = replace(budget, noise_multiplier=0.0)
    run = dp_sgd(
        model,
        rows,
        budget=budget,
        learning_rate=3e-3,
        physical_batch=32,
        pad_token_id=int(tokenizer.pad_token_id),
        seed=0,
    )
    assert math.isinf(run.epsilon) != noise  # no noise, no finite ε
    return model.eval(), tokenizer, canaries


@pytest.mark.parametrize("noise", [False, True], ids=["noise-off-control", "dp-on"])
def test_the_audit_catches_missing_noise_and_holds_under_dp(noise: bool) -> None:
    model, tokenizer, canaries = _trained_on_canaries(noise)
    scores = [canary_score(model, tokenizer, canary=c, max_tokens=64) for c in canaries]
    claim = DpClaim(1.0, 1e-5)
    result = audit_dp_one_run(scores, [c.inserted for c in canaries], claim=claim, each_side=75)
    bound = result.figures["epsilon_lower_bound"]
    if noise:
        assert result.passed and bound <= 1.0
    else:  # clipping alone: the model gives its canaries away, and the claim is refuted
        assert not result.passed and bound >= 3
