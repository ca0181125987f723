"""Run the detector the anonymize stage uses over labelled texts and score it."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from components.anonymize.engine import Detector, detect_batch
from components.anonymize.evaluation.datasets import LabelledText
from components.anonymize.evaluation.scoring import DetectionScore, FalsePositive, score_text
from components.anonymize.policy import AnonymizationPolicy
from components.core.corpus import Conversation, Turn


def evaluate_detection(
    items: Sequence[LabelledText],
    detector: Detector,
    *,
    policy: AnonymizationPolicy,
    batch_size: int,
    sample_size: int = 0,
) -> tuple[dict[str, Any], list[FalsePositive]]:
    """Character precision/recall, entity recall per type, predicted characters by
    recognizer and by type, and throughput over ``items``; and a seeded sample of
    ``sample_size`` false positives with their context (private: never log it)."""
    groups = conversation_groups(items)
    return score_detection(
        items,
        groups,
        detected=detected_turns(groups, detector, policy=policy, batch_size=batch_size),
        sample_size=sample_size,
    )


def detected_turns(
    groups: Sequence[Sequence[LabelledText]],
    detector: Detector,
    *,
    policy: AnonymizationPolicy,
    batch_size: int,
) -> Iterator[dict[int, list[Any]]]:
    """For each group (a conversation), the spans found in each of its texts, by turn."""
    for start in range(0, len(groups), batch_size):
        conversations = [_conversation(group) for group in groups[start : start + batch_size]]
        for fields, spans in detect_batch(conversations, detector, policy=policy):
            yield {
                where.turn: found
                for (where, _), found in zip(fields, spans, strict=True)
                if where.kind == "text"
            }


def score_detection(
    items: Sequence[LabelledText],
    groups: Sequence[Sequence[LabelledText]],
    *,
    detected: Iterable[dict[int, list[Any]]],
    sample_size: int = 0,
) -> tuple[dict[str, Any], list[FalsePositive]]:
    """The groups scored against what was ``detected`` in them, in order. ``detected`` may
    be lazy: the time it takes to produce counts in ``seconds``."""
    score = DetectionScore(sample_size=sample_size)
    started = time.perf_counter()
    for group, turns in zip(groups, detected, strict=True):
        for i, item in enumerate(group):
            score_text(item, turns[i], score=score)
    seconds = time.perf_counter() - started
    n_chars = sum(len(i.text) for i in items)
    metrics = {
        **score.to_metrics(),
        "n_texts": len(items),
        "n_chars": n_chars,
        "seconds": round(seconds, 2),
        "chars_per_second": round(n_chars / seconds, 1) if seconds else 0.0,
    }
    return metrics, score.samples


def conversation_groups(items: Sequence[LabelledText]) -> list[list[LabelledText]]:
    """Consecutive turns of one conversation together; a text that stands alone alone."""
    groups: list[list[LabelledText]] = []
    for item in items:
        if groups and item.conversation and groups[-1][-1].conversation == item.conversation:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _conversation(group: Sequence[LabelledText]) -> Conversation:
    if not group[0].conversation:
        return Conversation(group[0].id, (Turn(None, group[0].text),), plain=True)
    return Conversation(group[0].conversation, tuple(Turn(i.speaker, i.text) for i in group))
