"""The automatic residual-risk estimate: a second-opinion scan of the anonymized text.

It reads only what training will read, the anonymized corpus (turns, speakers and the
prose labels a summary or action items are written in), and looks for personal
information left in clear by methods of its own, not the anonymizer's, so the two do not
share blind spots:

- **fragments beside a placeholder**: a name-like word touching a ``[PERSON_NAME_n]``
  placeholder is the rest of a half-replaced name (``[PERSON_NAME_1] Halpert``), and an
  address-like word beside an e-mail or URL placeholder is the rest of it. These are
  partial leaks.
- **formats**: its own patterns for e-mail addresses, URLs, phone numbers, card numbers
  (Luhn-checked), SSNs, IP addresses and any other run of 4+ digits, written or spoken
  ("five five five one"), but for a number that says it is a quantity: a year ("Word
  2003", "the 1960's"), money ("$ 1050") or a count with its unit ("1000 times").
- **names in clear**: a word that Faker's first-name lists of the English-speaking locales
  or the US Census surname list hold, is rare as an English word, and is not at the start
  of a sentence; organizations by their legal suffix ("Acme Corp", "… LLC"), owned by a
  speaker when introduced with "from", "at" or "with".

Findings of one conversation are merged into distinct items by spelling variant, scored
with the same policy as the ground truth, and identified by a salted hash, never the text.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from components.core.corpus import Conversation
from components.core.lexicon import known_names, stop_words, zipf
from components.core.placeholders import NUMBERED_PLACEHOLDER
from components.risk.scoring import (
    FULL,
    PARTIAL,
    ResidualItem,
    RiskPolicy,
    merge_variants,
    variant_key,
)

_NAME_WORD = r"[A-Za-z][a-z]+(?:['’-][A-Za-z]?[a-z]+)?"
_BESIDE_PERSON = re.compile(
    rf"\[PERSON_NAME_\d+\][ \t]+({_NAME_WORD})"
    rf"|({_NAME_WORD})[ \t]+(?=\[PERSON_NAME_\d+\])"
)
_BESIDE_ADDRESS = re.compile(
    r"\[(?:EMAIL_ADDRESS|URL|DOMAIN_NAME)_\d+\]([.@][\w.-]+)|([\w.-]+[.@])\[(?:EMAIL_ADDRESS|URL)_\d+\]"
)
_SPOKEN_DIGIT = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("EMAIL_ADDRESS", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    ("EMAIL_ADDRESS", re.compile(r"\b[\w.]+ at [\w-]+ dot (?:com|org|net|edu|io|co)\b", re.I)),
    ("URL", re.compile(r"\b(?:https?://|www\.)\S+", re.I)),
    ("IP_ADDRESS", re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")),
    ("US_SOCIAL_SECURITY_NUMBER", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    ("CREDIT_CARD_NUMBER", re.compile(r"\b(?:\d[ -]?){12,18}\d\b")),
    ("PHONE_NUMBER", re.compile(r"(?:\+?\d{1,2}[ .-]?)?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b")),
    ("GENERIC_ID", re.compile(r"\b\d{4,}\b")),
    ("GENERIC_ID", re.compile(rf"\b{_SPOKEN_DIGIT}(?:[ ,-]+{_SPOKEN_DIGIT}){{3,}}\b", re.I)),
)
# What makes a run of digits a quantity, not an identifier (the anonymizer may leave these
# in clear at its balanced operating point): a year, money, or a count with its unit.
_YEAR = re.compile(r"(?:1[89]|20)\d\d(?:['’]?s)?")
_MONEY_BEFORE = re.compile(r"[$€£¥]\s*$")
_UNIT_AFTER = re.compile(
    r"\s*(?:%|percent|times|miles?|km|kilometers?|meters?|feet|dollars?|euros?|pounds?|yuan|"
    r"yen|people|years?|days?|hours?|words?|pages?|calories|copies|units|pieces)\b",
    re.I,
)
_BIRTH_BEFORE = re.compile(r"\b(?:born|birth|dob)\b[^.?!]{0,20}$", re.I)
_ORG = re.compile(
    r"\b((?:[A-Z][\w&'-]*[ \t]+){1,3}(?:Inc|LLC|Ltd|Corp|Corporation|Group|Partners|"
    r"Holdings|Solutions|Systems|Labs|Bank|Insurance)\b\.?)"
)
# A placeholder glued to letters or digits: detection cut a word, the rest is in clear
# ("[URL_1]iffith", "[PERSON_NAME_3]38", "Miller-[PERSON_NAME_3]").
_GLUED = re.compile(
    r"\[([A-Z][A-Z0-9_]*?)_\d+\](\w(?:[\w.-]*\w)?)|(\w[\w.]*-?)\[([A-Z][A-Z0-9_]*?)_\d+\]"
)
_SECTOR = (
    r"analytics|financial|finance|energy|home goods|goods|outfitters|logistics|solutions|"
    r"systems|software|consulting|partners|insurance|bank|group|labs|media|foods|health|"
    r"healthcare|motors|realty|holdings|industries|technologies|tech|enterprises|ventures|"
    r"capital|associates|services|supply|manufacturing|pharma|telecom|airlines"
)
# A company named after a person or a word, then its trade ("hernandez analytics",
# "[LOCATION_1] outfitters"), in any case.
_SECTOR_ORG = re.compile(
    rf"(?:\[[A-Z_]+_\d+\]|\b[A-Za-z][a-z'’-]+)(?:[ \t]+[A-Za-z][a-z]+)?[ \t]+(?:{_SECTOR})\b", re.I
)
_OWNED_BEFORE = re.compile(
    r"\b(?:from|at|with|for|calling|called|work for|works for)[ \t,]+(?:um[ \t,]+|uh[ \t,]+)?$",
    re.I,
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:\]]\s*|[\"“(]\s*)$")
_WORD = re.compile(r"[A-Za-z][a-z]+")
_NAME_MAX_ZIPF = 4.0
# Labels written as prose, which can name people; the others (purpose, outcome) are codes.
PROSE_LABELS = ("summary", "action_items")
_KNOWN_NAME_MAX_ZIPF = 4.5  # a known name right beside a name placeholder ("adams")


@dataclass(frozen=True)
class Finding:
    """One suspected leak, located in the anonymized text (in memory only)."""

    turn: int
    field: str
    start: int
    end: int
    entity_type: str
    status: str


def scan_text(text: str) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, info type, status) of every suspected leak in one anonymized text: each
    pass in turn, a later pass skipping what an earlier one took."""
    taken: list[tuple[int, int]] = []
    for match in _GLUED.finditer(text):
        info_type, group = (match.group(1), 2) if match.group(2) else (match.group(4), 3)
        start, end = match.span(group)
        if len(variant_key(match.group(group))) >= 2:
            taken.append((start, end))
            yield start, end, info_type, PARTIAL
    yield from _sector_organizations(text, taken)
    for match in _BESIDE_PERSON.finditer(text):
        group = 1 if match.group(1) else 2
        start, end = match.span(group)
        if all(_name_like(word) for word in _WORD.findall(match.group(group))):
            taken.append((start, end))
            yield start, end, "PERSON_NAME", PARTIAL
    for match in _BESIDE_ADDRESS.finditer(text):
        group = 1 if match.group(1) else 2
        start, end = match.span(group)
        if len(match.group(group)) > 3:
            taken.append((start, end))
            yield start, end, "EMAIL_ADDRESS", PARTIAL
    yield from _formatted_values(text, taken)
    for match in _ORG.finditer(text):
        start, end = match.span(1)
        if _free(taken, start, end=end):
            taken.append((start, end))
            owned = _OWNED_BEFORE.search(text[max(0, start - 8) : start])
            yield start, end, "ORGANIZATION_NAME_SPEAKER" if owned else "ORGANIZATION_NAME", FULL
    for match in _WORD.finditer(text):
        start, end = match.span()
        word = match.group()
        if not _free(taken, start, end=end) or _SENTENCE_START.search(
            text[max(0, start - 3) : start]
        ):
            continue
        if word[0].isupper() and word.lower() in known_names() and _uncommon(word):
            taken.append((start, end))
            yield start, end, "PERSON_NAME", FULL


