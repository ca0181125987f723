"""Dictated characters: runs of spoken or written digits (``five five five``, ``555-01``,
``oh`` for zero, ``for`` misheard for four) and spelled letters (``M-A-R-K``, ``G O O D``).

A run of 3+ digits is an identifier whatever its format, so a repeated or mistranscribed
phone or account number never survives; a spelled run of 2+ letters is usually a name.
A run written as a quantity (a year, a date, an amount of money, a number with a unit or
thousands separators), a countdown ("3... 2... 1") or a section of a code ("401(k)",
"501(c)(3)") scores ``QUANTITY_SCORE`` instead, unless an identifier cue ("number",
"account", "zip", "last four") comes just before it: the operating point decides whether
such runs are masked (``veiltune calibrate``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer
from components.anonymize.recognizers.transcript_patterns import MONTH as _MONTH

DIGIT_WORDS = frozenset(
    {
        "zero",
        "oh",
        "o",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "double",
        "triple",
    }
)
# Words ASR writes for a digit only when they sit inside a digit run.
MISHEARD_DIGITS = frozenset({"for", "to", "too", "won", "ate"})
# Dictation glue that belongs to the item being read out (an email, a handle, an address).
CONNECTORS = frozenset({"dash", "hyphen", "dot", "point", "underscore", "slash"})
# An identifier with a short letter prefix (TCK-3335, w5459) is one token; "it's" is one word.
_SEPARATOR_GAP = re.compile(r"[\s,.\-/()+]*")  # "(37) 788-063" is one run
_TOKEN = re.compile(r"(?:[A-Za-z]{1,5}-?)?\d[A-Za-z\d]*|[A-Za-z]+(?:'[A-Za-z]+)*|[-./,]")
_YEAR = re.compile(r"(?:1[89]|20)\d\d")
_DATE = re.compile(
    rf"(?:\d{{1,2}}[/.-]\d{{1,2}}(?:[/.-]\d{{2,4}})?|{_MONTH}-?\d{{1,2}}(?:-\d{{2,4}})?)", re.I
)
_GROUPED_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d{1,2}")
_CODE_SECTION = re.compile(r"\d{3,4}\s*\([a-z]\)?(?:\s*\(?\d\)?)?", re.I)  # 401(k), 501(c)(3)
_DIGIT_VALUES = {
    **{str(n): n for n in range(10)},
    **{w: n for n, w in enumerate(("zero", "one", "two", "three", "four", "five", "six"))},
    **{w: n for n, w in enumerate(("seven", "eight", "nine"), start=7)},
    "oh": 0,
    "o": 0,
}
_MONEY_BEFORE = re.compile(r"[$€£¥]\s*$")
_MONTH_BEFORE = re.compile(rf"\b{_MONTH}\.?\s*$", re.I)
_UNIT_AFTER = re.compile(
    r"\s*(?:%|percent|k\b|m\b|million|billion|thousand|hundred|dollars?|bucks|euros?|pounds?|"
    r"cents?|usd|miles?|km|kg|lbs?|mph|followers|retweets|views|likes|people|years?|days?|"
    r"hours?|minutes?|mins?|seconds?|points?|times|st\b|nd\b|rd\b|th\b)",
    re.I,
)
# Said just before a run, these make it an identifier whatever it looks like.
_IDENTIFIER_CUE = re.compile(
    r"\b(?:number|no|num|account|acct|card|code|zip|postcode|pin|id|digits|last four|ssn|"
    r"phone|extension|ext|reference|ref|order|ticket|case|policy|member|routing|"
    r"ending(?: in)?|ends in)\b[\s#:.,is]*$",
    re.I,
)


@dataclass
class _Token:
    text: str
    start: int
    end: int
    hyphenated: bool = False  # touches a hyphen: "a" in "d-a-v-e" is a spelled letter

    @property
    def kind(self) -> str:
        low = self.text.lower()
        if self.text.isdigit():
            return "digits"
        if (
            len(self.text) == 1
            and self.text.isalpha()
            and (self.hyphenated or self.text not in "ai")
        ):
            return "letter"  # a lone lowercase "a" or "i" is a word
        if low in DIGIT_WORDS:
            return "digitword"
        if low in MISHEARD_DIGITS:
            return "maybe"
        if low in CONNECTORS or self.text in "-./,":
            return "glue"
        if any(c.isdigit() for c in self.text):
            return "digits"
        return "other"


class SpokenCharactersRecognizer(ScannerRecognizer):
    """Finds dictated digit runs (``GENERIC_ID``) and spelled-out words (``PERSON``)."""

    ENTITIES = ("GENERIC_ID", "PERSON")
    MIN_DIGITS = 3
    MIN_LETTERS = 2
    DIGIT_SCORE = 0.6
    QUANTITY_SCORE = 0.3
    LETTER_SCORE = 0.5

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        tokens = [
            _Token(m.group(), m.start(), m.end(), "-" in text[max(0, m.start() - 1) : m.end() + 1])
            for m in _TOKEN.finditer(text)
        ]
        results = []
        for run in _runs(tokens, text):
            result = self._classify(run, text)
            if result is not None and result.entity_type in entities:
                results.append(result)
        return results

    def _classify(self, run: list[_Token], text: str) -> RecognizerResult | None:
        digits = sum(_digit_count(t) for t in run)
        letters = sum(t.kind == "letter" for t in run)
        mixed = letters and digits and letters + digits >= self.MIN_DIGITS  # "M-K two one"
        if digits >= self.MIN_DIGITS or mixed:
            start = run[0].start - (run[0].start > 0 and text[run[0].start - 1] in "(+")
            score = self.QUANTITY_SCORE if _quantity(text, start, run=run) else self.DIGIT_SCORE
            return RecognizerResult("GENERIC_ID", start, run[-1].end, score)
        if letters >= self.MIN_LETTERS and digits == 0:
            return RecognizerResult("PERSON", run[0].start, run[-1].end, self.LETTER_SCORE)
        return None


def _quantity(text: str, start: int, *, run: list[_Token]) -> bool:
    """The run (from ``start``) is written as a year, a date, money, a measure, a countdown
    or a section of a code, and no identifier cue precedes it."""
    end = run[-1].end
    surface = text[start:end]
    before = text[max(0, start - 30) : start]
    if _IDENTIFIER_CUE.search(before):
        return False
    return bool(
        _YEAR.fullmatch(surface)
        or _DATE.fullmatch(surface)
        or _GROUPED_NUMBER.fullmatch(surface)
        or _CODE_SECTION.fullmatch(surface)
        or _countdown(run)
        or _MONEY_BEFORE.search(before)
        or _MONTH_BEFORE.search(before)
        or _UNIT_AFTER.match(text, end)
        or re.fullmatch(r"\d{1,2}\s*,\s*(?:1[89]|20)\d\d", surface)  # "22, 1964"
    )


def _countdown(run: list[_Token]) -> bool:
    """Single digits counting down one by one to one or zero: "3... 2... 1", "three two one"."""
    values = [_DIGIT_VALUES.get(t.text.lower(), -9) for t in run if t.kind != "glue"]
    return (
        len(values) >= 3
        and values[-1] in {0, 1}
        and all(a - b == 1 for a, b in itertools.pairwise(values))
    )


def _digit_count(token: _Token) -> int:
    if token.kind == "digits":
        return sum(c.isdigit() for c in token.text)
    return 1 if token.kind in {"digitword", "maybe"} else 0


def _runs(tokens: list[_Token], text: str) -> list[list[_Token]]:
    """Maximal runs of dictation tokens; glue and misheard digits only inside a run.

    Tokens join a run only when nothing but separators stands between them: "n ' t" or a
    clock time "7 : 41" is not dictation.
    """
    runs: list[list[_Token]] = []
    current: list[_Token] = []
    for token in tokens:
        joined = current and _SEPARATOR_GAP.fullmatch(text[current[-1].end : token.start])
        if current and not joined:
            runs.append(current)
            current = []
        kind = token.kind
        if kind in {"digits", "digitword", "letter"} or (kind in {"glue", "maybe"} and current):
            current.append(token)
        else:
            runs.append(current)
            current = []
    runs.append(current)
    return [trimmed for run in runs if (trimmed := _trim(run))]


def _trim(run: list[_Token]) -> list[_Token]:
    """Drop glue and misheard words at the edges of a run."""
    while run and run[-1].kind in {"glue", "maybe"}:
        run = run[:-1]
    while run and run[0].kind in {"glue", "maybe"}:
        run = run[1:]
    return run
