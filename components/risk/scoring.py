"""Residual risk: what personal information survived anonymization, and what it scores.

The policy is the method's: each info type scores 0–5 for a missed item; organization and
product names score as a topic of conversation unless they belong to a speaker (the
``_SPEAKER`` variant of the type); a partially leaked item (``_PARTIAL``) scores half,
rounded up for person names and down for the rest; a conversation scores the sum over its
distinct leaked items, so four mentions of one missed name count once and spelling variants
of one entity (``Mark``, ``Marc``, ``M-A-R-K``) are one item.

Three sources report leaked items in one shape, :class:`ResidualItem`: the ground truth a
labelled corpus carries (:func:`residual_items`), reviewers' annotations
(``components.review.sample``) and the automatic second-opinion scan (``components.risk.estimate``).
An item never holds the leaked text: text sources identify an item by a salted hash of its
normalized form.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from components.core.corpus import Conversation, PiSpan, base_info_type

FULL, PARTIAL, CAUGHT = "full", "partial", "caught"
_SEVERITY = {CAUGHT: 0, PARTIAL: 1, FULL: 2}
PARTIAL_SUFFIX = "_PARTIAL"
# Types that score as a topic unless a speaker owns them.
SPEAKER_OWNABLE = frozenset({"ORGANIZATION_NAME", "PRODUCT_NAME"})
# Types whose partial leak rounds up: half a name still names.
ROUND_UP_TYPES = frozenset({"PERSON_NAME"})
# The risk table: one row per conversation; the gate judges its score column.
SCORE_COLUMN = "score"
CONTEXT_COLUMN = "context"
RISK_COLUMNS = ["conversation_id", CONTEXT_COLUMN, SCORE_COLUMN, "n_leaked"]
SOURCES = ("ground_truth", "annotation", "estimate")


@dataclass(frozen=True)
class RiskPolicy:
    """Scores per info type (``_SPEAKER`` variants included) and one for unlisted types."""

    scores: Mapping[str, int]
    default_score: int = 3

    def score(self, entity_type: str, status: str) -> int:
        """What one distinct leaked item of ``entity_type`` scores at ``status``."""
        base = self.scores.get(entity_type)
        if base is None:
            base = self.scores.get(base_info_type(entity_type), self.default_score)
        if status == FULL:
            return base
        if status == PARTIAL:
            rounds_up = base_info_type(entity_type) in ROUND_UP_TYPES
            return math.ceil(base / 2) if rounds_up else base // 2
        return 0

    def knows(self, entity_type: str) -> bool:
        """Whether ``entity_type`` is a type the policy scores explicitly."""
        return entity_type in self.scores


def item_score(entity_type: str, status: str, *, scores: Mapping[str, int], default: int) -> int:
    return RiskPolicy(scores, default).score(entity_type, status)


@dataclass(frozen=True)
class ResidualItem:
    """One distinct leaked item of one conversation.

    ``entity`` identifies the item within its conversation: the ground truth's entity id,
    or a salted hash of the normalized leaked text for the annotation and estimate sources.
    """

    conversation_id: str
    entity: str
    entity_type: str
    status: str  # full | partial
    score: int
    source: str = "ground_truth"

    def to_record(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "entity": self.entity,
            "entity_type": self.entity_type,
            "status": self.status,
            "score": self.score,
            "source": self.source,
        }


def mention_status(span: PiSpan, text: str, *, covered: list[tuple[int, int]]) -> str:
    """Whether a gold mention was caught, partly leaked or fully leaked by the replacements."""
    positions = [i for i in range(span.start, span.end) if text[i].isalnum()]
    if not positions:
        return CAUGHT
    hit = sum(any(a <= i < b for a, b in covered) for i in positions)
    if hit == len(positions):
        return CAUGHT
    return PARTIAL if hit else FULL


def leaked_text(span: PiSpan, text: str, *, covered: list[tuple[int, int]]) -> str:
    """The characters of a gold mention that no replacement covered (spaces kept)."""
    return "".join(
        text[i] for i in range(span.start, span.end) if not any(a <= i < b for a, b in covered)
    ).strip()


def _covered_by_turn(
    replacements: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, int], list[tuple[int, int]]]:
    covered: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in replacements:
        covered.setdefault((r["field"], r["turn"]), []).append((r["start"], r["end"]))
    return covered


def residual_items(
    conversation: Conversation,
    replacements: Iterable[Mapping[str, Any]],
    *,
    scores: Mapping[str, int] | RiskPolicy,
    default_score: int = 3,
) -> list[ResidualItem]:
    """Distinct leaked items of one conversation, each at the status of its worst mention."""
    policy = scores if isinstance(scores, RiskPolicy) else RiskPolicy(scores, default_score)
    covered = _covered_by_turn(replacements)
    worst: dict[tuple[str, str], str] = {}
    for span in conversation.pi:
        turn = conversation.turns[span.turn]
        text = turn.text if span.field == "text" else turn.speaker or ""
        status = mention_status(span, text, covered=covered.get((span.field, span.turn), []))
        key = (span.entity, span.entity_type)
        if _SEVERITY[status] > _SEVERITY[worst.get(key, CAUGHT)]:
            worst[key] = status
    return [
        ResidualItem(conversation.id, entity, info_type, status, policy.score(info_type, status))
        for (entity, info_type), status in sorted(worst.items())
    ]


def leaked_fragments(
    conversation: Conversation, replacements: Iterable[Mapping[str, Any]]
) -> list[tuple[str, str, str]]:
    """(entity, info type, leaked text) of every gold mention that leaked, in memory only:
    the automatic estimate is scored against these."""
    covered = _covered_by_turn(replacements)
    fragments = []
    for span in conversation.pi:
        turn = conversation.turns[span.turn]
        text = turn.text if span.field == "text" else turn.speaker or ""
        spans_covered = covered.get((span.field, span.turn), [])
        if mention_status(span, text, covered=spans_covered) != CAUGHT:
            fragments.append(
                (span.entity, span.entity_type, leaked_text(span, text, covered=spans_covered))
            )
    return fragments


# --- spelling variants ------------------------------------------------------------------

_SPELLED = re.compile(r"^(?:[a-z][\s.-]+)+[a-z]$", re.I)  # M-A-R-K, m. a. r. k
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_SOUNDEX_CODES = {
    **dict.fromkeys("bfpv", "1"),
    **dict.fromkeys("cgjkqsxz", "2"),
    **dict.fromkeys("dt", "3"),
    "l": "4",
    **dict.fromkeys("mn", "5"),
    "r": "6",
}


def variant_key(text: str) -> str:
    """Case, spacing, punctuation and spelling-out removed: ``M-A-R-K`` → ``mark``."""
    return _NOT_ALNUM.sub("", text.lower())


def soundex(word: str) -> str:
    """The classic four-character Soundex code (``mark`` and ``marc`` → ``M620``)."""
    letters = [c for c in word.lower() if c.isalpha()]
    if not letters:
        return ""
    code, last = letters[0].upper(), _SOUNDEX_CODES.get(letters[0], "")
    for c in letters[1:]:
        digit = _SOUNDEX_CODES.get(c, "")
        if digit and digit != last:
            code += digit
        if c not in "hw":
            last = digit
    return (code + "000")[:4]


def _edit_distance_at_most_one(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] if len(a) == len(b) else a[i:] == b[i + 1 :]


def same_entity(a: str, b: str, *, entity_type: str) -> bool:
    """Whether two leaked texts of one type are variants of one entity: equal once
    normalized, or (names) one letter apart and alike in sound ("Mark", "Marc")."""
    key_a, key_b = variant_key(a), variant_key(b)
    if not key_a or not key_b:
        return False
    if key_a == key_b:
        return True
    if base_info_type(entity_type) not in {"PERSON_NAME", "ORGANIZATION_NAME"}:
        return False
    return soundex(key_a) == soundex(key_b) and _edit_distance_at_most_one(key_a, key_b)


def merge_variants(
    found: Sequence[tuple[str, str, str]],
) -> list[tuple[str, str, str]]:
    """Collapse (text, entity type, status) findings of one conversation into distinct
    items: variants of one entity of one type become one item at its worst status."""
    merged: list[tuple[str, str, str]] = []
    for text, entity_type, status in found:
        for i, (kept_text, kept_type, kept_status) in enumerate(merged):
            if kept_type == entity_type and same_entity(text, kept_text, entity_type=entity_type):
                if _SEVERITY[status] > _SEVERITY[kept_status]:
                    merged[i] = (kept_text, kept_type, status)
                break
        else:
            merged.append((text, entity_type, status))
    return merged


# --- tables and statistics -------------------------------------------------------------


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


def read_risk_table(path: Path) -> pd.DataFrame:
    """The risk table the risk stage wrote (ids and contexts read as text)."""
    return pd.read_csv(path, dtype={"conversation_id": str, CONTEXT_COLUMN: str})
