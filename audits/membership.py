"""Membership inference: can an attacker with a conversation tell whether it was trained on?

The loss attack (Yeom et al., 2018), calibrated for difficulty (Watson et al., 2022): what
matters for privacy is whether the *people* in a conversation are recognisable, so the
attacker holding the raw conversation compares, in the continuation task's answer, the
model's mean loss on the PI values the prompt has not shown with its loss on stand-ins of
the same kinds and shapes put in their place (drawn by the realistic surrogate generator
under a seed of the audit's own). A model that learnt the people finds their real values
likelier than strangers'; a model that learnt only the conversation (its words, where a
name or a number comes) finds both about as likely, so remembering the anonymized text
does not count as knowing who was in it. Without enough conversations holding such values
on both sides, the attack falls back to the plain loss on the whole answer.

Members are training conversations, non-members the held-out ones; the figures are the ROC
AUC, its one-sided p-value under "no membership signal" (the Mann–Whitney U's exact
distribution: how often chance alone ranks members this high, which at a few
conversations a side is often), and the true-positive rate at 1% false positives.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from audits.extraction import answer_pi, answer_value
from audits.lm import assistant_token_losses
from audits.protocol import Audit, AuditContext, StandInSource
from audits.result import AuditResult
from components.core.corpus import Conversation
from components.core.progress import counted
from components.ingest import normalized
from components.train import continuation_cut, split_for_continuation

NAME = "membership"
MIN_PER_SIDE = 2  # conversations with unseen PI each side for the calibrated attack


def roc_auc(member_scores: Sequence[float], nonmember_scores: Sequence[float]) -> float:
    """P(a member scores above a non-member), ties counting half (the Mann–Whitney U):
    scikit-learn's ``roc_auc_score`` with members as the positive class."""
    if not member_scores or not nonmember_scores:
        raise ValueError("roc_auc needs scores on both sides")
    from sklearn.metrics import roc_auc_score

    labels, scores = _labelled(member_scores, nonmember_scores)
    return float(roc_auc_score(labels, scores))


def tpr_at_fpr(
    member_scores: Sequence[float], nonmember_scores: Sequence[float], *, max_fpr: float
) -> float:
    """The largest share of members flagged by a threshold that flags at most ``max_fpr`` of
    non-members (a score at or above the threshold means "member"), read off scikit-learn's
    ROC curve at every threshold."""
    from sklearn.metrics import roc_curve

    labels, scores = _labelled(member_scores, nonmember_scores)
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    return float(max(t for f, t in zip(fpr, tpr, strict=True) if f <= max_fpr))


def _labelled(
    members: Sequence[float], nonmembers: Sequence[float]
) -> tuple[list[int], list[float]]:
    return [1] * len(members) + [0] * len(nonmembers), [*members, *nonmembers]


def auc_p_value(auc: float, n_members: int, *, n_nonmembers: int) -> float:
    """P(AUC >= ``auc``) when members and non-members score alike: the exact distribution
    of the Mann–Whitney U (no ties) up to ``EXACT_PAIRS`` pairs, its normal approximation
    with continuity correction beyond."""
    pairs = n_members * n_nonmembers
    wins = math.ceil(round(auc * pairs, 6))
    if pairs <= EXACT_PAIRS:
        counts = _u_counts(n_members, n_nonmembers)
        return sum(counts[wins:]) / math.comb(n_members + n_nonmembers, n_members)
    mean = pairs / 2
    sd = math.sqrt(pairs * (n_members + n_nonmembers + 1) / 12)
    return 0.5 * math.erfc((wins - 0.5 - mean) / (sd * math.sqrt(2)))


EXACT_PAIRS = 1024


@functools.cache
def _u_counts(n_members: int, n_nonmembers: int) -> tuple[int, ...]:
    """How many orderings of the two samples give each U (index: member wins)."""
    if n_members == 0 or n_nonmembers == 0:
        return (1,)
    # the top-ranked item is a member (it beats every non-member) or a non-member
    top_member = (0,) * n_nonmembers + _u_counts(n_members - 1, n_nonmembers)
    top_nonmember = _u_counts(n_members, n_nonmembers - 1)
    size = max(len(top_member), len(top_nonmember))
    return tuple(
        (top_member[u] if u < len(top_member) else 0)
        + (top_nonmember[u] if u < len(top_nonmember) else 0)
        for u in range(size)
    )


class AnswerSpan(NamedTuple):
    start: int
    end: int
    entity_type: str
    entity: str


