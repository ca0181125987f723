"""Names that spaCy's NER misses: lowercase (ASR, chat) and rare capitalized first names.

spaCy's small English model finds few lowercase names. This recognizer looks each word up
in a first-name gazetteer (gender-guesser's ~45,000 names with their frequency per country)
and weighs how strongly it is a name against how common it is as an English word
(wordfreq's Zipf frequency): ``amy``, ``hubert`` and ``john`` are names, ``will``, ``may``
and ``hope`` are words unless the context says otherwise. Context cues ("my name is",
"hey", "thanks") mark the next word as a name even outside the gazetteer, and a rare word
right after a name is taken as its surname ("amy schumer"), and so is one of the 1,000
most common US surnames, however common a word it is ("jane bell", "todd little").
With an English dictionary, a gazetteer name that is no dictionary word ("kenny",
"chloe", "diego") is a name even when the gazetteer rates it rare or it is fairly common
in text, and so is such a word after a first name ("jake pouler"); a title-case word
after a title-case first name is its surname ("Sherlock Holmes"). Name particles and
stage prefixes join the name that follows them ("De Tailler", "DJ Khaled", "lil wayne"),
and a title-case word after a stage prefix is a name ("DJ Switch").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from components.anonymize.spans import Span
from components.core.lexicon import (
    SENTENCE_START,
    Dictionary,
    stop_words,
    title_case,
    zipf,
)

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
CUE_BEFORE = (
    "my name is",
    "name's",
    "i'm",
    "i am",
    "this is",
    "hi",
    "hey",
    "hello",
    "thanks",
    "thank you",
    "dear",
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "call me",
    "named",
    "ask for",
    "speak to",
    "speaking with",
    "talk to",
    "love you",
    "congrats",
    "bye",
)
_CUE = re.compile(r"(?:^|\W)(?:" + "|".join(re.escape(c) for c in CUE_BEFORE) + r")[\s,.]*$", re.I)
# After these, any word but a stop word is a name: "my last name is actually Fox".
_NAMING_CUE = re.compile(
    r"(?:^|\W)(?:(?:(?:first|last|middle|family)\s+name|surname)(?:\s+is|'s|\s+was)?"
    r"|name(?:\s+is|'s|\s+was))(?:\s+actually|\s+just)?[\s,:]*$"
    r"|(?:^|\W)(?:named|call me)[\s,:]*$",
    re.I,
)
_FILLERS = frozenset({"actually", "just", "uh", "um", "er", "like", "spelled", "also"})
_VOCATIVE_BEFORE = re.compile(r",\s*$")  # "Where are my keys, Summer?"
_VOCATIVE_AFTER = re.compile(r"\s*(?:[.?!]|$)")
# Words that belong to the name they precede: particles and stage-name prefixes.
NAME_PREFIXES = frozenset(
    {"de", "da", "di", "del", "della", "van", "von", "der", "du", "dj", "lil", "mc", "st"}
)
_STAGE_PREFIX = re.compile(r"(?:^|\W)(?:dj|mc|lil)[ \t]+$", re.I)
_WORD_BEFORE = re.compile(r"([^\W\d_]+)[ \t]+$")
_WORD_AFTER = re.compile(r"[ \t]+([^\W\d_]+)(?![\w'’-])")


@dataclass(frozen=True)
class NamePolicy:
    """Thresholds that trade recall for precision; frequencies are gender-guesser's 1–13."""

    lowercase_min_name_freq: int = 4  # a rare word that is a name somewhere
    lowercase_max_zipf: float = 4.0
    lowercase_min_english_name_freq: int = 5  # a common English first name ...
    lowercase_max_zipf_english_name: float = 5.6  # ... unless it is a very common word
    capitalized_max_zipf: float = 5.0
    sentence_start_max_zipf: float = 4.5  # "Tanner is ..."; not "Grant access", "Mark my"
    surname_max_zipf: float = 4.0
    common_surname_max_zipf: float = 5.6  # "bell", "smith", "little" after a first name
    cue_max_zipf: float = 4.0
    cue_non_dictionary_max_zipf: float = 5.0  # "thanks obama"
    naming_cue_max_zipf: float = 6.0  # "my last name is Little"
    vocative_max_zipf: float = 6.0  # "thanks, Summer."
    non_dictionary_name_max_zipf: float = 4.5  # "kenny" (4.0), "diego" (4.4); not "obama"
    non_dictionary_surname_max_zipf: float = 5.0
    title_case_surname_max_zipf: float = 5.5  # "Holmes", "Major"; not "Is", "And"
    gazetteer_score: float = 0.55
    surname_score: float = 0.5
    cue_score: float = 0.45


