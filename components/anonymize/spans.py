"""Detected spans and the deterministic resolution of overlaps between them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Span:
    """A detected span of personal information: character offsets into one text."""

    start: int
    end: int
    entity_type: str
    score: float

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


def resolve_overlaps(spans: list[Span]) -> list[Span]:
    """Keep a non-overlapping subset, sorted by start.

    Longer spans win, then higher scores, then the earlier start and type name, so the
    result does not depend on the order detectors reported them in.
    """
    ranked = sorted(spans, key=lambda s: (-(s.end - s.start), -s.score, s.start, s.entity_type))
    kept: list[Span] = []
    for span in ranked:
        if span.end > span.start and not any(span.overlaps(k) for k in kept):
            kept.append(span)
    return sorted(kept)
