"""Usernames announced by a hotword: ``username jthomas``, ``my user ID is mkane``.

A hotword raises the likelihood of the first handle-shaped word within ``WINDOW``
characters after it; fillers and common words in between are skipped. A statement ends the
search at its end; a question reads on into its answer ("What username are you using? It's
mkowalski.").
"""

from __future__ import annotations

import functools
import re
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer
from components.core.lexicon import stop_words, zipf

HOTWORD = re.compile(
    r"\b(?:user[\s-]?names?|user[\s-]?ids?|log[\s-]?in(?:\s+(?:name|id))?|handle|"
    r"screen[\s-]?name|gamer[\s-]?tag|account(?:\s+name)?|sign[\s-]?in\s+name)\b",
    re.IGNORECASE,
)
_CANDIDATE = re.compile(r"(?<![\w@.])[A-Za-z0-9][A-Za-z0-9._-]{1,31}(?![\w@])")
_STATEMENT_END = re.compile(r"[.!](?:\s|$)")


class UsernameHotwordRecognizer(ScannerRecognizer):
    """Finds the handle that follows a username hotword (``USER_NAME``)."""

    ENTITIES = ("USER_NAME",)
    WINDOW = 100
    SCORE = 0.9  # an announced handle is stronger evidence than NER's guess at the word
    MAX_COMMON_ZIPF = 4.0  # a handle is not an everyday word, unless it has digits or _ .

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        if "USER_NAME" not in entities:
            return []
        results: dict[tuple[int, int], RecognizerResult] = {}
        for hotword in HOTWORD.finditer(text):
            window_end = min(len(text), hotword.end() + self.WINDOW)
            for candidate in _CANDIDATE.finditer(text, hotword.end(), window_end):
                word = candidate.group().rstrip("._-")
                if self._is_handle(word):
                    end = candidate.start() + len(word)
                    key = (candidate.start(), end)  # "account, username x": one handle
                    results[key] = RecognizerResult("USER_NAME", *key, self.SCORE)
                    break
                if _STATEMENT_END.match(text, candidate.end()):
                    break  # the announcement ended without a handle
        return list(results.values())

    def _is_handle(self, word: str) -> bool:
        low = word.lower()
        if len(low) < 3 or low in _fillers() or HOTWORD.fullmatch(low):
            return False
        if any(c.isdigit() or c in "._" for c in low):
            return True
        return zipf(low) < self.MAX_COMMON_ZIPF


@functools.lru_cache(maxsize=1)
def _fillers() -> frozenset[str]:
    return stop_words() | {"um", "uh", "okay", "yeah", "yes", "sure", "right", "it's"}