class NameGazetteerRecognizer(EntityRecognizer):
    """Finds person names by gazetteer, word rarity and context (``PERSON``)."""

    ENTITIES = ("PERSON",)

    def __init__(
        self, policy: NamePolicy | None = None, dictionary: Dictionary | None = None
    ) -> None:
        self.policy = policy or NamePolicy()
        self.dictionary = dictionary or Dictionary(frozenset())
        self.completer = NameCompleter(self.policy, self.dictionary)
        super().__init__(supported_entities=list(self.ENTITIES), name="NameGazetteerRecognizer")

    def load(self) -> None:
        first_name_frequencies()  # parse the gazetteer once, up front

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        if "PERSON" not in entities:
            return []
        results: list[RecognizerResult] = []
        name_end = -1  # where the last first name (not surname) ended
        name_title_case = False
        for match in _WORD.finditer(text):
            word = match.group()
            after_name = name_end >= 0 and not text[name_end : match.start()].strip()
            score = self._score(text, match)
            if after_name and score:
                results[-1].end = match.end()  # two first names: "mary ann"
                results[-1].score = max(results[-1].score, score)
            elif after_name and self.completer.surname(word, name_title_case):
                results[-1].end = match.end()  # one span for the whole name
                name_end = -1
                continue
            elif score:
                results.append(RecognizerResult("PERSON", match.start(), match.end(), score))
            else:
                name_end = -1
                continue
            name_end = match.end()
            name_title_case = title_case(word)
        return results

    def _score(self, text: str, match: re.Match[str]) -> float:
        """The word's score as a first name; 0 when it is not one."""
        word = match.group()
        low = word.lower()
        if len(low) < 2 or low in stop_words():
            return 0.0
        name_freq, english_freq = first_name_frequencies().get(low, (0, 0))
        frequency = zipf(low)
        before = text[max(0, match.start() - 20) : match.start()]
        p = self.policy
        capitalized = word[0].isupper() and not word.isupper()
        if capitalized and not SENTENCE_START.search(before):
            known_name = bool(name_freq) and frequency < p.capitalized_max_zipf
        else:  # lowercase, or capitalized only because a sentence starts
            known_name = (
                (capitalized and bool(name_freq) and frequency < p.sentence_start_max_zipf)
                or (name_freq >= p.lowercase_min_name_freq and frequency < p.lowercase_max_zipf)
                or (
                    english_freq >= p.lowercase_min_english_name_freq
                    and frequency < p.lowercase_max_zipf_english_name
                )
            )
        vocative = (
            capitalized
            and bool(name_freq)
            and _VOCATIVE_BEFORE.search(before) is not None
            and _VOCATIVE_AFTER.match(text, match.end()) is not None
        )
        if known_name or (vocative and frequency < p.vocative_max_zipf):
            return p.gazetteer_score
        if _NAMING_CUE.search(before) and frequency < p.naming_cue_max_zipf and low not in _FILLERS:
            return p.cue_score
        if (
            name_freq
            and self.dictionary
            and frequency < p.non_dictionary_name_max_zipf
            and not self.dictionary.knows(low)
        ):
            return p.gazetteer_score
        if _CUE.search(before) and (
            frequency < p.cue_max_zipf
            or (
                self.dictionary
                and frequency < p.cue_non_dictionary_max_zipf
                and not self.dictionary.knows(low)
            )
        ):
            return p.cue_score
        if _STAGE_PREFIX.search(before) and title_case(word):
            return p.cue_score  # "DJ Switch"; the completer joins the prefix
        return 0.0


class NameCompleter:
    """Grows a detected name over the words that belong to it, whoever detected it: a
    title-case surname after a title-case name ("Busta Rhymes") and a particle or
    stage-name prefix before it ("De Tailler", "DJ Khaled")."""

    MAX_SURNAMES = 2

    def __init__(self, policy: NamePolicy, dictionary: Dictionary) -> None:
        self.policy = policy
        self.dictionary = dictionary

    def surname(self, word: str, after_title_case: bool) -> bool:
        """True when ``word``, right after a first name, is taken as its surname."""
        low = word.lower()
        if len(low) < 2 or low in stop_words():
            return False
        frequency = zipf(low)
        p = self.policy
        return (
            frequency < p.surname_max_zipf
            or (low in common_surnames() and frequency < p.common_surname_max_zipf)
            or self.title_case_surname(word, after_title_case)
            or (
                bool(self.dictionary)
                and frequency < p.non_dictionary_surname_max_zipf
                and not self.dictionary.knows(low)
            )
        )

    def title_case_surname(self, word: str, after_title_case: bool) -> bool:
        """ "Holmes" after "Sherlock": title case after title case, not a common word."""
        low = word.lower()
        return (
            after_title_case
            and title_case(word)
            and low not in stop_words()
            and zipf(low) < self.policy.title_case_surname_max_zipf
        )

    def complete(self, text: str, spans: list[Span]) -> list[Span]:
        """``spans`` (sorted, not overlapping) with each person name grown over its
        prefix and surnames, never into a neighbouring span."""
        completed: list[Span] = []
        for i, span in enumerate(spans):
            if span.entity_type != "PERSON_NAME":
                completed.append(span)
                continue
            floor = completed[-1].end if completed else 0
            ceiling = spans[i + 1].start if i + 1 < len(spans) else len(text)
            start, end = span.start, span.end
            prefix = _WORD_BEFORE.search(text, max(floor, start - 20), start)
            if prefix and prefix.group(1).lower() in NAME_PREFIXES:
                start = prefix.start(1)
            words = _WORD.findall(text, span.start, span.end)
            name_title_case = bool(words) and title_case(words[-1])
            for _ in range(self.MAX_SURNAMES):
                following = _WORD_AFTER.match(text, end, ceiling)
                surname = following.group(1) if following else ""
                if not self.title_case_surname(surname, name_title_case):
                    break
                end = following.end()  # type: ignore[union-attr]  # surname implies a match
            completed.append(replace(span, start=start, end=end))
        return completed


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


# A name given in English at least this often (gender-guesser's 1-13) counts as a first name
# after "I'm" or "this is" ("I'm Bill", not "I'm starving": components/anonymize/evidence.py).
ENGLISH_FIRST_NAME_MIN_FREQ = 3


@functools.lru_cache(maxsize=1)
def english_first_names() -> frozenset[str]:
    """First names (lowercase) given in Britain, Ireland or the USA."""
    return frozenset(
        name
        for name, (_, english) in first_name_frequencies().items()
        if english >= ENGLISH_FIRST_NAME_MIN_FREQ
    )
