"""Ages as people say and write them: ``I'm 42``, ``42 years old``, ``a 50-year-old man``,
``aged forty-two``, ``just turned 30``, ``at the age of 65``, ``42 y/o``.

Only the number is the span (``[AGE_1] years old`` keeps the sentence readable). A number
alone is an age only in these frames: ``I'm 5 minutes away`` is not one, so after ``I'm``
the number must end the clause or be followed by ``years``.
"""

from __future__ import annotations

import re
from typing import Any

from presidio_analyzer import RecognizerResult

from components.anonymize.recognizers.base import ScannerRecognizer

_UNITS = "one|two|three|four|five|six|seven|eight|nine"
_TEENS = "ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
# 1 to 120, in digits or in words ("forty-two", "forty two", "a hundred and one").
_NUMBER = (
    rf"(?:1[01]\d|120|[1-9]?\d|(?:{_TENS})(?:[\s-](?:{_UNITS}))?|{_TEENS}|{_UNITS}"
    rf"|(?:a|one)\s+hundred(?:\s+and\s+(?:{_UNITS}|{_TEENS}|{_TENS}))?)"
)
_YEARS = r"(?:years?|yrs?)"
FRAMES = (
    # "42 years old", "a 50-year-old man", "42 yrs of age", "42 y/o", "42yo"
    rf"(?P<age>{_NUMBER})(?:[\s-]+{_YEARS}[\s-]+(?:old|of\s+age)|\s*(?:y/o|yo|y\.o\.)(?!\w))",
    # "aged 42", "age 42", "at the age of 42", "turned 42", "turning forty"
    rf"\b(?:aged?|age\s+of|turn(?:ed|s|ing))\s+(?P<age>{_NUMBER})\b(?!\s*(?:%|percent|am|pm))",
    # "I'm 42.", "she is 42 and", "I am forty-two years" (the clause ends, or "years" follows)
    rf"\b(?:i'?m|i\s+am|(?:he|she|they)(?:'s|\s+is|\s+are|'re)|(?:my|his|her)\s+\w+\s+is"
    rf"|(?:i|he|she|we|they)\s+(?:was|were))\s+"
    rf"(?:only\s+|just\s+|almost\s+|nearly\s+|about\s+)?(?P<age>{_NUMBER})"
    rf"(?=\s*(?:[.,;!?)]|$|\s+(?:and|but|now|this|next|{_YEARS})\b))",
)
_FRAMES = [re.compile(frame, re.IGNORECASE) for frame in FRAMES]


class AgeRecognizer(ScannerRecognizer):
    """Finds a person's age in the frames that say it is one (``AGE``)."""

    ENTITIES = ("AGE",)
    SCORE = 0.6

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:  # noqa: PLR0917 (Presidio's signature)
        if "AGE" not in entities:
            return []
        found: dict[tuple[int, int], RecognizerResult] = {}
        for frame in _FRAMES:
            for match in frame.finditer(text):
                key = match.span("age")
                found.setdefault(key, RecognizerResult("AGE", *key, self.SCORE))
        return list(found.values())
