"""Run the detector the anonymize stage uses over labelled texts and score it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from components.anonymize.engine import AnonymizationPolicy, Detector, detect_batch
from components.anonymize.evaluation.datasets import LabelledText
from components.anonymize.evaluation.scoring import DetectionScore, FalsePositive, score_text
from components.core.corpus import Conversation, Turn


def evaluate_detection(
    items: Sequence[LabelledText],
    detector: Detector,
    policy: AnonymizationPolicy,
    batch_size: int,
    sample_size: int = 0,
) -> tuple[dict[str, Any], list[FalsePositive]]:
    """Character precision/recall, entity recall per type, predicted characters by
    recognizer and by type, and throughput over ``items``; and a seeded sample of
    ``sample_size`` false positives with their context (private: never log it)."""
    score = DetectionScore(sample_size=sample_size)
    started = time.perf_counter()
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        conversations = [Conversation(i.id, (Turn(None, i.text),), plain=True) for i in batch]
        for item, (_fields, spans) in zip(
            batch, detect_batch(conversations, detector, policy), strict=True
        ):
            score_text(item, spans[0], score)
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
