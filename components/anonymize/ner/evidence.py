"""What the transformer NER saw in a text, for rules that weigh another recognizer's span:
is there a GIVEN_NAME or SURNAME over this word? How likely is this word part of any
entity?"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from components.anonymize.ner.aggregation import ClassifiedSpan, WordSupport


@dataclass(frozen=True)
class NerEvidence:
    """The NER's spans over one text, whatever their score and whether or not their label
    maps to an info type, and its words' support (both empty when the NER is off)."""

    spans: tuple[ClassifiedSpan, ...] = ()
    words: tuple[WordSupport, ...] = ()

    def support(self, start: int, end: int) -> float:
        """The model's highest probability, over the words overlapping ``[start, end)``, of a
        word being part of an entity (0 where it read no word)."""
        return max(
            (word.probability for word in self.words if word.start < end and start < word.end),
            default=0.0,
        )

    def over(self, start: int, end: int, *, min_score: float = 0.0) -> list[ClassifiedSpan]:
        """The spans overlapping ``[start, end)`` scored ``min_score`` or more."""
        return [
            span
            for span in self.spans
            if span.start < end and start < span.end and span.score >= min_score
        ]

    def labels_over(self, start: int, end: int, *, min_score: float = 0.0) -> frozenset[str]:
        """The model's labels (``GIVEN_NAME``, ``SURNAME``) over ``[start, end)``."""
        return frozenset(span.label for span in self.over(start, end, min_score=min_score))

    def sees(
        self, start: int, end: int, *, labels: Collection[str], min_score: float = 0.0
    ) -> bool:
        """Whether a span of one of ``labels`` overlaps ``[start, end)``."""
        return not self.labels_over(start, end, min_score=min_score).isdisjoint(labels)
