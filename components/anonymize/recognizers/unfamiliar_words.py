"""Words shaped like proper nouns: the names every other recognizer misses.

A name the gazetteers do not know ("hangwani", "Berločnik", "Paraparaumu", "Ikerasassuaq")
and a company or place spaCy's small model misses, in any case, share one trait: they are
not in an English dictionary and rare in English text. This recognizer flags such words,
the unigram form of the surprisal signal zero-shot text sanitization uses: a word a
language model finds improbable is probably an identifier. It also flags the two shapes
that mark a proper noun in chat text even when it is a dictionary word: a rare word
written in title case inside a sentence ("the items for Leto", "a Tanner video") and a
coined word with an inner capital ("iDubbbz", "LiberalLunatics").

The dictionary is the spaCy pipeline's lemma index (WordNet's ~83,000 lemmas, with simple
inflections); rarity is wordfreq's Zipf frequency. Laughter, elongations ("sooooo", but
not a title-case "Jonyeee" inside a sentence) and words shorter than three letters are
never flagged, and neither are the words of a hashtag, an @handle, a URL or an e-mail
address (topics and links, not names; handles are ``USER_NAME`` by their own pattern).
Adjacent flagged words form one span; after a place preposition ("in", "from") the span is a
``LOCATION``, else a ``PERSON``.

The score says how much the shape adds to the rarity: a title-case word inside a sentence or
a coined word scores ``SCORE``; a word that is only rare (lowercase, all caps, or opening a
sentence), the typos and foreign words of chat as much as the lowercase names of ASR,
scores ``RARE_ONLY_SCORE``. The operating point decides which survive (``veiltune
calibrate``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from typing import Any

from presidio_analyzer import RecognizerResult
from spacy.strings import get_string_id

from components.anonymize.recognizers.base import ScannerRecognizer
from components.anonymize.spacy_models import spacy_model_source
from components.core.errors import BackendError
from components.core.lexicon import (
    SENTENCE_START,
    Dictionary,
    stop_words,
    title_case,
    zipf,
)

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_LAUGHTER = re.compile(r"^(?:[aeiouy]*[hk]+[aeiouy]+|l+o+l+|x+o+)+h?$")
_ELONGATED = re.compile(r"(.)\1\1")
_INNER_CAPITAL = re.compile(r"^[^\W\d_]*[a-z][A-Z]")
# The word is part of a hashtag, an @handle, a URL or an e-mail address.
_INSIDE_LINK_BEFORE = re.compile(r"(?:[#@][\w.]*|https?://\S*|www\.\S*|\S+\.)$")
_INSIDE_LINK_AFTER = re.compile(r"^(?:[\w]*@|\.(?:com|org|net|co|io)\b)")
_PLACE_BEFORE = re.compile(
    r"(?:^|\W)(?:in|from|near|visit|visiting|city of|town of|village of)[\s,]*$", re.I
)


class UnfamiliarWordRecognizer(ScannerRecognizer):
    """Finds rare words that no English dictionary holds (``PERSON`` or ``LOCATION``)."""

    ENTITIES = ("PERSON", "LOCATION")
    SCORE = 0.4
    RARE_ONLY_SCORE = 0.3
    MAX_ZIPF = 3.0  # rarer than "detour" (3.0); "bruno" (3.4) and "elba" (2.6) are names
    TITLE_CASE_MAX_ZIPF = 4.0  # "Leto" (3.1), "Tanner" (3.6) inside a sentence
    MIN_LENGTH = 3

    def __init__(self, dictionary: Dictionary) -> None:
        super().__init__()
        self._dictionary = dictionary

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        if "PERSON" not in entities:
            return []
        results: list[RecognizerResult] = []
        for match in _WORD.finditer(text):
            before = text[max(0, match.start() - 20) : match.start()]
            inside_sentence = SENTENCE_START.search(before) is None
            word = match.group()
            if not self.unfamiliar(word, inside_sentence) or _in_link(text, match):
                continue
            score = self.SCORE if _shaped_like_name(word, inside_sentence) else self.RARE_ONLY_SCORE
            last = results[-1] if results else None
            if last and not text[last.end : match.start()].strip():
                last.end = match.end()  # "Cite Bain Maure" is one place
                last.score = max(last.score, score)
                continue
            entity = "LOCATION" if _PLACE_BEFORE.search(before) else "PERSON"
            if entity in entities:
                results.append(RecognizerResult(entity, match.start(), match.end(), score))
        return results

    def unfamiliar(self, word: str, inside_sentence: bool = False) -> bool:
        """True when ``word`` looks like a proper noun: rare in English and in no form in
        the dictionary, or (``inside_sentence``) rare and in title case, or coined."""
        low = word.lower()
        if len(low) < self.MIN_LENGTH or low in stop_words():
            return False
        if _INNER_CAPITAL.match(word):
            return True
        frequency = zipf(low)
        if inside_sentence and title_case(word) and frequency < self.TITLE_CASE_MAX_ZIPF:
            return True
        if frequency >= self.MAX_ZIPF or _ELONGATED.search(low) or _LAUGHTER.match(low):
            return False
        return not self._dictionary.knows(low)


def _in_link(text: str, match: re.Match[str]) -> bool:
    """The word is inside a hashtag, an @handle, a URL or an e-mail address."""
    token_start = text.rfind(" ", 0, match.start()) + 1
    return bool(
        _INSIDE_LINK_BEFORE.search(text, token_start, match.start())
        or _INSIDE_LINK_AFTER.match(text[match.end() : match.end() + 5])
    )


def _shaped_like_name(word: str, inside_sentence: bool) -> bool:
    """Title case inside a sentence ("the items for Leto") or a coined inner capital."""
    return bool(_INNER_CAPITAL.match(word)) or (inside_sentence and title_case(word))


def lemma_vocabulary(
    nlp: Any, parts_of_speech: Collection[str] = (), *, irregular: bool = False
) -> frozenset[str]:
    """Every lemma in a spaCy pipeline's lookup lemmatizer index (empty when it has none),
    or those of ``parts_of_speech`` only ("noun", "verb", "adj", "adv"); with ``irregular``,
    the irregular forms of its exception table too ("caught", "hung", "better")."""
    if "lemmatizer" not in nlp.component_names:
        return frozenset()
    lookups = getattr(nlp.get_pipe("lemmatizer"), "lookups", None)
    if lookups is None or not lookups.has_table("lemma_index"):
        return frozenset()
    tables = [lookups.get_table("lemma_index")]
    if irregular and lookups.has_table("lemma_exc"):
        tables.append(lookups.get_table("lemma_exc"))
    # the tables are keyed by the hashes of "noun", "verb", "adj", "adv"
    wanted = {get_string_id(pos) for pos in parts_of_speech}
    return frozenset(
        word
        for table in tables
        for pos in table
        if not wanted or get_string_id(pos) in wanted
        for word in table[pos]
    )


@functools.lru_cache(maxsize=2)
def english_lexicon(spacy_model: str) -> tuple[Dictionary, Dictionary]:
    """The English dictionary of a spaCy model's lemma index, and its verbs, adjectives and
    adverbs alone (where a proper name is never a lemma, as "michael" is among the nouns);
    loaded once per process."""
    import spacy

    try:
        nlp = spacy.load(
            spacy_model_source(spacy_model),
            exclude=["tok2vec", "tagger", "parser", "ner", "senter"],
        )
    except (OSError, ValueError) as exc:
        raise BackendError(
            f"cannot load spaCy model {spacy_model!r} (anonymize.spacy_model): {exc}"
        ) from exc
    ordinary = lemma_vocabulary(nlp, ("verb", "adj", "adv"), irregular=True)
    return Dictionary(lemma_vocabulary(nlp, irregular=True)), Dictionary(ordinary)