def _free(taken: list[tuple[int, int]], start: int, *, end: int) -> bool:
    return all(end <= a or start >= b for a, b in taken)


def _sector_organizations(
    text: str, taken: list[tuple[int, int]]
) -> Iterator[tuple[int, int, str, str]]:
    """Organizations named by their sector word ("hernandez analytics"), whole or beside a
    placeholder; taken spans are added to ``taken``."""
    for match in _SECTOR_ORG.finditer(text):
        start, end = match.span()
        first = _WORD.match(text, start)
        if first and first.group().lower() in _stop_words():  # "with hernandez analytics"
            start = text.index(" ", start) + 1
        if not _free(taken, start, end=end):
            continue
        words = _WORD.findall(text[start:end])
        if text[start] != "[" and (len(words) < 2 or not _uncommon(words[0])):
            continue  # "the analytics", "our software": a common word, not a name
        taken.append((start, end))
        status = PARTIAL if text[start] == "[" else FULL
        owned = _OWNED_BEFORE.search(text[max(0, start - 16) : start])
        yield start, end, "ORGANIZATION_NAME_SPEAKER" if owned else "ORGANIZATION_NAME", status


def _formatted_values(
    text: str, taken: list[tuple[int, int]]
) -> Iterator[tuple[int, int, str, str]]:
    """Values by their format (card numbers that pass Luhn, ids that are no quantity...)
    outside placeholders; taken spans are added to ``taken``."""
    for info_type, pattern in _FORMATS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if info_type == "CREDIT_CARD_NUMBER" and not _luhn(match.group()):
                continue
            if info_type == "GENERIC_ID" and _quantity(text, start, end=end):
                continue
            if _free(taken, start, end=end) and not _inside_placeholder(text, start):
                taken.append((start, end))
                yield start, end, info_type, FULL


