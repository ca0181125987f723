"""Postal addresses in any national format: a street line, then the unit, city, region,
postal code and country parts that follow it on the same line or the next ones.

A street line is a house number with one to five words and a street suffix or a second
number (``82 Maidstone Road``, ``35 Hausergasse 59``, ``55 ul. Podleśna 17``). Each
following part, after a comma or a line break, joins the address while it looks like one
(a unit, a short capitalised place name, a postal code), so multi-line blocks are whole.
Streets written name first also count: after a street word ("Via Capo le Case 143",
"rue du Président Roosevelt", "ul. Królowej Jadwigi 112") or with the street word fused
to the name ("Willem Barentszweg 177", "Grolmanstraße 25"); so do intersections ("the
corner of Ilichova 50 and Salcido Street").
"""

from __future__ import annotations

import re
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.address_words import (
    CONNECTOR,
    CONNECTORS,
    FUSED_STREET_SUFFIX,
    STREET_PREFIX,
    STREET_SUFFIX,
)
from components.anonymize.recognizers.base import ScannerRecognizer
from components.anonymize.recognizers.place_gazetteer import place_names
from components.core.lexicon import ends_sentence, zipf

_WORD = r"[^\W\d_][\w'’.-]*"
_NUMBER = r"\d{1,5}[A-Za-z]?"
STREET_LINE = re.compile(
    rf"(?<![\w-]){_NUMBER}(?:\s+{_NUMBER})?[ \t]+(?:{_WORD}[ \t]+){{0,4}}?"
    rf"(?:{_WORD}[ \t]+(?P<suffix>{STREET_SUFFIX})(?!\w)"
    rf"|{_WORD}(?:[ \t]+{_WORD}){{0,3}}[ \t]+{_NUMBER}(?!\w))",
    re.IGNORECASE,
)
_NAME_FIRST = re.compile(
    rf"(?<![\w-])(?:{_NUMBER}[ \t]+){{0,2}}{STREET_PREFIX}[ \t]+"
    rf"(?:(?:{CONNECTOR}|{_WORD})[ \t]+){{0,4}}{_WORD}(?:,?[ \t]+{_NUMBER}\.?(?!\w))?"
    rf"|(?<![\w-])(?:(?-i:[^\W\d_a-z])[\w'’.-]*[ \t]+){{0,2}}"
    rf"[^\W\d_]+{FUSED_STREET_SUFFIX}[ \t]+{_NUMBER}(?!\w)",
    re.IGNORECASE,
)
_CORNER = re.compile(
    rf"(?:the[ \t]+)?corner[ \t]+of[ \t]+[^\n,.?!]{{2,60}}?[ \t]+and[ \t]+"
    rf"(?:{_WORD}[ \t]+){{0,3}}{STREET_SUFFIX}(?!\w)",
    re.IGNORECASE,
)
_UNIT = re.compile(
    r"(?:apt|apartment|suite|ste|unit|box|p\.?\s?o\.?\s+box|floor|fl|room|#)\.?\s*[\w-]+"
    r"(?:\s+box\s+\d+)?",
    re.IGNORECASE,
)
_PLACE = re.compile(
    rf"(?:{_WORD}(?:[ \t-]+{_WORD}){{0,5}})?(?:,?[ \t]+[A-Z]{{2,3}})?"
    r"(?:[ \t]+(?=[A-Z0-9 -]*\d)[A-Z0-9]{2,5}(?:[ -][A-Z0-9]{3,4})?)?"
)
_SEPARATOR = re.compile(
    r"[ \t]*(?:,[ \t]*\n?|\n)[ \t>*?]*|,?[ \t]+(?=(?:apt|suite|unit|ste)\b)", re.I
)
_MAX_PARTS = 4
# A one-word part this common and no known place is the next line's word ("Thanks", "Okay",
# "Hello": 4.7-5.7); cities this common are in the gazetteer ("Boston", "Denver").
EVERYDAY_WORD_ZIPF = 4.5


