"""Labelled text as a speech-to-text engine would write it, its gold spans kept in place.

Call transcripts reach veiltune from speech recognition: no capitals, no punctuation,
digits said as words ("four one five"), addresses said aloud ("jane dot doe at example dot
com"), fillers ("uh", "um"). The labelled sets are written text; this view of them is how
detection is calibrated and measured on speech (docs: Policies and detection). Each text is
cut at its gold spans; every piece is read word by word, spoken, and joined with single
spaces, so a gold span covers exactly what its value became. Deterministic for a seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace

from components.anonymize.evaluation.datasets import GoldSpan, LabelledText

FILLERS = ("uh", "um", "you know", "like")
FILLER_RATE = 0.06  # a filler before about one word in sixteen, outside the gold spans
_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_SYMBOLS = {"@": "at", ".": "dot", "/": "slash", "-": "dash", "_": "underscore", "+": "plus"}
_TOKEN = re.compile(r"\S+")
# A token that is an address or handle (said symbol by symbol), not a word with punctuation.
_ADDRESS = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$|^(?:https?://|www\.)\S+$|^@\w+$")


def speech_like(item: LabelledText, seed: int = 0) -> LabelledText:
    """``item`` lowercased, unpunctuated, its digits and addresses said aloud, with fillers
    between words outside its gold spans; the gold spans moved with their values."""
    rng = random.Random(f"{seed}/{item.id}")
    words: list[str] = []
    gold: list[GoldSpan] = []
    cursor = 0
    for span in sorted(item.gold, key=lambda s: (s.start, s.end)):
        if span.start < cursor:
            continue  # overlapping gold: the first one keeps the text
        words += _spoken(item.text[cursor : span.start], rng, fillers=True)
        start = _length(words)
        value = _spoken(item.text[span.start : span.end], rng, fillers=False)
        words += value
        if value:
            gold.append(GoldSpan(start + (1 if start else 0), _length(words), span.entity_type))
        cursor = span.end
    words += _spoken(item.text[cursor:], rng, fillers=True)
    return replace(item, text=" ".join(words), gold=tuple(gold))


def _length(words: list[str]) -> int:
    """The length of ``words`` joined by single spaces."""
    return sum(map(len, words)) + max(len(words) - 1, 0)


def _spoken(text: str, rng: random.Random, *, fillers: bool) -> list[str]:
    spoken: list[str] = []
    for token in _TOKEN.findall(text):
        said = _say(token)
        if said and fillers and rng.random() < FILLER_RATE:
            spoken.append(rng.choice(FILLERS))
        spoken += said
    return spoken


def _say(token: str) -> list[str]:
    """One written token as the words a recognizer writes for it."""
    address = token.rstrip(".,;:!?")
    pieces = (
        re.findall(r"[^\W\d_]+|\d|[@./_+-]", address)
        if _ADDRESS.match(address)
        else re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d", token)
    )
    return [_say_piece(piece) for piece in pieces]


def _say_piece(piece: str) -> str:
    if piece.isdigit():
        return _DIGITS[int(piece)]
    return _SYMBOLS.get(piece, piece.lower())
