"""The human review loop: a stratified sample for reviewers, and their annotations scored.

Reviewers read anonymized conversations and mark what should have been removed, in the
method's format: the missed text in parentheses, then its tag, over the anonymized text::

    I'm [PERSON_NAME_1] (Halpert)[MISSED_PERSON_NAME_PARTIAL] from
    (Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER]

A tag is ``MISSED_<INFO TYPE>``, then ``_SPEAKER`` for an organization or product that
belongs to a speaker, then ``_PARTIAL`` when only part of the value survived. Tags are
checked against the risk policy; every malformed one is reported with its file and line.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.corpus import (
    SPEAKER_SUFFIX,
    Conversation,
    base_info_type,
    conversation_from_record,
)
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl
from components.risk import (
    FULL,
    PARTIAL,
    PARTIAL_SUFFIX,
    SPEAKER_OWNABLE,
    ResidualItem,
    RiskPolicy,
    scored_items,
)

_ANNOTATION = re.compile(r"\(([^()\n]+)\)\[([^\[\]\n]*)\]")
_TAG_LIKE = re.compile(r"\[\s*MISSED[^\]\n]*\]?", re.I)
RISK_BANDS = ("none", "low", "high")


@dataclass(frozen=True)
class Annotation:
    """One reviewer mark: the missed text, its info type and whether it leaked in part."""

    text: str
    entity_type: str
    status: str


def parse_tag(tag: str, policy: RiskPolicy) -> tuple[str, str]:
    """``MISSED_PERSON_NAME_PARTIAL`` → (``PERSON_NAME``, ``partial``).

    Raises:
        ValueError: the tag is not ``MISSED_<type>[_SPEAKER][_PARTIAL]`` of a policy type.
    """
    if not tag.startswith("MISSED_"):
        raise ValueError(f"tag [{tag}] does not start with MISSED_")
    entity_type = tag.removeprefix("MISSED_")
    status = FULL
    if entity_type.endswith(PARTIAL_SUFFIX):
        entity_type, status = entity_type.removesuffix(PARTIAL_SUFFIX), PARTIAL
    base = base_info_type(entity_type)
    if entity_type.endswith(SPEAKER_SUFFIX) and base not in SPEAKER_OWNABLE:
        raise ValueError(
            f"tag [{tag}]: only {', '.join(sorted(SPEAKER_OWNABLE))} take {SPEAKER_SUFFIX}"
        )
    if not policy.knows(base):
        raise ValueError(f"tag [{tag}]: {base} is not an info type of the risk policy")
    return entity_type, status


def parse_annotations(text: str, policy: RiskPolicy) -> tuple[list[Annotation], list[str]]:
    """The annotations in one text, and a message for each malformed mark in it."""
    annotations, errors = [], []
    consumed: list[tuple[int, int]] = []
    for match in _ANNOTATION.finditer(text):
        consumed.append(match.span())
        missed, tag = match.group(1).strip(), match.group(2).strip()
        if not missed:
            errors.append(f"empty missed text before [{tag}]")
            continue
        try:
            entity_type, status = parse_tag(tag, policy)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        annotations.append(Annotation(missed, entity_type, status))
    for match in _TAG_LIKE.finditer(text):
        if not any(a <= match.start() < b for a, b in consumed):
            errors.append(
                f"{match.group()!s} at column {match.start() + 1} has no (missed text) "
                "right before it, or its brackets are not closed"
            )
    return annotations, errors


def strip_annotations(text: str) -> str:
    """The anonymized text as it was before the reviewer marked it."""
    return _ANNOTATION.sub(lambda m: m.group(1), text)


@dataclass(frozen=True)
class AnnotatedConversation:
    """A reviewed conversation: its text with the marks taken out, and its scored items."""

    conversation: Conversation
    items: list[ResidualItem]


def read_annotations(path: Path, policy: RiskPolicy, *, salt: str) -> list[AnnotatedConversation]:
    """Every reviewed conversation of an annotated review file (the review sample's JSONL).

    Raises:
        InputError: naming ``file:line`` of each malformed annotation (all of them, so a
            reviewer fixes a file in one pass), a bad record, or an empty file.
    """
    reviewed, errors = [], []
    for line_number, record in iter_jsonl(path):
        where = f"{path}:{line_number}"
        conversation = conversation_from_record(record, where)
        found: list[tuple[str, str, str]] = []
        turns = []
        for index, turn in enumerate(conversation.turns):
            for field, text in (("speaker", turn.speaker), ("text", turn.text)):
                if text is None:
                    continue
                annotations, problems = parse_annotations(text, policy)
                errors += [f"{where}: turns[{index}].{field}: {p}" for p in problems]
                found += [(a.text, a.entity_type, a.status) for a in annotations]
            turns.append(
                type(turn)(
                    strip_annotations(turn.speaker) if turn.speaker else turn.speaker,
                    strip_annotations(turn.text),
                )
            )
        items = scored_items(conversation.id, found, policy=policy, salt=salt, source="annotation")
        clean = Conversation(conversation.id, tuple(turns), conversation.context)
        reviewed.append(AnnotatedConversation(clean, items))
    if errors:
        shown = "\n  ".join(errors[:50])
        more = f"\n  ... and {len(errors) - 50} more" if len(errors) > 50 else ""
        raise InputError(f"{len(errors)} malformed annotation(s):\n  {shown}{more}")
    if not reviewed:
        raise InputError(f"{path}: no reviewed conversations in the file")
    return reviewed


def risk_band(score: int, threshold: float) -> str:
    """``none`` (0), ``low`` (below the gate threshold) or ``high``."""
    if score <= 0:
        return "none"
    return "low" if score < threshold else "high"


def review_sample(
    conversations: Sequence[Conversation],
    scores: Mapping[str, int],
    *,
    size: int,
    threshold: float,
    seed: int,
) -> list[dict[str, Any]]:
    """A sample of ``size`` conversations stratified by context and risk band.

    Each (context, band) stratum gets a share proportional to its size but at least one
    conversation while the budget lasts, so rare contexts and the risky band are always
    seen; the rest of the budget is spread in proportion. Records carry the anonymized
    turns (what reviewers annotate), the context, the band and the risk score.
    """
    strata: dict[tuple[str, str], list[Conversation]] = {}
    for conversation in sorted(conversations, key=lambda c: c.id):
        band = risk_band(scores.get(conversation.id, 0), threshold)
        strata.setdefault((conversation.context, band), []).append(conversation)
    rng = random.Random(seed)
    for members in strata.values():
        rng.shuffle(members)
    budget = min(size, len(conversations))
    keys = sorted(strata, key=lambda k: (RISK_BANDS.index(k[1]) * -1, k[0]))
    taken = {key: 0 for key in keys}
    for key in keys:  # one from each stratum first, riskiest bands first
        if budget and taken[key] < len(strata[key]):
            taken[key] += 1
            budget -= 1
    total = len(conversations)
    while budget:
        open_keys = [k for k in keys if taken[k] < len(strata[k])]
        if not open_keys:
            break
        key = max(open_keys, key=lambda k: len(strata[k]) / total - taken[k] / size)
        taken[key] += 1
        budget -= 1
    sample = [c for key in keys for c in strata[key][: taken[key]]]
    return [
        {
            **conversation.to_record(),
            "context": conversation.context,
            "risk_band": risk_band(scores.get(conversation.id, 0), threshold),
            "risk_score": int(scores.get(conversation.id, 0)),
        }
        for conversation in sample
    ]


def count_by_type(items: Iterable[ResidualItem]) -> dict[str, int]:
    """Items per tag type, partial leaks apart (``PERSON_NAME_PARTIAL``)."""
    counts: dict[str, int] = {}
    for item in items:
        key = f"{item.entity_type}{PARTIAL_SUFFIX if item.status == PARTIAL else ''}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def annotated_summary(
    reviewed: Iterable[AnnotatedConversation], estimated: Mapping[str, Sequence[ResidualItem]]
) -> list[dict[str, Any]]:
    """Per reviewed conversation: the annotated score beside the automatic estimate."""
    rows = []
    for entry in reviewed:
        conversation_id = entry.conversation.id
        estimate = estimated.get(conversation_id, [])
        rows.append(
            {
                "conversation_id": conversation_id,
                "context": entry.conversation.context,
                "annotated_score": sum(i.score for i in entry.items),
                "annotated_items": len(entry.items),
                "estimated_score": sum(i.score for i in estimate),
                "estimated_items": len(estimate),
            }
        )
    return rows
