"""From a token classifier's answers over overlapping windows to entity spans of a text.

A text is read in pieces that overlap (windows of characters, and a window too long for the
model in windows of tokens): every word near a piece's edge is read again, whole and in
context, by the next. Each word is labelled by exactly one piece, the one that answers for
where it starts: two overlapping pieces split their overlap at its middle, so a word is
labelled where it sits at least half an overlap from the edge. Words then join into spans by
their BIO labels over the whole text, so an entity across a window's edge is one span with
no merging of partial spans, and the offsets are the tokenizer's, never searched for.

A word takes the label of its first token (its other sub-word tokens follow it); a span's
score is the mean over its tokens of their probability of its entity (B- and I- together):
one unsure sub-word lowers it, and calibration thresholds it as it does any recognizer's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby, pairwise

import numpy as np

from components.anonymize.ner.labels import LabelScheme

WordKey = tuple[int, int]  # (character window, the tokenizer's word index in it)


@dataclass(frozen=True)
class ClassifiedSpan:
    """An entity a token classifier found: offsets into the text it read, the model's label
    without its B-/I- prefix, and its score (the mean of its tokens' probabilities of the
    label)."""

    start: int
    end: int
    label: str
    score: float
    n_tokens: int = field(default=1, compare=False)  # what a mean over joined spans weighs


@dataclass(frozen=True)
class WordSupport:
    """One word of a text and the model's probability that it is part of an entity, any
    entity (the mean over its tokens of one minus their probability of ``O``)."""

    start: int
    end: int
    probability: float


@dataclass(frozen=True)
class Reading:
    """What a token classifier saw in one text: its entities, and every word's support."""

    spans: tuple[ClassifiedSpan, ...] = ()
    words: tuple[WordSupport, ...] = ()


@dataclass(frozen=True)
class TokenPrediction:
    """One token as one piece read it: offsets into the text, its word, its most probable
    label and its probability of each entity of the scheme."""

    start: int
    end: int
    word: WordKey
    label: int
    entity_probabilities: np.ndarray


@dataclass(frozen=True)
class Word:
    """A word labelled by the piece that answers for it."""

    start: int
    end: int
    label: int
    probability_sums: np.ndarray  # per entity, summed over the word's tokens
    n_tokens: int


def labelled_words(pieces: Sequence[Sequence[TokenPrediction]]) -> list[Word]:
    """Each word of a text once, in text order, from the tokens of its pieces in reading
    order; a word's extent is the union of its tokens in every piece (a piece's edge may cut
    it)."""
    extents: dict[WordKey, tuple[int, int]] = {}
    for piece in pieces:
        for token in piece:
            start, end = extents.get(token.word, (token.start, token.end))
            extents[token.word] = (min(start, token.start), max(end, token.end))
    read = [piece for piece in pieces if piece]
    bounds = piece_bounds([(piece[0].start, piece[-1].end) for piece in read])
    words = []
    for piece, (low, high) in zip(read, bounds, strict=True):
        for key, group in groupby(piece, key=lambda token: token.word):
            start, end = extents[key]
            if low <= start < high:
                tokens = list(group)
                sums = np.sum([t.entity_probabilities for t in tokens], axis=0)
                words.append(Word(start, end, tokens[0].label, sums, len(tokens)))
    return sorted(words, key=lambda word: word.start)


def piece_bounds(extents: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The [low, high) of text each piece answers for, from the (start, end) each covers in
    reading order: two that overlap split their overlap at its middle."""
    cuts = [
        (start + previous_end) // 2 if start < previous_end else start
        for (_, previous_end), (start, _) in pairwise(extents)
    ]
    lows, highs = [0, *cuts], [*cuts, sys.maxsize]
    return [(low, max(low, high)) for low, high in zip(lows, highs, strict=True)]


def entity_spans(text: str, words: Sequence[Word], *, scheme: LabelScheme) -> list[ClassifiedSpan]:
    """BIO over words: a word of entity X joins the span before it when that span is an X
    and the word follows it directly (one token of text split by the pre-tokenizer: an
    e-mail address) or after whitespace without beginning (``B-``) an entity of its own."""
    spans: list[ClassifiedSpan] = []
    open_words: list[Word] = []
    open_entity: str | None = None
    for word in words:
        entity = scheme.entity_of(word.label)
        joins = (
            open_words
            and entity == open_entity
            and (
                word.start == open_words[-1].end
                or (
                    not scheme.begins(word.label)
                    and _blank(text, open_words[-1].end, end=word.start)
                )
            )
        )
        if not joins:
            if open_words and open_entity is not None:
                spans.append(_span(open_words, open_entity, scheme=scheme))
            open_words = []
        open_entity = entity
        if entity is not None:
            open_words.append(word)
    if open_words and open_entity is not None:
        spans.append(_span(open_words, open_entity, scheme=scheme))
    return spans


def word_support(words: Sequence[Word]) -> list[WordSupport]:
    """Each word's probability of being part of an entity (the entity probabilities of its
    tokens summed, per token)."""
    return [
        WordSupport(word.start, word.end, float(word.probability_sums.sum()) / word.n_tokens)
        for word in words
    ]


def _blank(text: str, start: int, *, end: int) -> bool:
    return text[start:end].isspace()


def _span(words: Sequence[Word], entity: str, *, scheme: LabelScheme) -> ClassifiedSpan:
    column = scheme.entities.index(entity)
    n_tokens = sum(word.n_tokens for word in words)
    score = float(sum(word.probability_sums[column] for word in words)) / n_tokens
    return ClassifiedSpan(words[0].start, words[-1].end, entity, score, n_tokens)
