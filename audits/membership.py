"""Membership inference: can an attacker with a conversation tell whether it was trained on?

The loss attack (Yeom et al., 2018): a model's loss is lower on what it trained on. The
attacker holds the raw conversation and scores the continuation task's answer; what matters
for privacy is whether the *people* in it are recognisable, so the score is the mean loss on
the tokens of PI values the prompt has not shown (all of the answer's tokens when a
conversation has no such values). Members are training conversations, non-members the
held-out ones; the figures are the ROC AUC and the true-positive rate at 1% false positives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from audits.extraction import answer_offsets
from audits.lm import assistant_token_losses
from audits.result import AuditResult
from components.core.corpus import Conversation
from components.core.progress import counted
from components.ingest import normalized
from components.train import continuation_cut, split_for_continuation

NAME = "membership"


def roc_auc(member_scores: Sequence[float], nonmember_scores: Sequence[float]) -> float:
    """P(a member scores above a non-member), ties counting half (the Mann–Whitney U)."""
    if not member_scores or not nonmember_scores:
        raise ValueError("roc_auc needs scores on both sides")
    wins = sum(
        1.0 if m > n else 0.5 if m == n else 0.0 for m in member_scores for n in nonmember_scores
    )
    return wins / (len(member_scores) * len(nonmember_scores))


def tpr_at_fpr(
    member_scores: Sequence[float], nonmember_scores: Sequence[float], max_fpr: float
) -> float:
    """The largest share of members flagged by a threshold that flags at most ``max_fpr`` of
    non-members (a score above the threshold means "member")."""
    best = 0.0
    for threshold in sorted({*member_scores, *nonmember_scores, float("inf")}):
        fpr = sum(n >= threshold for n in nonmember_scores) / len(nonmember_scores)
        if fpr <= max_fpr:
            best = max(best, sum(m >= threshold for m in member_scores) / len(member_scores))
    return best


def membership_score(
    model: Any, tokenizer: Any, conversation: Conversation, max_tokens: int
) -> tuple[float, bool]:
    """Minus the mean loss on the answer's unseen PI tokens (higher = more likely a member),
    and whether PI tokens were used (else all the answer's tokens)."""
    user, answer = split_for_continuation(conversation)
    seen = f" {normalized(user)} "
    spans = [
        (start, end)
        for start, end, value in answer_offsets(conversation, continuation_cut(conversation))
        if value and f" {value} " not in seen
    ]
    losses = assistant_token_losses(model, tokenizer, user, answer, max_tokens)
    on_pi = losses.mean(spans) if spans else None
    loss = on_pi if on_pi is not None else losses.mean()
    return -(loss if loss is not None else 0.0), on_pi is not None


def audit_membership(
    model: Any,
    tokenizer: Any,
    members: Sequence[Conversation],
    nonmembers: Sequence[Conversation],
    max_auc: float,
    max_tokens: int,
) -> AuditResult:
    """ROC AUC and TPR at 1% FPR of the loss attack; fails when the AUC exceeds ``max_auc``."""
    members = [c for c in members if len(c.turns) > 1]
    nonmembers = [c for c in nonmembers if len(c.turns) > 1][: max(len(members), 1)]
    members = members[: len(nonmembers)]
    if not members or not nonmembers:
        figures: dict[str, Any] = {"mia_auc": None, "n_members": 0, "n_nonmembers": 0}
        return AuditResult(NAME, True, figures, {"max_auc": max_auc})
    scored_m = [
        membership_score(model, tokenizer, c, max_tokens)
        for c in counted(members, "audit membership (members)", "conversations")
    ]
    scored_n = [
        membership_score(model, tokenizer, c, max_tokens)
        for c in counted(nonmembers, "audit membership (non-members)", "conversations")
    ]
    m_scores, n_scores = [s for s, _ in scored_m], [s for s, _ in scored_n]
    auc = roc_auc(m_scores, n_scores)
    figures = {
        "mia_auc": round(auc, 4),
        "mia_tpr_at_1pct_fpr": round(tpr_at_fpr(m_scores, n_scores, 0.01), 4),
        "n_members": len(members),
        "n_nonmembers": len(nonmembers),
        "n_scored_on_pi_tokens": sum(on for _, on in scored_m + scored_n),
    }
    return AuditResult(NAME, auc <= max_auc, figures, {"max_auc": max_auc})
