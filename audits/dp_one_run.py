"""Auditing a differential privacy claim with one training run (Steinke, Nasr and Jagielski,
"Privacy Auditing with One (1) Training Run", NeurIPS 2023).

Ingest draws m canaries and flips a fair coin for each; training inserts those that came up
heads, each as a unit of its own (``components/ingest/audit_canaries.py``). The attacker
scores every canary by the trained model's mean loss on its secret (lower: more likely
inserted), guesses "inserted" for the ``dp_guesses`` best-scoring canaries and "not
inserted" for the ``dp_guesses`` worst, and abstains on the rest. Under (ε, δ)-DP each guess
is right with probability at most e^ε / (1 + e^ε), whatever the other coins (the paper's
Theorem 3.1, with δ's term from its Theorem 5.2), so v right out of r guesses rejects every
ε whose p-value :func:`p_value` falls below 1 − confidence: the largest such ε is the lower
bound :func:`epsilon_lower_bound` reports.

The bound holds for the one model the pipeline ships, at no extra training run. It is loose
by design (an attacker guessing from losses is weaker than the worst case): a DP model's
bound lies far below its ε. A bound above the accountant's ε means the guarantee is broken
(a bug in clipping, sampling or accounting), and the audit fails; without DP the bound is
what the model shows of its canaries, reported with no claim to hold it to (δ = 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from audits.lm import assistant_token_losses
from audits.protocol import Audit, AuditContext, DpClaim
from audits.result import AuditResult
from components.core.progress import counted
from components.ingest import AUDIT_CANARY_PROMPT, AuditCanary

NAME = "dp_one_run"
CONFIDENCE = 0.95
_BISECTIONS = 40


def p_value(m: int, r: int, *, v: int, epsilon: float, delta: float) -> float:
    """An upper bound on P(at least v of r guesses right) about m canaries of an (ε, δ)-DP
    training run: the binomial tail at e^ε / (1 + e^ε), plus δ's share (the paper's
    Algorithm, Appendix D)."""
    from scipy.stats import binom

    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    q = 1 / (1 + math.exp(-epsilon))
    beta = float(binom.sf(v - 1, r, q))  # P[Binomial(r, q) >= v]
    alpha, below = 0.0, 0.0
    for i in range(1, v + 1):
        below += float(binom.pmf(v - i, r, q))  # P[v > Binomial(r, q) >= v - i]
        alpha = max(alpha, below / i)
    return min(1.0, beta + alpha * delta * 2 * m)


def epsilon_lower_bound(
    m: int, r: int, *, v: int, delta: float, confidence: float = CONFIDENCE
) -> float:
    """The largest ε that v right guesses out of r reject at ``confidence`` (0 when none
    is rejected: as many right guesses as chance gives)."""
    level = 1 - confidence
    if p_value(m, r, v=v, epsilon=0.0, delta=delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(m, r, v=v, epsilon=high, delta=delta) < level:
        low, high = high, 2 * high
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if p_value(m, r, v=v, epsilon=middle, delta=delta) < level:
            low = middle
        else:
            high = middle
    return low


@dataclass(frozen=True)
class Guesses:
    """The attacker's guesses: how many it made and how many were right."""

    made: int
    right: int


def guess_inserted(scores: Sequence[float], inserted: Sequence[bool], *, each_side: int) -> Guesses:
    """ "Inserted" for the ``each_side`` highest scores, "not inserted" for the
    ``each_side`` lowest (fewer when m < 2 × each_side), none for the rest."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    k = min(each_side, len(order) // 2)
    right = sum(inserted[i] for i in order[:k]) + sum(not inserted[i] for i in order[-k:] if k)
    return Guesses(2 * k, right)


def canary_score(model: Any, tokenizer: Any, *, canary: AuditCanary, max_tokens: int) -> float:
    """Minus the model's mean loss on the canary's secret as its answer to the canary
    prompt, the way training showed it: higher, more likely inserted."""
    losses = assistant_token_losses(
        model, tokenizer, user=AUDIT_CANARY_PROMPT, assistant=canary.secret, max_tokens=max_tokens
    )
    mean = losses.mean()
    return -(mean if mean is not None else 0.0)


def audit_dp_one_run(
    scores: Sequence[float],
    inserted: Sequence[bool],
    *,
    claim: DpClaim | None,
    each_side: int,
    confidence: float = CONFIDENCE,
) -> AuditResult:
    """The lower bound from the canaries' scores and coins, held to the claim: fails when
    it exceeds the claimed ε; without a claim, reports it and passes."""
    guesses = guess_inserted(scores, inserted, each_side=each_side)
    delta = claim.delta if claim else 0.0
    bound = epsilon_lower_bound(
        len(scores), guesses.made, v=guesses.right, delta=delta, confidence=confidence
    )
    return AuditResult(
        NAME,
        passed=claim is None or bound <= claim.epsilon,
        figures={
            "epsilon_lower_bound": round(bound, 4),
            "claimed_epsilon": claim.epsilon if claim else "none",
            "delta": delta,
            "confidence": confidence,
            "m_canaries": len(scores),
            "inserted": sum(inserted),
            "guesses": guesses.made,
            "right": guesses.right,
        },
        thresholds={"max_epsilon_lower_bound": claim.epsilon if claim else "none"},
    )


class DpOneRunAudit(Audit):
    """Is the model's DP claim contradicted by what it shows of its canaries?"""

    name = NAME
    needs = ("audit_canaries",)

    def run(self, context: AuditContext) -> AuditResult:
        canaries = context.inputs.audit_canaries
        scores = [
            canary_score(
                context.model,
                context.tokenizer,
                canary=canary,
                max_tokens=context.settings.max_prompt_tokens,
            )
            for canary in counted(canaries, "one-run audit", unit="canaries")
        ]
        return audit_dp_one_run(
            scores,
            [c.inserted for c in canaries],
            claim=context.inputs.dp_claim,
            each_side=context.settings.dp_guesses,
        )