def scanned_texts(conversation: Conversation) -> list[tuple[int, str, str]]:
    """(turn, field, text) of every text training reads: each turn's speaker and text, then
    the prose labels (a summary names people too) as turn -1, field ``label:<key>``.
    Category labels (purpose, outcome) are codes of a fixed set, not prose, and are left out."""
    texts = [
        (index, field, text)
        for index, turn in enumerate(conversation.turns)
        for field, text in (("speaker", turn.speaker or ""), ("text", turn.text))
    ]
    for key in sorted(set(conversation.labels) & set(PROSE_LABELS)):
        value = conversation.labels[key]
        items = value if isinstance(value, list) else [value]
        texts += [(-1, f"label:{key}", item) for item in items if isinstance(item, str)]
    return texts


def scan_conversation(conversation: Conversation) -> list[Finding]:
    """Every suspected leak in an anonymized conversation's turns, speaker labels and labels."""
    return [f for f, _ in _findings_with_text(conversation)]


def suspected_leaks(conversation: Conversation) -> list[tuple[str, str, str]]:
    """(text, info type, status) of each distinct suspected item, merged by variant; the
    text stays in memory: it is what the agreement with ground truth is measured on."""
    return merge_variants(_suspected_texts(conversation))


def _findings_with_text(conversation: Conversation) -> list[tuple[Finding, str]]:
    return [
        (Finding(index, field, start, end, info_type, status), text[start:end])
        for index, field, text in scanned_texts(conversation)
        for start, end, info_type, status in scan_text(text)
    ]


def _suspected_texts(conversation: Conversation) -> list[tuple[str, str, str]]:
    return [(leaked, f.entity_type, f.status) for f, leaked in _findings_with_text(conversation)]


def estimate_items(
    conversation: Conversation, policy: RiskPolicy, *, salt: str
) -> list[ResidualItem]:
    """The conversation's suspected leaked items, scored and identified by salted hash."""
    return scored_items(
        conversation.id, _suspected_texts(conversation), policy=policy, salt=salt, source="estimate"
    )


def scored_items(
    conversation_id: str,
    found: Sequence[tuple[str, str, str]],
    *,
    policy: RiskPolicy,
    salt: str,
    source: str,
) -> list[ResidualItem]:
    """(text, info type, status) findings of one conversation as distinct scored items,
    spelling variants merged, each identified by a salted hash instead of its text."""
    return [
        ResidualItem(
            conversation_id,
            item_digest(text, salt),
            entity_type,
            status,
            policy.score(entity_type, status),
            source,
        )
        for text, entity_type, status in merge_variants(found)
    ]


