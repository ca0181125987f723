"""Detection scoring: character-level precision/recall (label-agnostic) and entity recall.

A gold character counts as caught if any predicted span covers it; characters inside
neutral gold spans count neither way; whitespace never counts. An entity is caught when at
least ``ENTITY_COVERAGE`` of its non-space characters are covered.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from components.anonymize.evaluation.datasets import NEUTRAL, LabelledText
from components.anonymize.spans import Span

ENTITY_COVERAGE = 0.8


@dataclass
class DetectionScore:
    true_positive_chars: int = 0
    false_positive_chars: int = 0
    false_negative_chars: int = 0
    entities: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    @property
    def precision(self) -> float:
        predicted = self.true_positive_chars + self.false_positive_chars
        return self.true_positive_chars / predicted if predicted else 1.0

    @property
    def recall(self) -> float:
        gold = self.true_positive_chars + self.false_negative_chars
        return self.true_positive_chars / gold if gold else 1.0

    def to_metrics(self) -> dict[str, Any]:
        caught = sum(c for c, _ in self.entities.values())
        total = sum(t for _, t in self.entities.values())
        return {
            "char_precision": round(self.precision, 4),
            "char_recall": round(self.recall, 4),
            "entity_recall": round(caught / total, 4) if total else 1.0,
            "entity_recall_by_type": {
                t: {"recall": round(c / n, 4), "caught": c, "total": n}
                for t, (c, n) in sorted(self.entities.items())
            },
            "n_gold_entities": total,
        }


def score_text(item: LabelledText, predicted: Sequence[Span], score: DetectionScore) -> None:
    """Add one text's character and entity counts to ``score``."""
    covered = _chars(item.text, [(s.start, s.end) for s in predicted])
    gold = _chars(item.text, [(g.start, g.end) for g in item.gold if g.entity_type != NEUTRAL])
    neutral = _chars(item.text, [(g.start, g.end) for g in item.gold if g.entity_type == NEUTRAL])
    score.true_positive_chars += len(covered & gold)
    score.false_positive_chars += len(covered - gold - neutral)
    score.false_negative_chars += len(gold - covered)
    for span in item.gold:
        if span.entity_type == NEUTRAL:
            continue
        chars = _chars(item.text, [(span.start, span.end)])
        if not chars:
            continue
        tally = score.entities[span.entity_type]
        tally[0] += len(chars & covered) >= ENTITY_COVERAGE * len(chars)
        tally[1] += 1


def _chars(text: str, ranges: Sequence[tuple[int, int]]) -> set[int]:
    return {
        i
        for start, end in ranges
        for i in range(start, min(end, len(text)))
        if not text[i].isspace()
    }
