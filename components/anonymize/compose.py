"""The union of several detectors: entity backends side by side, word-level detectors under
them (``anonymize.detectors``).

Entity detectors' spans (Presidio, Cloud DLP) are resolved together as one backend's are:
the longer span wins, then the higher score. Word-level detectors (``lm_probability``,
``allow_list``, ``vocab_threshold``) flag runs of words, which may be longer than the entity
they hold ("Mark Kowalski tomorrow"); ``resolve_overlaps`` alone would keep the run and lose
the entity's type and its placeholder number. So a word-level span gives way: it is cut
around every entity span it overlaps, and what is left of it (trimmed of spaces, if it
still holds a letter or digit) is kept.

In context (``detect_in_context``, what the engine calls), each member that reads context
(a ``ContextualDetector``: ``lm_probability``) gets it; the others see the texts alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.anonymize.engine import ContextualDetector
from components.anonymize.spans import Span, resolve_overlaps


@dataclass
class UnionDetector:
    """The union of ``detectors``' spans per text, overlaps resolved; spans of
    ``word_level`` detectors yield to them (cut around them)."""

    detectors: Sequence[Any]
    word_level: Sequence[Any] = ()

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        return self.detect_in_context(texts, None, batch_size=batch_size)

    def detect_in_context(
        self, texts: Sequence[str], contexts: Sequence[str] | None, *, batch_size: int = 64
    ) -> list[list[Span]]:
        """The union's spans of each text, ``contexts`` (None: none) passed to the members
        that read context."""
        entities = _union(self.detectors, texts, contexts=contexts, batch_size=batch_size)
        words = _union(self.word_level, texts, contexts=contexts, batch_size=batch_size)
        return [
            sorted([*found, *resolve_overlaps(_cut_around(extra, found, text=text))])
            for text, found, extra in zip(texts, entities, words, strict=True)
        ]

    def usage_metrics(self) -> dict[str, Any]:
        """The usage the detectors report (a service's requests and cost, a model's
        throughput): the stage's metrics."""
        return {
            k: v for d in (*self.detectors, *self.word_level) for k, v in _usage_metrics(d).items()
        }


def _union(
    detectors: Sequence[Any],
    texts: Sequence[str],
    *,
    contexts: Sequence[str] | None,
    batch_size: int,
) -> list[list[Span]]:
    results = [
        d.detect_in_context(texts, contexts, batch_size=batch_size)
        if contexts is not None and isinstance(d, ContextualDetector)
        else d.detect(texts, batch_size)
        for d in detectors
    ]
    if not results:
        return [[] for _ in texts]
    return [
        resolve_overlaps([s for found in per_text for s in found])
        for per_text in zip(*results, strict=True)
    ]


def _cut_around(spans: Sequence[Span], blockers: Sequence[Span], *, text: str) -> list[Span]:
    """``spans`` minus the characters of ``blockers``: each span's remaining pieces."""
    pieces = []
    for span in spans:
        start = span.start
        for blocker in sorted(b for b in blockers if b.overlaps(span)):
            pieces.append((span, start, blocker.start))
            start = max(start, blocker.end)
        pieces.append((span, start, span.end))
    trimmed = (_trimmed(span, start, end=end, text=text) for span, start, end in pieces)
    return [piece for piece in trimmed if piece is not None]


def _trimmed(span: Span, start: int, *, end: int, text: str) -> Span | None:
    """The part of ``span`` in [start, end) without its edge spaces, if it holds a word."""
    if end <= start:
        return None
    stripped = text[start:end]
    lead = len(stripped) - len(stripped.lstrip())
    start, end = start + lead, start + lead + len(stripped.strip())
    if not any(c.isalnum() for c in text[start:end]):
        return None
    return Span(start, end, span.entity_type, span.score, span.source)


def _usage_metrics(detector: Any) -> dict[str, Any]:
    report = getattr(detector, "usage_metrics", None)
    return dict(report()) if callable(report) else {}
