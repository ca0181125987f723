"""Pattern recognizers for PI as transcripts write it: spoken emails and URLs, street
addresses, dates of birth, handles. One class (Presidio's PatternRecognizer), many rows of data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from presidio_analyzer import Pattern, PatternRecognizer

_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_NUMBER = rf"(?:\d+|{_DIGIT_WORD}(?:[\s-]+{_DIGIT_WORD})*)"
_STREET_SUFFIX = (
    r"(?:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|way|court|ct|place|pl|"
    r"circle|cir|terrace|parkway|pkwy|highway|hwy|square|trail|loop|row|alley)"
)
_UNIT = rf"(?:,?\s+(?:apt|apartment|suite|unit|floor|#)\.?\s*(?:{_NUMBER}|[a-z]\b))?"
MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_ORDINAL_WORD = (
    r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
    r"twenty[\s-](?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|thirtieth|"
    r"thirty[\s-]first)"
)
_YEAR_WORD = (
    r"(?:hundred|oh|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|"
    r"nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|one|two|three|four|five|"
    r"six|seven|eight|nine|thousand|and)"
)
_SPOKEN_YEAR = (
    rf"(?:(?:nineteen|twenty)(?:[\s-]+{_YEAR_WORD})+|two[\s-]+thousand(?:[\s-]+{_YEAR_WORD})*)"
)
_DOMAIN_WORD = r"[a-z0-9][a-z0-9-]*"
_TLD = r"(?:com|org|net|io|co|us|ca|edu|gov|info|biz|uk)"


@dataclass(frozen=True)
class TranscriptPattern:
    entity: str
    name: str
    regex: str
    score: float
    context: tuple[str, ...] = ()


PATTERNS = (
    TranscriptPattern(
        "EMAIL_ADDRESS",
        "spoken email",
        rf"\b[a-z0-9._]+(?:\s+(?:dot|underscore)\s+[a-z0-9]+)*(?:\s+{_DIGIT_WORD})*"
        rf"\s+at\s+{_DOMAIN_WORD}(?:\s+dot\s+{_DOMAIN_WORD})*\s+dot\s+{_TLD}\b",
        0.7,
    ),
    TranscriptPattern(
        "URL",
        "spoken url",
        rf"\b(?:www\s+dot\s+)?{_DOMAIN_WORD}(?:\s+dot\s+{_DOMAIN_WORD})*\s+dot\s+{_TLD}"
        rf"(?:\s+slash\s+[a-z0-9-]+)*\b",
        0.6,
    ),
    TranscriptPattern(
        "STREET_ADDRESS",
        "street address",
        rf"\b{_NUMBER}\s+(?:[a-z]+\s+){{1,3}}{_STREET_SUFFIX}\b\.?{_UNIT}",
        0.6,
        ("address", "live", "ship", "mail", "street", "moving"),
    ),
    TranscriptPattern(
        "STREET_ADDRESS",
        "apartment or suite",
        r"\b(?:apt|apartment|suite|ste|unit)\.?\s*#?\d{1,5}[a-z]?\b",
        0.5,
    ),
    TranscriptPattern(
        "STREET_ADDRESS",
        "post office box",
        r"\bp\.?\s?o\.?\s+box\s+\d{1,6}\b",
        0.6,
    ),
    TranscriptPattern(
        "STREET_ADDRESS",
        "US military address",
        r"\b(?:(?:psc|unit|cmr)\s+\d{3,5},?\s+box\s+\d{3,5}|(?:uss|usns|usnv)\s+[a-z]+)"
        r"[\s,]+(?:apo|fpo|dpo)\s+(?:aa|ae|ap)\s+\d{5}\b",
        0.7,
    ),
    TranscriptPattern(
        "DATE_OF_BIRTH",
        "month-name date with year",
        rf"\b(?:{MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?"
        rf"\s+(?:of\s+)?{MONTH},?\s+\d{{4}})\b",
        0.5,
        ("born", "birth", "dob", "birthday"),
    ),
    TranscriptPattern(
        "DATE_OF_BIRTH",
        "numeric date",
        r"\b\d{1,2}[/.-]\d{1,2}[/.-](?:19|20)\d{2}\b",
        0.5,
        ("born", "birth", "dob", "birthday"),
    ),
    TranscriptPattern(
        "DATE_OF_BIRTH",
        "spoken date",
        rf"\b(?:(?:the\s+)?{_ORDINAL_WORD}\s+of\s+{MONTH}|{MONTH}\s+(?:the\s+)?{_ORDINAL_WORD})"
        rf",?\s+{_SPOKEN_YEAR}\b",
        0.5,
        ("born", "birth", "dob", "birthday"),
    ),
    TranscriptPattern(
        "USER_NAME",
        "handle with digits",
        r"\b[a-z][a-z._]{2,}\d{1,4}\b",
        0.4,
        ("username", "user", "handle", "login", "account", "id"),
    ),
    TranscriptPattern(
        "USER_NAME",
        "at-handle",  # chat and social posts: "@jlawson", "RT @papalote415"
        r"(?<![\w@.])@[A-Za-z0-9_]{2,30}\b",
        0.6,
    ),
    TranscriptPattern(
        "USER_NAME",
        "handle with underscore or dot",
        rf"\b[a-z]+[._][a-z]+\d*\b(?!\s*(?:@|at\s))(?<!\.{_TLD})",
        0.3,
        ("username", "user", "handle", "login"),
    ),
)


def transcript_pattern_recognizers() -> list[Any]:
    """One Presidio PatternRecognizer per entity, holding that entity's rows of PATTERNS."""
    by_entity: dict[str, list[TranscriptPattern]] = {}
    for row in PATTERNS:
        by_entity.setdefault(row.entity, []).append(row)
    return [
        PatternRecognizer(
            supported_entity=entity,
            name=f"Transcript{entity.title().replace('_', '')}Recognizer",
            patterns=[Pattern(row.name, row.regex, row.score) for row in rows],
            context=sorted({word for row in rows for word in row.context}),
        )
        for entity, rows in by_entity.items()
    ]
