"""Countries, US states and Canadian provinces by name (``LOCATION``).

spaCy's small model misses many place names inside address blocks and in lowercase text
("... Suite 783  Gargara  Uruguay", "she moved here from dominican republic"). The names
come from Faker's English address data; "Republic of ...", "Kingdom of ..." forms are
matched too. A lowercase name that is also an everyday word ("turkey", "china", "chad")
counts only when capitalised; a name of several words counts in any case.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer
from components.anonymize.recognizers.lexicon import zipf

EVERYDAY_ZIPF = 3.5  # a lowercase place name this common is probably the word


class PlaceGazetteerRecognizer(ScannerRecognizer):
    """Finds country, state and province names in any case (``LOCATION``)."""

    ENTITIES = ("LOCATION",)
    SCORE = 0.5

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
        if "LOCATION" not in entities:
            return []
        results = []
        for match in place_pattern().finditer(text):
            name = match.group()
            if name.islower() and " " not in name and zipf(name) >= EVERYDAY_ZIPF:
                continue
            results.append(RecognizerResult("LOCATION", match.start(), match.end(), self.SCORE))
        return results


@functools.lru_cache(maxsize=1)
def place_pattern() -> re.Pattern[str]:
    """One alternation of every place name, longest first, matched as whole words."""
    from faker.providers.address.en import Provider as WorldAddresses
    from faker.providers.address.en_CA import Provider as CanadianAddresses
    from faker.providers.address.en_US import Provider as UsAddresses

    names = {
        re.sub(r"\s*\(.*\)", "", name)
        for name in (
            *WorldAddresses.countries,
            *UsAddresses.states,
            *CanadianAddresses.provinces,
        )
    }
    alternation = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    state = (
        r"(?:(?:people's\s+|democratic\s+|federal\s+|islamic\s+)*"
        r"(?:republic|kingdom)\s+of\s+(?:the\s+)?)?"
    )
    return re.compile(rf"(?<!\w){state}(?:{alternation})(?!\w)", re.IGNORECASE)
