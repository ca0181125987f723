"""Words for the word-level detectors: what a word is, which words they may judge, and how
their hits join into spans.

A word is a run of letters and digits, apostrophes inside it included (``O'Neil``,
``don't``); punctuation is never a word. Text inside a placeholder (``[PERSON_NAME_1]``, the
grammar of ``components/core/placeholders.py``) is already anonymized and never judged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from components.anonymize.spans import Span
from components.core.placeholders import ANY_PLACEHOLDER

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# What may separate two hits of one detector for them to be one span ("John Smith"): spaces
# only; a newline, comma or hyphen keeps them apart.
_SPACES = frozenset(" \t\u00a0")
# Word-level spans score below every entity detection (Presidio's thresholds start at 0.35,
# DLP's VERY_UNLIKELY is 0.1): when a surface is both, the engine's consensus gives every
# mention the entity's type, and a tie in length goes to the entity.
WORD_SCORE = 0.05


def candidate_words(text: str, skip: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text`` outside placeholders whose lowercase form is
    not in ``skip`` (stop words, for a detector that leaves them alone)."""
    placeholders = [m.span() for m in ANY_PLACEHOLDER.finditer(text)]
    return [
        m.span()
        for m in WORD.finditer(text)
        if m.group().lower() not in skip
        and not any(start < m.end() and m.start() < end for start, end in placeholders)
    ]


def normal_form(word: str) -> str:
    """The form word lists are compared in: lowercase, typographic apostrophe as ``'``."""
    return word.lower().replace("’", "'")


def merge_adjacent(spans: Sequence[Span], text: str) -> list[Span]:
    """Join hits of one detector separated by spaces only into one span, so that a run of
    flagged words ("John Smith") becomes one placeholder. ``spans`` sorted by start."""
    merged: list[Span] = []
    for span in spans:
        if merged and _only_spaces(text[merged[-1].end : span.start]):
            last = merged[-1]
            merged[-1] = Span(last.start, span.end, last.entity_type, last.score, last.source)
        else:
            merged.append(span)
    return merged


def _only_spaces(gap: str) -> bool:
    return bool(gap) and set(gap) <= _SPACES
