"""English word knowledge shared by the recognizers: how common a word is, and stop words."""

from __future__ import annotations

import functools
import re
from collections.abc import Set

# What comes before a sentence's first word: capitals there say nothing about names.
SENTENCE_START = re.compile(r"(?:^|[.!?:\n]\s*|[\"“(]\s*)$")

# Words whose period is part of them: titles, company forms, street and unit words, and
# the like ("Ltd.", "Co.", "St.", "Apt."). Lowercase, without the period; not the everyday
# words that end sentences too ("no", "al").
ABBREVIATIONS = frozenset(
    {
        *("mr", "mrs", "ms", "mx", "dr", "prof", "rev", "hon", "jr", "sr", "sen", "rep", "gov"),
        *("gen", "col", "capt", "lt", "sgt", "messrs", "mme", "mlle"),
        *("inc", "ltd", "co", "corp", "llc", "plc", "bros", "assn", "dept", "intl", "mfg"),
        *("st", "ave", "av", "rd", "blvd", "dr", "ln", "ct", "pl", "sq", "hwy", "pkwy", "cir"),
        *("ter", "trl", "mt", "ft", "pt", "ul", "bd", "apt", "ste", "fl", "rm", "bldg"),
        *("vs", "etc", "approx", "ext", "tel", "jan", "feb", "mar", "apr", "jun"),
        *("jul", "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tue", "wed", "thu", "fri"),
    }
)
# The word before a period: a run of letters, or letters joined by periods ("U.S", "a.m").
_WORD_BEFORE_PERIOD = re.compile(r"(?:(?<![^\W\d_])[^\W\d_](?:\.[^\W\d_])+|[^\W\d_]+)$")
SENTENCE_PUNCTUATION = ".!?"
_SPELLED_BEFORE = re.compile(r"(?:(?:^|\s)[^\W_]\s+|[^\W_]-)$")


def ends_abbreviation(text: str, period: int) -> bool:
    """Whether the period at ``text[period]`` belongs to the word before it: a listed
    abbreviation ("Co.", "St."), an initial ("John F.") or letters joined by periods
    ("U.S.", "a.m.")."""
    # a window before the period: the longest abbreviation is much shorter
    window = text[max(0, period - 32) : period]
    word = _WORD_BEFORE_PERIOD.search(window)
    if not word:
        return False
    letters = word.group()
    if len(letters) == 1:  # an initial, unless the last letter of a spelled run ("Z E.")
        return not _SPELLED_BEFORE.search(window, 0, word.start())
    return "." in letters or letters.lower() in ABBREVIATIONS


def ends_sentence(text: str, index: int) -> bool:
    """Whether the ``.``, ``?`` or ``!`` at ``text[index]`` ends a sentence and a new one
    starts after it on the same line: a capital follows after spaces, the marks follow a
    word ("Boston. Is", "really?! No"), and a period is neither an abbreviation's (listed,
    or a short rare capitalised word: "Avda.", "Proc.") nor part of an ellipsis (a pause,
    "Mark... Kowalski"). A period inside a token ("acme.com", "3.5") ends nothing, nor do
    marks that open a line ("\n??? Apt. 018") or end one (an address's "Str." line)."""
    if text[index] not in SENTENCE_PUNCTUATION:
        return False
    after = _NEXT_ON_LINE.match(text, index + 1)
    if not after or not after.group(1).isupper():
        return False
    run = index  # the first of the marks that end here
    while run > 0 and text[run - 1] in ".!?…":
        run -= 1
    if run == 0 or not (text[run - 1].isalnum() or text[run - 1] in _CLOSING_MARKS):
        return False
    if text[index] != ".":
        return True
    return (
        run == index and not ends_abbreviation(text, index) and not _abbreviation_like(text, index)
    )


def _abbreviation_like(text: str, period: int) -> bool:
    """A short, rare, capitalised word before a period: an abbreviation this list lacks
    ("Avda.", "Ctra.", "Λεωφ."), not a sentence's last word ("Boston.", "Ohio.")."""
    word = _WORD_BEFORE_PERIOD.search(text[max(0, period - 32) : period])
    if not word or "." in word.group():
        return False
    letters = word.group()
    return (
        len(letters) <= ABBREVIATION_LIKE_LETTERS
        and letters[0].isupper()
        and zipf(letters.lower()) < ABBREVIATION_LIKE_ZIPF
    )


ABBREVIATION_LIKE_LETTERS = 4
ABBREVIATION_LIKE_ZIPF = 3.3  # "Str" 3.3, "Proc" 3.2, "Avda" 0; "Reno" 3.5, "Ohio" 4.6
_NEXT_ON_LINE = re.compile(r"[ \t]+(\S)")
_CLOSING_MARKS = frozenset(")]\"'”’")


def title_case(word: str) -> bool:
    """ "Holmes", not "holmes", "HOLMES" or "McDonald"."""
    return word[:1].isupper() and word[1:].islower()


@functools.lru_cache(maxsize=200_000)
def zipf(word: str) -> float:
    """wordfreq's Zipf frequency of ``word`` in English (0 for unknown, ~7.7 for "the")."""
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


@functools.lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """spaCy's English stop words."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


@functools.lru_cache(maxsize=1)
def known_names() -> frozenset[str]:
    """Lowercase first names of Faker's English-speaking locales and the US Census surnames."""
    import importlib

    names: set[str] = set()
    for locale in ("en_US", "en_GB", "en_CA", "en_AU", "en_IE", "en_IN", "en_NZ"):
        try:
            module = importlib.import_module(f"faker.providers.person.{locale}")
        except ImportError:
            continue
        provider = module.Provider
        for attribute in ("first_names", "first_names_male", "first_names_female", "last_names"):
            values = getattr(provider, attribute, ())
            names.update(str(name).lower() for name in values)
    return frozenset(names)


_INFLECTIONS = (
    ("'s", ""),
    ("’s", ""),
    ("s", ""),
    ("es", ""),
    ("ies", "y"),
    ("ed", ""),
    ("ed", "e"),
    ("ing", ""),
    ("ing", "e"),
    ("ly", ""),
    ("er", ""),
    ("est", ""),
    ("ness", ""),
    ("ful", ""),
)


class Dictionary:
    """An English dictionary (a set of lemmas) that also knows simple inflections."""

    def __init__(self, lemmas: Set[str]) -> None:
        self._lemmas = lemmas

    def __bool__(self) -> bool:
        return bool(self._lemmas)

    def knows(self, low: str) -> bool:
        """True when lowercase ``low`` or its stem ("parties" → "party") is a lemma."""
        if low in self._lemmas:
            return True
        return any(
            low.endswith(suffix) and low[: -len(suffix)] + stem in self._lemmas
            for suffix, stem in _INFLECTIONS
        )
