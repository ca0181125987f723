"""Organisation names as calls mention them: after the phrases that introduce a company
("thank you for calling ...", "calling from ...", "over at ..."), and before a corporate
suffix ("... Telecom", "... and Sons", "... LLC"), in any case; and firms named after their
partners ("Stevens, Palmer and Williams", "Rodriguez-Jones") when every name is a common
surname."""

from __future__ import annotations

import re
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer
from components.anonymize.recognizers.name_gazetteer import (
    common_surnames,
    first_name_frequencies,
)
from components.core.lexicon import stop_words, zipf

INTRODUCERS = (
    "thank you for calling",
    "thanks for calling",
    "thank you for contacting",
    "you've reached",
    "you have reached",
    "calling from",
    "calling on behalf of",
    "over at",
    "i work at",
    "i work for",
    "works at",
    "works for",
    "years at",
    "here at",
    "welcome to",
)
SUFFIXES = (
    "inc",
    "llc",
    "ltd",
    "plc",
    "gmbh",
    "corp",
    "corporation",
    "co",
    "company",
    "group",
    "and sons",
    "& sons",
    "telecom",
    "energy",
    "health",
    "wireless",
    "logistics",
    "solutions",
    "systems",
    "partners",
    "holdings",
    "industries",
    "labs",
    "bank",
    "insurance",
    "consulting",
    "associates",
    "technologies",
    "software",
    "media",
    "foods",
    "motors",
    "airlines",
    "pharmaceuticals",
    "networks",
    "capital",
    "ventures",
    "enterprises",
    "communications",
)
_NAME_WORD = r"[^\W\d_][\w'’&-]*"
# Up to four name words, joined by spaces, commas, "and" or "&" ("Byrd, Cox and Hernandez").
_NAME = rf"{_NAME_WORD}(?:(?:,\s*|\s+(?:and|&)\s+|\s+){_NAME_WORD}){{0,3}}"
_AFTER_INTRODUCER = re.compile(
    r"\b(?:" + "|".join(re.escape(p) for p in INTRODUCERS) + rf")\s+(?:the\s+)?(?P<name>{_NAME})",
    re.IGNORECASE,
)
_BEFORE_SUFFIX = re.compile(
    rf"(?P<name>{_NAME_WORD}(?:[\s,-]+(?:and\s+)?{_NAME_WORD}){{0,2}}\s+"
    r"(?:" + "|".join(re.escape(s) for s in SUFFIXES) + r")\.?)(?!\w)",
    re.IGNORECASE,
)
# Firms named after their partners: "Stevens, Palmer and Williams", "Rodriguez-Jones".
_SURNAME_FIRM = re.compile(
    r"(?<![\w-])(?:[^\W\d_]+,\s+[^\W\d_]+,?\s+(?:and|&)\s+[^\W\d_]+|[^\W\d_]+-[^\W\d_]+)(?![\w-])"
)
# "with", "from", "at" introduce a company only when it is written capitalised.
_CAPITALISED_AFTER = re.compile(
    r"\b(?:with|from|at)\s+(?P<name>[A-Z][\w'’&-]*(?:(?:,\s*|\s+(?:and|&)\s+|\s+)"
    r"[A-Z][\w'’&-]*){0,3})"
)
# Words that end a company name in running speech ("... my name is", "... this is").
_STOP = re.compile(
    r"\s+(?:my|this|is|how|have|has|had|the|a|an|um|uh|so|and\s+i|i|we|you|it)\b.*", re.I | re.S
)


class OrganizationCueRecognizer(ScannerRecognizer):
    """Finds company names introduced by a phrase or ended by a suffix (``ORGANIZATION``)."""

    ENTITIES = ("ORGANIZATION",)
    SCORE = 0.55
    MAX_COMMON_ZIPF = 4.8  # the first word of a name is no everyday word ("the", "your")

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        if "ORGANIZATION" not in entities:
            return []
        results = []
        for pattern in (_AFTER_INTRODUCER, _CAPITALISED_AFTER):
            for match in pattern.finditer(text):
                start, end = match.span("name")
                name = _STOP.sub("", text[start:end]).rstrip(" ,.-")
                if name and self._plausible(name) and not _starts_with_first_name(name):
                    results.append(self._result(start, start + len(name)))
        for match in _SURNAME_FIRM.finditer(text):
            if all(
                w.lower() in common_surnames()
                for w in re.findall(r"[^\W\d_]+", match.group())
                if w.lower() != "and"
            ):
                results.append(self._result(match.start(), match.end()))
        for match in _BEFORE_SUFFIX.finditer(text):
            start, end = match.span("name")
            start = _trim_leading_words(text, start, end=end)
            if " " in text[start:end].strip():
                results.append(self._result(start, end))
        return results

    def _result(self, start: int, end: int) -> RecognizerResult:
        return RecognizerResult("ORGANIZATION", start, end, self.SCORE)

    def _plausible(self, name: str) -> bool:
        first = name.split()[0].strip(",").lower()
        return first not in stop_words() and zipf(first) < self.MAX_COMMON_ZIPF


def _starts_with_first_name(name: str) -> bool:
    """ "with Jerry Smith" is a person, not a company."""
    _, english = first_name_frequencies().get(name.split()[0].strip(",").lower(), (0, 0))
    return english >= FIRST_NAME_MIN_ENGLISH_FREQ


FIRST_NAME_MIN_ENGLISH_FREQ = 3
SURNAME_MAX_ZIPF = 5.0  # "wells telecom" is a company, "good health" no
NAME_LIKE_MAX_ZIPF = 3.4  # surnames are rare words; "billed", "help", "the" are not


def _trim_leading_words(text: str, start: int, *, end: int) -> int:
    """Move ``start`` past what cannot open a company name: everything up to the last
    function word ("Gina Bentley from Bond Insurance") and everyday words ("billed to")."""
    words = list(re.finditer(r"\S+", text[start:end]))
    for i in range(len(words) - 1, -1, -1):
        token = words[i].group().strip(",").lower()
        if token in stop_words() and token not in {"and", "&"}:
            words = words[i + 1 :]
            break
    for word in words:
        token = word.group().strip(",")
        if (
            token[:1].isupper()
            or zipf(token.lower()) < NAME_LIKE_MAX_ZIPF
            or (token.lower() in common_surnames() and zipf(token.lower()) < SURNAME_MAX_ZIPF)
        ):
            return start + word.start()
    return end
