"""Detected spans: their edges, and the deterministic resolution of overlaps between them."""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field, replace

from components.core.lexicon import ends_abbreviation, ends_sentence

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


# What sits at a span's edge only as part of the text around it: clause and sentence
# punctuation, quotes, dashes, emphasis. A bracket is such debris unless the span holds its
# other half ("(212) 555-0143"); "@", "#", "+" and "$" belong to what they mark.
EDGE_PUNCTUATION = frozenset(",;:!?.…\"'“”‘’«»-–—*")
_CLOSER_OF = {"(": ")", "[": "]", "{": "}", "<": ">"}
_OPENER_OF = {closer: opener for opener, closer in _CLOSER_OF.items()}
_APOSTROPHES = "'’"
_SENTENCE_MARK = re.compile(r"[.!?](?=\s)")


def edge_trimmed(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` with their edges trimmed (``trim_edges``); a span left empty is dropped.
    A span that ran past a sentence's end keeps its first sentence, and any later one that
    holds a digit ("B113. Dash 7423935": an identifier the transcriber punctuated), each a
    span of its own.

    Every detector's spans pass here before they are used, so no recognizer needs a rule
    of its own for the punctuation around what it finds.
    """
    trimmed = []
    for span in spans:
        for i, (start, end) in enumerate(sentence_pieces(text, span.start, end=span.end)):
            if i == 0 or any(c.isdigit() for c in text[start:end]):
                trimmed.append(replace(span, start=start, end=end))
    return trimmed


def trim_edges(text: str, start: int, *, end: int) -> tuple[int, int]:
    """The range of ``text[start:end]`` that is the item itself: its first sentence
    ("Boston. Can" is "Boston"), without the whitespace, punctuation, quotes and unmatched
    brackets at its edges, nor a pair of brackets around all of it. A period stays after an
    abbreviation ("Co.", "St."); where it ends the sentence too, what replaces the span
    gives it back (``ends_with_sentence_period``). An empty range when nothing is left."""
    pieces = sentence_pieces(text, start, end=end)
    return pieces[0] if pieces else (start, start)


def sentence_pieces(text: str, start: int, *, end: int) -> list[tuple[int, int]]:
    """The sentences ``text[start:end]`` runs over (one, mostly), each trimmed, the empty
    ones left out."""
    start = _trim_start(text, start, end=end)
    cuts = [
        m.end() for m in _SENTENCE_MARK.finditer(text, start, end) if ends_sentence(text, m.start())
    ]
    bounds = [start, *cuts, end]
    pieces = [_trimmed(text, a, end=b) for a, b in itertools.pairwise(bounds)]
    return [(a, b) for a, b in pieces if b > a]


def _trimmed(text: str, start: int, *, end: int) -> tuple[int, int]:
    """``text[start:end]`` without what lies at its edges (see ``trim_edges``)."""
    while True:
        new_start = _trim_start(text, start, end=end)
        new_end = _trim_end(text, new_start, end=end)
        if _enclosed(text, new_start, end=new_end):
            new_start, new_end = new_start + 1, new_end - 1
        if (new_start, new_end) == (start, end) or new_end <= new_start:
            return (new_start, new_end) if new_end > new_start else (start, start)
        start, end = new_start, new_end


def _trim_start(text: str, start: int, *, end: int) -> int:
    while start < end:
        char = text[start]
        opener_alone = char in _CLOSER_OF and _closer_at(text, start, end=end) < 0
        if not (char.isspace() or char in EDGE_PUNCTUATION or char in _OPENER_OF or opener_alone):
            return start
        start += 1
    return start


def _trim_end(text: str, start: int, *, end: int) -> int:
    while end > start:
        char = text[end - 1]
        if char in _APOSTROPHES and _possessive(text, start, end=end):
            return end
        if char == "." and text[end - 2 : end - 1] != "." and ends_abbreviation(text, end - 1):
            return end
        closer_alone = char in _OPENER_OF and _OPENER_OF[char] not in text[start : end - 1]
        if not (char.isspace() or char in EDGE_PUNCTUATION or char in _CLOSER_OF or closer_alone):
            return end
        end -= 1
    return end


def _enclosed(text: str, start: int, *, end: int) -> bool:
    """ "(John Smith)": one pair of brackets around all of it."""
    if end - start < 2 or _CLOSER_OF.get(text[start]) != text[end - 1]:
        return False
    return _closer_at(text, start, end=end) == end - 1


def _closer_at(text: str, opener: int, *, end: int) -> int:
    """Where the bracket at ``text[opener]`` closes before ``end``; -1 if it does not."""
    return text.find(_CLOSER_OF[text[opener]], opener + 1, end)


def _possessive(text: str, start: int, *, end: int) -> bool:
    """ "James'" ends with a possessive apostrophe; "'Chris'" with a closing quote."""
    quoted = start > 0 and text[start - 1] in "'‘"
    return end - start > 2 and text[end - 2] in "sS" and not quoted


def ends_with_sentence_period(text: str, start: int, *, end: int) -> bool:
    """Whether the span ``text[start:end]`` ends with an abbreviation's period that also
    ends its sentence ("billed to Gonzalez LLC." "at 45 Elm St. Is that right?"): what
    replaces the span must give the sentence its period back."""
    if end - start < 2 or text[end - 1] != "." or not ends_abbreviation(text, end - 1):
        return False
    after = text[end : end + 64].lstrip(" \t")
    return not after or after[0] == "\n" or after[0].isupper()


def text_windows(text: str, max_chars: int, *, overlap: int) -> list[tuple[int, int]]:
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
