"""Words that are no English word: the proper nouns every other recognizer misses.

A name the gazetteers do not know ("hangwani", "Berločnik", "Paraparaumu", "Ikerasassuaq")
and a company or place spaCy's small model misses, in any case, share one trait: they are
not in an English dictionary and rare in English text. This recognizer flags such words,
the unigram form of the surprisal signal zero-shot text sanitization uses: a word a
language model finds improbable is probably an identifier.

The dictionary is the spaCy pipeline's lemma index (WordNet's ~83,000 lemmas, with simple
inflections); rarity is wordfreq's Zipf frequency. Laughter, elongations ("sooooo") and
words shorter than three letters are never flagged. Adjacent flagged words form one span;
after a place preposition ("in", "from") the span is a ``LOCATION``, else a ``PERSON``.
"""

from __future__ import annotations

import re
from collections.abc import Set
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer
from components.anonymize.recognizers.lexicon import stop_words, zipf

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_INFLECTIONS = (
    ("'s", ""), ("’s", ""), ("s", ""), ("es", ""), ("ies", "y"), ("ed", ""), ("ed", "e"),
    ("ing", ""), ("ing", "e"), ("ly", ""), ("er", ""), ("est", ""), ("ness", ""), ("ful", ""),
)  # fmt: skip
_LAUGHTER = re.compile(r"^(?:[aeiouy]*[hk]+[aeiouy]+|l+o+l+|x+o+)+h?$")
_ELONGATED = re.compile(r"(.)\1\1")
_PLACE_BEFORE = re.compile(
    r"(?:^|\W)(?:in|from|near|visit|visiting|city of|town of|village of)[\s,]*$", re.I
)


class UnfamiliarWordRecognizer(ScannerRecognizer):
    """Finds rare words that no English dictionary holds (``PERSON`` or ``LOCATION``)."""

    ENTITIES = ("PERSON", "LOCATION")
    SCORE = 0.4
    MAX_ZIPF = 3.0  # rarer than "detour" (3.0); "bruno" (3.4) and "elba" (2.6) are names
    MIN_LENGTH = 3

    def __init__(self, vocabulary: Set[str]) -> None:
        super().__init__()
        self._vocabulary = vocabulary

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
        if "PERSON" not in entities:
            return []
        results: list[RecognizerResult] = []
        for match in _WORD.finditer(text):
            if not self.unfamiliar(match.group()):
                continue
            last = results[-1] if results else None
            if last and not text[last.end : match.start()].strip():
                last.end = match.end()  # "Cite Bain Maure" is one place
                continue
            before = text[max(0, match.start() - 20) : match.start()]
            entity = "LOCATION" if _PLACE_BEFORE.search(before) else "PERSON"
            if entity in entities:
                results.append(RecognizerResult(entity, match.start(), match.end(), self.SCORE))
        return results

    def unfamiliar(self, word: str) -> bool:
        """True when ``word`` is rare in English and in no form in the dictionary."""
        low = word.lower()
        if len(low) < self.MIN_LENGTH or low in stop_words() or zipf(low) >= self.MAX_ZIPF:
            return False
        if _ELONGATED.search(low) or _LAUGHTER.match(low):
            return False
        return not self._known(low)

    def _known(self, low: str) -> bool:
        if low in self._vocabulary:
            return True
        return any(
            low.endswith(suffix) and low[: -len(suffix)] + stem in self._vocabulary
            for suffix, stem in _INFLECTIONS
        )


def lemma_vocabulary(nlp: Any) -> frozenset[str]:
    """Every lemma in a spaCy pipeline's lookup lemmatizer index (empty when it has none)."""
    if "lemmatizer" not in nlp.component_names:
        return frozenset()
    lookups = getattr(nlp.get_pipe("lemmatizer"), "lookups", None)
    if lookups is None or not lookups.has_table("lemma_index"):
        return frozenset()
    index = lookups.get_table("lemma_index")
    return frozenset(word for pos in index for word in index[pos])
