"""Names that spaCy's NER misses: lowercase (ASR, chat) and rare capitalized first names.

spaCy's small English model finds few lowercase names. This recognizer looks each word up
in a first-name gazetteer (gender-guesser's ~45,000 names with their frequency per country)
and weighs how strongly it is a name against how common it is as an English word
(wordfreq's Zipf frequency): ``amy``, ``hubert`` and ``john`` are names, ``will``, ``may``
and ``hope`` are words unless the context says otherwise. Context cues ("my name is",
"hey", "thanks") mark the next word as a name even outside the gazetteer, and a rare word
right after a name is taken as its surname ("amy schumer"), and so is one of the 1,000
most common US surnames, however common a word it is ("jane bell", "todd little").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from components.anonymize.recognizers.lexicon import stop_words, zipf

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
CUE_BEFORE = (
    "my name is", "name's", "i'm", "i am", "this is", "hi", "hey", "hello", "thanks",
    "thank you", "dear", "mr", "mrs", "ms", "miss", "dr", "call me", "named", "ask for",
    "speak to", "speaking with", "talk to", "love you", "congrats", "bye",
)  # fmt: skip
_CUE = re.compile(r"(?:^|\W)(?:" + "|".join(re.escape(c) for c in CUE_BEFORE) + r")[\s,.]*$", re.I)
_SENTENCE_START = re.compile(r"(?:^|[.!?:\n]\s*|[\"“(]\s*)$")


@dataclass(frozen=True)
class NamePolicy:
    """Thresholds that trade recall for precision; frequencies are gender-guesser's 1–13."""

    lowercase_min_name_freq: int = 4  # a rare word that is a name somewhere
    lowercase_max_zipf: float = 4.0
    lowercase_min_english_name_freq: int = 5  # a common English first name ...
    lowercase_max_zipf_english_name: float = 5.6  # ... unless it is a very common word
    capitalized_max_zipf: float = 5.0
    surname_max_zipf: float = 4.0
    common_surname_max_zipf: float = 5.6  # "bell", "smith", "little" after a first name
    cue_max_zipf: float = 4.0
    gazetteer_score: float = 0.55
    surname_score: float = 0.5
    cue_score: float = 0.45


class NameGazetteerRecognizer(EntityRecognizer):
    """Finds person names by gazetteer, word rarity and context (``PERSON``)."""

    ENTITIES = ("PERSON",)

    def __init__(self, policy: NamePolicy | None = None) -> None:
        self.policy = policy or NamePolicy()
        super().__init__(supported_entities=list(self.ENTITIES), name="NameGazetteerRecognizer")

    def load(self) -> None:
        first_name_frequencies()  # parse the gazetteer once, up front

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
        if "PERSON" not in entities:
            return []
        results: list[RecognizerResult] = []
        name_end = -1  # where the last first name (not surname) ended
        for match in _WORD.finditer(text):
            after_name = name_end >= 0 and not text[name_end : match.start()].strip()
            score, is_surname = self._score(text, match, after_name)
            if not score:
                name_end = -1
                continue
            if is_surname or (results and after_name):
                results[-1].end = match.end()  # one span for the whole name
                results[-1].score = max(results[-1].score, score)
            else:
                results.append(RecognizerResult("PERSON", match.start(), match.end(), score))
            name_end = -1 if is_surname else match.end()
        return results

    def _score(self, text: str, match: re.Match[str], after_name: bool) -> tuple[float, bool]:
        """(score, whether it is a surname); score 0 when the word is not a name."""
        word = match.group()
        low = word.lower()
        if len(low) < 2 or low in stop_words():
            return 0.0, False
        name_freq, english_freq = first_name_frequencies().get(low, (0, 0))
        frequency = zipf(low)
        before = text[max(0, match.start() - 20) : match.start()]
        p = self.policy
        capitalized = word[0].isupper() and not word.isupper()
        if capitalized and not _SENTENCE_START.search(before):
            if name_freq and frequency < p.capitalized_max_zipf:
                return p.gazetteer_score, False
        elif (name_freq >= p.lowercase_min_name_freq and frequency < p.lowercase_max_zipf) or (
            english_freq >= p.lowercase_min_english_name_freq
            and frequency < p.lowercase_max_zipf_english_name
        ):
            return p.gazetteer_score, False
        if after_name and (
            frequency < p.surname_max_zipf
            or (low in common_surnames() and frequency < p.common_surname_max_zipf)
        ):
            return p.surname_score, True
        if _CUE.search(before) and frequency < p.cue_max_zipf:
            return p.cue_score, False
        return 0.0, False


@functools.lru_cache(maxsize=1)
def common_surnames() -> frozenset[str]:
    """The 1,000 most common US surnames (the Census list, as Faker ships it)."""
    from faker.providers.person.en_US import Provider as UsPeople

    return frozenset(name.lower() for name in UsPeople.last_names)


@functools.lru_cache(maxsize=1)
def first_name_frequencies() -> dict[str, tuple[int, int]]:
    """name → (highest frequency in any country, highest in Britain/Ireland/USA)."""
    data = resources.files("gender_guesser").joinpath("data/nam_dict.txt")
    frequencies: dict[str, tuple[int, int]] = {}
    with data.open(encoding="utf-8") as handle:
        for line in handle:
            if line[:1] in "#=" or len(line) < 31:
                continue
            name = line.split()[1].lower().replace("+", " ")
            values = [int(c, 16) if c.strip() else 0 for c in line.rstrip()[30:-1]]
            if not name.isalpha() or not values:
                continue
            best, english = frequencies.get(name, (0, 0))
            frequencies[name] = (max(best, *values), max(english, *values[:3]))
    return frequencies