class AddressBlockRecognizer(ScannerRecognizer):
    """Finds street addresses with their trailing parts (``STREET_ADDRESS``)."""

    ENTITIES = ("STREET_ADDRESS",)
    SCORE = 0.6

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        if "STREET_ADDRESS" not in entities:
            return []
        results = [
            RecognizerResult("STREET_ADDRESS", m.start(), _extend(text, m.end()), self.SCORE)
            for pattern in (_CORNER, _NAME_FIRST)
            for m in pattern.finditer(text)
            if pattern is _CORNER or _numbered_or_named(m.group())
        ]
        position = 0
        while match := STREET_LINE.search(text, position):
            if not (match.group("suffix") or _named_like_a_street(match.group())):
                position = match.start() + 1
                continue
            end = _extend(text, match.end())
            results.append(RecognizerResult("STREET_ADDRESS", match.start(), end, self.SCORE))
            position = end
        return _outermost(results)


def _outermost(results: list[RecognizerResult]) -> list[RecognizerResult]:
    """Drop addresses found inside a longer one."""
    return [
        r
        for r in results
        if not any(
            o is not r
            and o.start <= r.start
            and r.end <= o.end
            and (o.end - o.start) > (r.end - r.start)
            for o in results
        )
    ]


def _extend(text: str, end: int) -> int:
    """Grow the address over the parts that follow it, while they look like address parts."""
    for _ in range(_MAX_PARTS):
        separator = _SEPARATOR.match(text, end)
        if not separator:
            break
        start = separator.end()
        unit = _UNIT.match(text, start)
        part_end = unit.end() if unit else _place_end(text, start)
        if part_end == start:
            break
        end = part_end
    return end


def _place_end(text: str, start: int) -> int:
    """End of the longest run of words at ``start`` that looks like a place ("Boise" in
    "Boise. Is that right?"), within its sentence; ``start`` when none does."""
    match = _PLACE.match(text, start)
    if not match:
        return start
    part = text[start : _sentence_end(text, start, end=match.end())]
    while part:
        if _looks_like_place(part):
            return start + len(part.rstrip(". "))
        cut = max(part.rfind(" "), part.rfind("\t"))
        part = part[:cut] if cut > 0 else ""
    return start


def _sentence_end(text: str, start: int, *, end: int) -> int:
    """``end``, or the end of the first sentence that ends in ``text[start:end]`` ("St."
    of "St. Louis" ends none)."""
    for mark in re.finditer(r"[.!?]", text[start:end]):
        if ends_sentence(text, start + mark.start()):
            return start + mark.start()
    return end


def _named_like_a_street(line: str) -> bool:
    """Without a street suffix, the name must be capitalised or a rare word ("3 kids and 2"
    is no address, "19 guipúzcoa 1268" is)."""
    words = [w for w in line.split() if w[0].isalpha()]
    return bool(words) and all(w[0].isupper() or zipf(w.lower()) < 2.5 for w in words)


def _numbered_or_named(street: str) -> bool:
    """A street written name first has a capitalised or rare name: "via Roma 5" and "rue du
    Président Roosevelt" are streets, "via email 2 times" is not."""
    words = [w for w in street.split() if w[0].isalpha()][1:]  # the words after the prefix
    words = [w for w in words if w.lower() not in CONNECTORS]
    return bool(words) and all(w[0].isupper() or zipf(w.lower()) < 3.0 for w in words)


def _looks_like_place(part: str) -> bool:
    """A place name is short, its words capitalised or rare ("sisimiut", "Oued Esseder",
    "Democratic Republic of the Congo"); a postal code has digits."""
    words = part.split()
    if not words or len(words) > 6:
        return False
    if any(c.isdigit() for c in part):
        return True
    if part.strip(" .").lower() in place_names():
        return True
    if len(words) == 1 and zipf(words[0].strip(".").lower()) >= EVERYDAY_WORD_ZIPF:
        return False  # a line of its own that says "Thanks" or "Yes"
    return all(
        w[0].isupper() or w.lower() in _PLACE_JOINERS or zipf(w.lower()) < 3.0
        for w in words
        if w[0].isalpha()
    )


_PLACE_JOINERS = frozenset({"of", "the", "and", "de", "del", "da", "do", "di", "nad", "sur"})
