"""Postal addresses in any national format: a street line, then the unit, city, region,
postal code and country parts that follow it on the same line or the next ones.

A street line is a house number with one to five words and a street suffix or a second
number (``82 Maidstone Road``, ``35 Hausergasse 59``, ``55 ul. Podleśna 17``). Each
following part, after a comma or a line break, joins the address while it looks like one
(a unit, a short capitalised place name, a postal code), so multi-line blocks are whole.
"""

from __future__ import annotations

import re
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer
from components.anonymize.recognizers.lexicon import zipf

_WORD = r"[^\W\d_][\w'’.-]*"
_SUFFIX = (
    r"(?:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|way|court|ct|place|pl|"
    r"circle|cir|terrace|parkway|pkwy|highway|hwy|square|sq|trail|loop|row|alley|str|strasse|"
    r"straße|gasse|weg|vej|veien|vegen|vegur|laan|straat|plein|allee|gata|gatan|gade|rue|calle|"
    r"via|rua|avenida|ulica|ul)\.?"
)
_NUMBER = r"\d{1,5}[A-Za-z]?"
STREET_LINE = re.compile(
    rf"(?<![\w-]){_NUMBER}(?:\s+{_NUMBER})?[ \t]+(?:{_WORD}[ \t]+){{0,4}}?"
    rf"(?:{_WORD}[ \t]+(?P<suffix>{_SUFFIX})(?!\w)"
    rf"|{_WORD}(?:[ \t]+{_WORD}){{0,3}}[ \t]+{_NUMBER}(?!\w))",
    re.IGNORECASE,
)
_UNIT = re.compile(
    r"(?:apt|apartment|suite|ste|unit|box|p\.?\s?o\.?\s+box|floor|fl|room|#)\.?\s*[\w-]+"
    r"(?:\s+box\s+\d+)?",
    re.IGNORECASE,
)
_PLACE = re.compile(
    rf"(?:{_WORD}(?:[ \t-]+{_WORD}){{0,3}})?(?:,?[ \t]+[A-Z]{{2,3}})?"
    r"(?:[ \t]+(?=[A-Z0-9 -]*\d)[A-Z0-9]{2,5}(?:[ -][A-Z0-9]{3,4})?)?"
)
_SEPARATOR = re.compile(
    r"[ \t]*(?:,[ \t]*\n?|\n)[ \t>*?]*|,?[ \t]+(?=(?:apt|suite|unit|ste)\b)", re.I
)
_MAX_PARTS = 4


class AddressBlockRecognizer(ScannerRecognizer):
    """Finds street addresses with their trailing parts (``STREET_ADDRESS``)."""

    ENTITIES = ("STREET_ADDRESS",)
    SCORE = 0.6

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
        if "STREET_ADDRESS" not in entities:
            return []
        results = []
        position = 0
        while match := STREET_LINE.search(text, position):
            if not (match.group("suffix") or _named_like_a_street(match.group())):
                position = match.start() + 1
                continue
            end = _extend(text, match.end())
            results.append(RecognizerResult("STREET_ADDRESS", match.start(), end, self.SCORE))
            position = end
        return results


def _extend(text: str, end: int) -> int:
    """Grow the address over the parts that follow it, while they look like address parts."""
    for _ in range(_MAX_PARTS):
        separator = _SEPARATOR.match(text, end)
        if not separator:
            break
        start = separator.end()
        part = _UNIT.match(text, start) or _PLACE.match(text, start)
        if not part or part.end() == start or not _looks_like_place(part.group()):
            break
        end = part.end()
    return end


def _named_like_a_street(line: str) -> bool:
    """Without a street suffix, the name must be capitalised or a rare word ("3 kids and 2"
    is no address, "19 guipúzcoa 1268" is)."""
    words = [w for w in line.split() if w[0].isalpha()]
    return bool(words) and all(w[0].isupper() or zipf(w.lower()) < 2.5 for w in words)


def _looks_like_place(part: str) -> bool:
    """A place name is short and capitalised (or has digits, like a postal code)."""
    words = part.split()
    if not words or len(words) > 6:
        return False
    if any(c.isdigit() for c in part):
        return True
    return all(w[0].isupper() for w in words if w[0].isalpha())
