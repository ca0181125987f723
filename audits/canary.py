"""Canary exposure (Carlini et al., "The Secret Sharer", 2019).

Each canary planted at ingest is scored by the model's log-likelihood in the context where
training showed it (its first host conversation, as the continuation task's answer), and
ranked among random candidates of the same format scored in the same context:
exposure = log2(|candidates| + 1) − log2(rank). A model that never saw the secret ranks it
like any candidate (expected exposure ≈ 1.4 bits); one that memorized it ranks it first.

A rank among n candidates cannot show more than log2(n + 1) bits, and scoring candidates is
the expensive part on a CPU. As the paper does, the exposure is also estimated beyond the
sample from a fit of the candidates' log-likelihoods (a normal fit here: the sum of one
term per random digit), −log2 P(candidate ≥ canary); the threshold applies to that estimate.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from audits.lm import chat_prefix_ids, continuation_logprobs
from audits.protocol import Audit, AuditContext
from audits.result import AuditResult
from components.core.corpus import Conversation
from components.core.progress import counted
from components.ingest import Canary
from components.train import continuation_cut, continuation_prompt, transcript

NAME = "canary"


def exposure(rank: int, n_ranked: int) -> float:
    """Bits of exposure of a secret ranked ``rank`` (1 = most likely) among ``n_ranked``."""
    if not 1 <= rank <= n_ranked:
        raise ValueError(f"rank {rank} outside 1..{n_ranked}")
    return math.log2(n_ranked) - math.log2(rank)


def estimated_exposure(score: float, candidate_scores: Sequence[float]) -> float:
    """−log2 of the probability that a random candidate scores at least ``score``, under a
    normal fit of ``candidate_scores``."""
    from statistics import NormalDist, fmean, stdev

    sigma = stdev(candidate_scores)
    if sigma == 0:
        return 0.0 if score <= candidate_scores[0] else math.inf
    z = (score - fmean(candidate_scores)) / sigma
    # The upper tail as log, so a memorized canary (z of 20 or more) does not underflow.
    tail = NormalDist().cdf(-z) if z < 8 else math.exp(-z * z / 2) / (z * math.sqrt(2 * math.pi))
    return -math.log2(tail) if tail > 0 else math.inf


def rank_of(score: float, candidate_scores: Sequence[float]) -> int:
    """The canary's rank among itself and the candidates; ties count against it."""
    return 1 + sum(1 for c in candidate_scores if c >= score)


def candidate_secrets(canary: Canary, n: int, *, seed: int) -> list[str]:
    """``n`` distinct random secrets of the canary's format, never the canary itself."""
    rng = random.Random(f"candidates:{seed}:{canary.entity_type}")
    found: dict[str, None] = {}
    while len(found) < n:
        secret = canary.format.random_secret(rng)
        if secret != canary.secret:
            found[secret] = None
    return list(found)


def canary_context(canary: Canary, host: Conversation) -> tuple[str, str]:
    """The user message and the assistant's text up to the secret, as training showed it in
    the host conversation (the continuation task, whose answer holds the canary turn)."""
    sentence = canary.format.sentence(canary.secret)
    at = next(i for i, turn in enumerate(host.turns) if turn.text == sentence)
    cut = min(continuation_cut(host), at)
    before = Conversation(host.id, host.turns[cut:at])
    speaker = host.turns[at].speaker
    line = f"{speaker}: " if speaker else ""
    answer_start = (transcript(before) + "\n" if at > cut else "") + line
    return continuation_prompt(host, cut), answer_start + canary.format.prefix().rstrip(" ")


def audit_canaries(
    model: Any,
    tokenizer: Any,
    *,
    canaries: Sequence[Canary],
    hosts: Mapping[str, Conversation],
    n_candidates: int,
    max_exposure: float,
    seed: int,
    batch_size: int = 64,
) -> AuditResult:
    """Exposure of every canary; the audit fails if any exceeds ``max_exposure`` bits."""
    by_canary: dict[str, dict[str, Any]] = {}
    for canary in counted(canaries, "audit canary", unit="canaries"):
        user, assistant_start = canary_context(canary, hosts[canary.conversation_ids[0]])
        prefix = chat_prefix_ids(tokenizer, user, assistant_start=assistant_start)
        secrets = [canary.secret, *candidate_secrets(canary, n_candidates, seed=seed)]
        suffix = canary.format.frame.split("{secret}")[1]
        ids = [
            list(tokenizer(" " + s + suffix, add_special_tokens=False)["input_ids"])
            for s in secrets
        ]
        scores = continuation_logprobs(model, prefix, continuations=ids, batch_size=batch_size)
        rank = rank_of(scores[0], scores[1:])
        by_canary[canary.id] = {
            "entity_type": canary.entity_type,
            "repetitions": canary.repetitions,
            "rank": rank,
            "rank_exposure": round(exposure(rank, len(secrets)), 3),
            "exposure": round(min(estimated_exposure(scores[0], scores[1:]), 999.0), 3),
        }
    per_count: dict[str, float] = {}
    for entry in by_canary.values():
        key = str(entry["repetitions"])
        per_count[key] = max(per_count.get(key, 0.0), entry["exposure"])
    worst = max((e["exposure"] for e in by_canary.values()), default=0.0)
    figures = {
        "canary_exposure": dict(sorted(per_count.items(), key=lambda kv: int(kv[0]))),
        "max_rank_exposure": round(math.log2(n_candidates + 1), 3),
        "n_candidates": n_candidates,
        "canaries": by_canary,
    }
    return AuditResult(NAME, worst <= max_exposure, figures, {"max_exposure": max_exposure})


class CanaryAudit(Audit):
    """Each planted canary's exposure; runs only when ingest planted some."""

    name = NAME
    needs = ("canaries",)

    def run(self, context: AuditContext) -> AuditResult:
        hosts = {c.id: c for c in context.inputs.train_raw}
        return audit_canaries(
            context.model,
            context.tokenizer,
            canaries=context.inputs.canaries,
            hosts=hosts,
            n_candidates=context.settings.canary_candidates,
            max_exposure=context.settings.max_canary_exposure,
            seed=context.settings.seed,
        )
