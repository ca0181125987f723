"""Residual risk: which ground-truth personal information survived anonymization, scored.

Each leaked item scores its info type's risk (0–5); a partial leak scores half (rounded up
for person names, down otherwise); an entity mentioned several times counts once, at its
worst mention.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from components.corpus import Conversation, PiSpan

FULL, PARTIAL, CAUGHT = "full", "partial", "caught"
_SEVERITY = {CAUGHT: 0, PARTIAL: 1, FULL: 2}
RISK_COLUMNS = ["conversation_id", "context", "score", "n_leaked"]


@dataclass(frozen=True)
class ResidualItem:
    conversation_id: str
    entity: str
    entity_type: str
    status: str  # full | partial
    score: int


def item_score(entity_type: str, status: str, scores: Mapping[str, int], default: int) -> int:
    base = scores.get(entity_type, default)
    if status == FULL:
        return base
    if status == PARTIAL:
        return math.ceil(base / 2) if entity_type == "PERSON_NAME" else base // 2
    return 0


def mention_status(span: PiSpan, text: str, covered: list[tuple[int, int]]) -> str:
    """Whether a gold mention was caught, partly leaked or fully leaked by the replacements."""
    positions = [i for i in range(span.start, span.end) if text[i].isalnum()]
    if not positions:
        return CAUGHT
    hit = sum(any(a <= i < b for a, b in covered) for i in positions)
    if hit == len(positions):
        return CAUGHT
    return PARTIAL if hit else FULL


def residual_items(
    conversation: Conversation,
    replacements: Iterable[Mapping[str, Any]],
    scores: Mapping[str, int],
    default_score: int,
) -> list[ResidualItem]:
    """Distinct leaked items of one conversation, each at the status of its worst mention."""
    covered: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in replacements:
        covered.setdefault((r["field"], r["turn"]), []).append((r["start"], r["end"]))
    worst: dict[tuple[str, str], str] = {}
    for span in conversation.pi:
        turn = conversation.turns[span.turn]
        text = turn.text if span.field == "text" else turn.speaker or ""
        status = mention_status(span, text, covered.get((span.field, span.turn), []))
        key = (span.entity, span.entity_type)
        if _SEVERITY[status] > _SEVERITY[worst.get(key, CAUGHT)]:
            worst[key] = status
    return [
        ResidualItem(
            conversation.id, entity, info_type, status,
            item_score(info_type, status, scores, default_score),
        )
        for (entity, info_type), status in sorted(worst.items())
    ]  # fmt: skip


def risk_row(conversation: Conversation, items: list[ResidualItem]) -> dict[str, Any]:
    return {
        "conversation_id": conversation.id,
        "context": conversation.context,
        "score": sum(item.score for item in items),
        "n_leaked": len(items),
    }


def summarize_scores(scores: pd.Series) -> dict[str, float]:
    """mean, population std (ddof=0), P95, max and mean + std of a set of scores."""
    values = scores.to_numpy(dtype=float)
    if values.size == 0:
        return {"count": 0, "mean": 0.0, "std": 0.0, "p95": 0.0, "max": 0.0, "mu_plus_sigma": 0.0}
    mean, std = float(values.mean()), float(values.std(ddof=0))
    return {
        "count": int(values.size),
        "mean": round(mean, 4),
        "std": round(std, 4),
        "p95": round(float(np.percentile(values, 95)), 4),
        "max": float(values.max()),
        "mu_plus_sigma": round(mean + std, 4),
    }


def summarize_risk(table: pd.DataFrame) -> dict[str, Any]:
    """Corpus statistics in total and per context, as metrics/risk.json holds them."""
    summary: dict[str, Any] = summarize_scores(table["score"])
    summary["by_context"] = {
        str(context): summarize_scores(group["score"])
        for context, group in table.groupby("context", sort=True)
    }
    return summary