def unseen_pi(conversation: Conversation) -> list[AnswerSpan]:
    """The PI values of the continuation answer that its prompt has not shown, in order,
    none overlapping."""
    user, _ = split_for_continuation(conversation)
    seen = f" {normalized(user)} "
    spans: list[AnswerSpan] = []
    for start, end, pi in answer_pi(conversation, continuation_cut(conversation)):
        value = normalized(answer_value(conversation, pi))
        if value and f" {value} " not in seen and (not spans or start >= spans[-1].end):
            spans.append(AnswerSpan(start, end, pi.entity_type, pi.entity))
    return spans


def membership_score(
    model: Any,
    tokenizer: Any,
    *,
    conversation: Conversation,
    max_tokens: int,
    stand_ins: StandInSource | None,
) -> float | None:
    """Higher = more likely a member. With ``stand_ins``: the model's mean loss on the
    stand-ins' tokens minus on the real values' (None when the answer shows no unseen PI,
    or its values lie beyond ``max_tokens``); without: minus the mean loss of the answer."""
    user, answer = split_for_continuation(conversation)
    losses = assistant_token_losses(
        model, tokenizer, user=user, assistant=answer, max_tokens=max_tokens
    )
    if stand_ins is None:
        loss = losses.mean()
        return -(loss if loss is not None else 0.0)
    spans = unseen_pi(conversation)
    if not spans:
        return None
    other, placed = stand_ins.replace(conversation.id, answer, spans=spans)
    real = losses.mean([(s.start, s.end) for s in spans])
    reference = assistant_token_losses(
        model, tokenizer, user=user, assistant=other, max_tokens=max_tokens
    ).mean(placed)
    return None if real is None or reference is None else reference - real


def audit_membership(
    model: Any,
    tokenizer: Any,
    *,
    members: Sequence[Conversation],
    nonmembers: Sequence[Conversation],
    max_auc: float,
    max_tokens: int,
    stand_ins: StandInSource,
) -> AuditResult:
    """ROC AUC, its p-value and TPR at 1% FPR of the calibrated attack (the plain loss
    attack when fewer than ``MIN_PER_SIDE`` conversations a side hold unseen PI); fails
    when the AUC exceeds ``max_auc``."""
    members = [c for c in members if len(c.turns) > 1]
    nonmembers = [c for c in nonmembers if len(c.turns) > 1][: max(len(members), 1)]
    members = members[: len(nonmembers)]
    thresholds = {"max_auc": max_auc}
    if not members or not nonmembers:
        figures: dict[str, Any] = {"mia_auc": None, "n_members": 0, "n_nonmembers": 0}
        return AuditResult(NAME, True, figures, thresholds)

    def scores(
        side: Sequence[Conversation], what: str, *, refs: StandInSource | None
    ) -> list[float]:
        scored = (
            membership_score(
                model, tokenizer, conversation=c, max_tokens=max_tokens, stand_ins=refs
            )
            for c in counted(side, f"audit membership ({what})", unit="conversations")
        )
        return [s for s in scored if s is not None]

    attack = "pi_calibrated"
    m_scores = scores(members, "members", refs=stand_ins)
    n_scores = scores(nonmembers, "non-members", refs=stand_ins)
    if min(len(m_scores), len(n_scores)) < MIN_PER_SIDE:
        attack = "loss"
        m_scores = scores(members, "members", refs=None)
        n_scores = scores(nonmembers, "non-members", refs=None)
    auc = roc_auc(m_scores, n_scores)
    figures = {
        "mia_attack": attack,
        "mia_auc": round(auc, 4),
        "mia_p_value": round(auc_p_value(auc, len(m_scores), n_nonmembers=len(n_scores)), 4),
        "mia_tpr_at_1pct_fpr": round(tpr_at_fpr(m_scores, n_scores, max_fpr=0.01), 4),
        "n_members": len(m_scores),
        "n_nonmembers": len(n_scores),
    }
    return AuditResult(NAME, auc <= max_auc, figures, thresholds)


class MembershipAudit(Audit):
    """Training vs held-out conversations, at most ``mia_conversations`` a side."""

    name = NAME

    def run(self, context: AuditContext) -> AuditResult:
        n = context.settings.mia_conversations
        return audit_membership(
            context.model,
            context.tokenizer,
            members=context.inputs.train_raw[:n],
            nonmembers=context.inputs.heldout_raw[:n],
            max_auc=context.settings.max_mia_auc,
            max_tokens=context.settings.max_prompt_tokens,
            stand_ins=context.stand_ins,
        )
