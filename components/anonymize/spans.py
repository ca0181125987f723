"""Detected spans and the deterministic resolution of overlaps between them."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

# Span sources the engine adds to the backend's recognizers (see Span.source): policy, not
# detection.
SPEAKER_SOURCE = "speaker_label"
PI_LABEL_KEY_SOURCE = "pi_label_key"  # a label value under a key that names PI
DICTIONARY_SOURCE = "dictionary"  # a custom-dictionary hit
PROPAGATED_PREFIX = "propagated/"
POLICY_SOURCES = frozenset({SPEAKER_SOURCE, PI_LABEL_KEY_SOURCE, DICTIONARY_SOURCE})


@dataclass(frozen=True, order=True)
class Span:
    """A detected span of personal information: character offsets into one text."""

    start: int
    end: int
    entity_type: str
    score: float
    # What found it: a recognizer's name, "dictionary", "speaker_label", or
    # "propagated/<the recognizer of the mention it copies>". Not part of equality or order.
    source: str = field(default="", compare=False)

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


def resolve_overlaps(spans: list[Span]) -> list[Span]:
    """Keep a non-overlapping subset, sorted by start.

    Longer spans win, then higher scores, then the earlier start, type name and source, so
    the result does not depend on the order detectors reported them in. O(n log n): kept
    spans never overlap, so only the kept neighbours of a candidate can collide with it.
    """
    ranked = sorted(
        spans, key=lambda s: (-(s.end - s.start), -s.score, s.start, s.entity_type, s.source)
    )
    starts: list[int] = []
    kept: list[Span] = []  # sorted by start, parallel to ``starts``
    for span in ranked:
        if span.end <= span.start:
            continue
        i = bisect.bisect_left(starts, span.start)
        if (i > 0 and kept[i - 1].end > span.start) or (i < len(kept) and kept[i].start < span.end):
            continue
        starts.insert(i, span.start)
        kept.insert(i, span)
    return kept


def text_windows(text: str, max_chars: int, overlap: int) -> list[tuple[int, int]]:
    """(start, end) windows of at most ``max_chars`` covering ``text``, cut at spaces where
    there are some (no word split), each starting at a word ``overlap`` characters or more
    before the last one's end, so an entity cut by one window's edge is whole in the next.
    A detector that reads texts in bounded pieces (Presidio's spaCy, DLP's requests) maps
    its spans back by each window's start."""
    windows, start = [], 0
    while True:
        end = min(len(text), start + max_chars)
        if end < len(text):
            cut = text.rfind(" ", start + max_chars // 2, end)
            end = cut if cut > start else end
        windows.append((start, end))
        if end == len(text):
            return windows
        space = text.rfind(" ", start, end - overlap)
        start = space + 1 if space > start else max(start + 1, end - overlap)