@dataclass
class Agreement:
    """How well the estimate finds what ground truth says leaked, item by item.

    A ground-truth item is found when a suspected item of the same conversation matches
    one of its leaked fragments (one normalized text contains the other); a suspected
    item is right when it matches some leaked fragment. Types are not compared.
    """

    truth_items: int = 0
    truth_found: int = 0
    suspected_items: int = 0
    suspected_right: int = 0

    def add(
        self, truth: Sequence[tuple[str, str, str]], suspected: Sequence[tuple[str, str, str]]
    ) -> None:
        """``truth``: (entity, type, leaked text) fragments; ``suspected``: (text, type,
        status) items, both of one conversation."""
        fragments: dict[str, list[str]] = {}
        for entity, _, text in truth:
            fragments.setdefault(entity, []).append(variant_key(text))
        keys = [variant_key(text) for text, _, _ in suspected]
        self.truth_items += len(fragments)
        self.truth_found += sum(
            any(_matches(f, k) for f in pieces for k in keys) for pieces in fragments.values()
        )
        self.suspected_items += len(keys)
        self.suspected_right += sum(
            any(_matches(f, k) for pieces in fragments.values() for f in pieces) for k in keys
        )

    def to_metrics(self) -> dict[str, float | int]:
        return {
            "precision": round(self.suspected_right / self.suspected_items, 4)
            if self.suspected_items
            else 1.0,
            "recall": round(self.truth_found / self.truth_items, 4) if self.truth_items else 1.0,
            "truth_items": self.truth_items,
            "suspected_items": self.suspected_items,
        }


def score_agreement(truth: Any, estimate: Any) -> dict[str, float]:
    """Conversation-level agreement of estimated risk scores with the true ones: Pearson r,
    and precision/recall of "this conversation leaked something" (two risk tables)."""
    merged = truth.merge(estimate, on="conversation_id", suffixes=("_truth", "_estimate"))
    a, b = merged["score_truth"], merged["score_estimate"]
    flagged_truth, flagged_estimate = a > 0, b > 0
    both = int((flagged_truth & flagged_estimate).sum())
    correlation = float(a.corr(b)) if a.std() > 0 and b.std() > 0 else 0.0
    return {
        "score_pearson_r": round(correlation, 4),
        "conversation_precision": round(both / max(1, int(flagged_estimate.sum())), 4),
        "conversation_recall": round(both / max(1, int(flagged_truth.sum())), 4),
    }


def _matches(fragment: str, suspected: str) -> bool:
    if len(fragment) < 2 or len(suspected) < 2:
        return fragment == suspected and bool(fragment)
    return fragment in suspected or suspected in fragment


def item_digest(text: str, salt: str) -> str:
    """A keyed hash (HMAC-SHA256, the salt as key) that identifies a leaked item without
    holding its text; see ``pi_inventory.salted_digest`` for what it protects."""
    return hmac.new(salt.encode(), variant_key(text).encode(), hashlib.sha256).hexdigest()[:16]


def _quantity(text: str, start: int, *, end: int) -> bool:
    """A digit run that says it is a year (not a birth year), money or a count."""
    before = text[max(0, start - 30) : start]
    year = _YEAR.match(text, start)
    if year and year.end() >= end and not _BIRTH_BEFORE.search(before):
        return True
    return bool(_MONEY_BEFORE.search(before) or _UNIT_AFTER.match(text, end))


def _inside_placeholder(text: str, position: int) -> bool:
    opening = text.rfind("[", 0, position)
    return (
        opening >= 0
        and text.find("]", opening) >= position
        and bool(NUMBERED_PLACEHOLDER.match(text, opening))
    )


def _luhn(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for i, digit in enumerate(reversed(digits)):
        if i % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _name_like(word: str) -> bool:
    """A capitalized rare word, or a lowercase one that is a known name."""
    if word[0].isupper():
        return _uncommon(word)
    return word in known_names() and zipf(word) < _KNOWN_NAME_MAX_ZIPF


def _stop_words() -> frozenset[str]:
    return stop_words()


def _uncommon(word: str) -> bool:
    low = word.lower()
    return low not in stop_words() and zipf(low) < _NAME_MAX_ZIPF
