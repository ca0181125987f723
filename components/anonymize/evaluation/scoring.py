"""Detection scoring: character-level precision/recall (label-agnostic) and entity recall,
and where the predicted characters came from (by recognizer and by info type).

A gold character counts as caught if any predicted span covers it; characters inside
neutral gold spans count neither way; whitespace never counts. An entity is caught when at
least ``ENTITY_COVERAGE`` of its non-space characters are covered.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from components.anonymize.evaluation.datasets import NEUTRAL, LabelledText
from components.anonymize.spans import Span
from components.anonymize.words import WORD

ENTITY_COVERAGE = 0.8
CONTEXT_CHARS = 40  # each side of a false positive in the developer's sample


@dataclass(frozen=True)
class FalsePositive:
    """A predicted span (part) that no gold span holds, with its context: private data,
    for a developer's eyes only, never written to metrics or MLflow."""

    text_id: str
    surface: str
    entity_type: str
    source: str
    context: str


@dataclass
class DetectionScore:
    true_positive_chars: int = 0
    false_positive_chars: int = 0
    false_negative_chars: int = 0
    entities: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    # predicted characters by what produced them: (true positives, false positives)
    by_source: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    by_type: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    # words (components/anonymize/words.py) in the texts, and those a predicted span touches:
    # the share of the text a detector masks, whatever it is (the method papers' Table 2)
    words: int = 0
    masked_words: int = 0
    # a seeded reservoir sample of false positives (``sample_size`` 0 keeps none)
    sample_size: int = 0
    samples: list[FalsePositive] = field(default_factory=list)
    _seen_false_positives: int = 0
    _rng: random.Random = field(default_factory=lambda: random.Random(0))

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
            "masked_word_share": round(self.masked_words / self.words, 4) if self.words else 0.0,
            "predicted_chars_by_source": _breakdown(self.by_source),
            "predicted_chars_by_type": _breakdown(self.by_type),
        }

    def keep_sample(self, false_positive: FalsePositive) -> None:
        """Reservoir sampling: every false positive has the same chance to be shown."""
        self._seen_false_positives += 1
        if len(self.samples) < self.sample_size:
            self.samples.append(false_positive)
            return
        slot = self._rng.randrange(self._seen_false_positives)
        if slot < self.sample_size:
            self.samples[slot] = false_positive


def _breakdown(tallies: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
    """Per key: its true/false positive characters, its precision and its share of all
    false positive characters; largest false-positive share first."""
    all_false = sum(f for _, f in tallies.values()) or 1
    rows = sorted(tallies.items(), key=lambda kv: (-kv[1][1], kv[0]))
    return {
        key: {
            "true_positive_chars": t,
            "false_positive_chars": f,
            "precision": round(t / (t + f), 4) if t + f else 1.0,
            "false_positive_share": round(f / all_false, 4),
        }
        for key, (t, f) in rows
    }


def score_text(item: LabelledText, predicted: Sequence[Span], *, score: DetectionScore) -> None:
    """Add one text's character and entity counts to ``score``."""
    covered = _chars(item.text, [(s.start, s.end) for s in predicted])
    gold = _chars(item.text, [(g.start, g.end) for g in item.gold if g.entity_type != NEUTRAL])
    neutral = _chars(item.text, [(g.start, g.end) for g in item.gold if g.entity_type == NEUTRAL])
    score.true_positive_chars += len(covered & gold)
    score.false_positive_chars += len(covered - gold - neutral)
    score.false_negative_chars += len(gold - covered)
    for word in WORD.finditer(item.text):
        score.words += 1
        score.masked_words += any(s.start < word.end() and word.start() < s.end for s in predicted)
    for found in predicted:
        chars = _chars(item.text, [(found.start, found.end)])
        hits, misses = len(chars & gold), len(chars - gold - neutral)
        for tally in (score.by_source[found.source or "unknown"], score.by_type[found.entity_type]):
            tally[0] += hits
            tally[1] += misses
        if misses and score.sample_size:
            score.keep_sample(_false_positive(item, found))
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


def _false_positive(item: LabelledText, span: Span) -> FalsePositive:
    start, end = max(0, span.start - CONTEXT_CHARS), span.end + CONTEXT_CHARS
    context = (
        item.text[start : span.start]
        + "[["
        + item.text[span.start : span.end]
        + "]]"
        + item.text[span.end : end]
    )
    return FalsePositive(
        item.id, item.text[span.start : span.end], span.entity_type, span.source, context
    )
