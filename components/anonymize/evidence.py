"""Whether a span on an everyday word holds up: the evidence that makes a lowercase common
word a name, a place, an organization or a username.

Call-centre speech is full of words that are also names ("pay my bill", "mark the
account", "a traffic jam", "the ref"): a recognizer that knows "bill" as a first name or
"jam" as a place flags them, and propagation then masks the word throughout the call. So a
span whose surface is one lowercase word of everyday English (in the dictionary, and at
least ``common_min_zipf`` frequent) is kept only with evidence, from the text around it or
from the conversation:

- a model that reads the sentence says so: the transformer NER found it here
  (``evidence_sources``), and it is a known name ("this is bill"; not "hey ref");
- for a known first name or surname: a naming cue before it ("my name is", "call me",
  "this is", "i'm", "speak to") or after it ("bill speaking", "bill here"); direct
  address, a greeting or thanks before it with a comma or the sentence's end after it
  ("hi bill", "thanks mark, I have..."), a comma before it with the sentence ending after
  it ("is that you, bill?"), or a turn that opens with it and a comma ("bill, can you...");
- the same word found alone as a name, in title case, inside a sentence, somewhere in the
  conversation ("... told Bill" vouches for "bill");
- a speaker of the conversation has it in their label;
- for a username: a username cue right before it ("username is", "handle:", "logged in as").

A stop word, a month or a weekday is never any of these, whatever its case ("The", "there",
"the bill for March"). Nor is a lowercase dictionary word where English grammar puts a
common noun or an adjective, whatever else vouches for it: after an article or a
quantifier ("a baker", "into the woods", "the local vineyard", "a lakeside house"; a
proper name takes none), or an adjective after a bare "be" ("to be frank"). A username
that is one plain lowercase word ("reset", "logins") needs a username cue like an everyday
word. The engine weighs the evidence before names propagate, so only spans that hold up
spread through the call, and again after, so that a name copied onto an everyday word
("Price" met once at a sentence's start, then "your price") holds up there too.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from components.anonymize.spans import POLICY_SOURCES, Span
from components.core.lexicon import SENTENCE_START, Dictionary, stop_words, title_case, zipf

# The types a common word is mistaken for; a number, an e-mail or an ID is found by shape.
NAME_TYPES = frozenset({"PERSON_NAME", "LOCATION", "ORGANIZATION_NAME", "USER_NAME"})
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# A username written as one plain lowercase word of English ("reset", "logins": Zipf 2 or
# more) needs a username cue; one with digits or punctuation ("jdoe_84"), or no word of
# English ("mkowalski"), is shaped like one.
_PLAIN_WORD = re.compile(r"[a-z]+")
USERNAME_WORD_MIN_ZIPF = 2.0
# A model's finding vouches for an everyday word only when it is sure: rampart named "ben"
# in "I heard that ben is forming a band" at 0.98, "young" in "Welcome, young man" at 0.60
# and "destiny" in "marriage comes by destiny" at 0.87 (DialogSum's dev dialogues).
MODEL_EVIDENCE_MIN_SCORE = 0.9
# Never a name, a place, an organization or a username on their own: function words, and
# the months and weekdays ("The bill for March"), which are dates.
_NEVER_NAMES = stop_words() | {
    name.lower() for name in (*calendar.month_name, *calendar.day_name) if name
}
_NAMING_BEFORE = re.compile(
    r"(?:^|\W)(?:(?:my|his|her|the|their|your)\s+(?:first\s+|last\s+|full\s+)?name\s+is"
    r"|name's|this\s+is|it's|it\s+is|i'm|i\s+am|speak\s+(?:to|with)|talk\s+to|ask\s+for"
    r"|(?:call|called|named|name)(?:\s+(?:me|him|her|them|it))?|dear|mr|mrs|ms|miss|dr)[\s,.:]*$",
    re.I,
)
# Where a lowercase word is a common noun or an adjective: after an article or a quantifier,
# with at most one lowercase modifier between ("the local vineyard"); "this" and "that" are
# left out ("this is bill", "I heard that ben..."), and so are possessives ("my frank").
_ARTICLE_BEFORE = re.compile(
    r"(?:^|\W)(?:a|an|the|these|those|some|any|each|every|another)\s+(?P<modifier>[a-z]+\s+)?$",
    re.I,
)
_BARE_BE_BEFORE = re.compile(r"(?:^|\W)be\s+$", re.I)
_NAMING_AFTER = re.compile(r"\s+(?:speaking|here|calling)\b", re.I)
_GREETING_BEFORE = re.compile(
    r"(?:^|\W)(?:hi|hey|hello|thanks|thank\s+you|bye|goodbye|morning|evening|afternoon|"
    r"welcome|sorry|congrats|congratulations)[\s,]*$",
    re.I,
)
_COMMA_BEFORE = re.compile(r",\s*$")
_SENTENCE_ENDS_AFTER = re.compile(r"\s*(?:[.?!]|$)")
_COMMA_OR_END_AFTER = re.compile(r"\s*(?:[.?!,]|$)")
_OPENS_WITH_ADDRESS = re.compile(r"\s*,")
_USERNAME_BEFORE = re.compile(
    r"(?:(?:user\s*name|user\s*id|screen\s*name|login|log-in)(?:\s+is|'s|\s*:)?"
    r"|handle(?:\s+is|'s|\s*:)|logged\s+in\s+as|@)\s*$",
    re.I,
)


@dataclass(frozen=True)
class NameEvidence:
    """What vouches for a span on an everyday word (see the module docstring).

    Attributes:
        dictionary: the English dictionary a common word must be in.
        ordinary: its verbs, adjectives and adverbs.
        common_min_zipf: a dictionary word this frequent (wordfreq's Zipf) or more is an
            everyday word; a rarer one, or one no dictionary holds ("amy", "kenny"), needs no
            evidence.
        evidence_sources: recognizers whose finding is evidence in itself (a model that
            reads the sentence: the transformer NER).
        names: first names, surnames and places: a noun among them is a name before it
            is a word ("michael", "milwaukee"), and a cue or direct address may announce
            one (after "my name is" or "hi", "bill" and "smith" are names, "called" and
            "ref" are not).
    """

    dictionary: Dictionary
    ordinary: Dictionary
    common_min_zipf: float = 3.0
    evidence_sources: frozenset[str] = frozenset()
    names: Collection[str] = frozenset()

    def everyday_word(self, surface: str) -> bool:
        """One lowercase word of everyday English (what needs evidence to be a name): in
        the dictionary and frequent, and either a verb, adjective or adverb ("bill", "mark",
        "frank") or a noun that names no one and nowhere ("hotel"; not "michael",
        "milwaukee")."""
        word = surface.strip()
        if not _WORD.fullmatch(word) or not word.islower():
            return False
        return (
            self.dictionary.knows(word)
            and zipf(word) >= self.common_min_zipf
            and (self.ordinary.knows(word) or word not in self.names)
        )

    def keep(
        self, texts: Sequence[str], spans: Sequence[Sequence[Span]], *, speakers: str
    ) -> list[list[Span]]:
        """Each text's spans without those on stop words and on everyday words that nothing
        vouches for; ``texts`` are one conversation's, ``speakers`` its speaker labels."""
        vouched = _capitalized_names(texts, spans, evidence=self) | {
            w.lower() for w in _WORD.findall(speakers)
        }
        return [
            [s for s in found if self._holds(text, s, vouched=vouched)]
            for text, found in zip(texts, spans, strict=True)
        ]

    def _holds(self, text: str, span: Span, *, vouched: set[str]) -> bool:
        if span.entity_type not in NAME_TYPES or span.source in POLICY_SOURCES:
            return True
        surface = text[span.start : span.end].strip()
        if surface.lower() in _NEVER_NAMES or self._common_word_position(
            text, span, surface=surface
        ):
            return False
        plain_username = (
            span.entity_type == "USER_NAME"
            and _PLAIN_WORD.fullmatch(surface) is not None
            and zipf(surface) >= USERNAME_WORD_MIN_ZIPF
        )
        if not (plain_username or self.everyday_word(surface)):
            return True
        word = surface.lower()
        return (
            (  # found here, surely, and a name it can be
                span.source in self.evidence_sources
                and span.score >= MODEL_EVIDENCE_MIN_SCORE
                and word in self.names
            )
            or word in vouched
            or self._cued(text, span, word=word)
        )

    def _common_word_position(self, text: str, span: Span, *, surface: str) -> bool:
        """A lowercase dictionary word where grammar puts a common noun or an adjective."""
        if not (
            _WORD.fullmatch(surface)
            and surface.islower()
            and self.dictionary.knows(surface)
            and zipf(surface) >= self.common_min_zipf
        ):
            return False
        before = text[max(0, span.start - 40) : span.start]
        article = _ARTICLE_BEFORE.search(before)
        if article is not None:
            modifier = (article.group("modifier") or "").strip()
            return not modifier or (modifier.islower() and self.ordinary.knows(modifier))
        return _BARE_BE_BEFORE.search(before) is not None and self.ordinary.knows(surface)

    def _cued(self, text: str, span: Span, *, word: str) -> bool:
        before = text[max(0, span.start - 40) : span.start]
        after = text[span.end : span.end + 20]
        if span.entity_type == "USER_NAME":
            return _USERNAME_BEFORE.search(before) is not None
        if span.entity_type != "PERSON_NAME" or word not in self.names:
            return False
        greeted = _GREETING_BEFORE.search(before) and _COMMA_OR_END_AFTER.match(after)
        addressed = greeted or (_COMMA_BEFORE.search(before) and _SENTENCE_ENDS_AFTER.match(after))
        opens_turn = not text[: span.start].strip() and _OPENS_WITH_ADDRESS.match(after)
        return bool(
            _NAMING_BEFORE.search(before) or _NAMING_AFTER.match(after) or addressed or opens_turn
        )


def _capitalized_names(
    texts: Sequence[str], spans: Sequence[Sequence[Span]], *, evidence: NameEvidence
) -> set[str]:
    """The words (lowercase) found alone as a name, in title case, inside a sentence: the
    conversation writes them as names ("... told Bill", not "Bill" opening a sentence, nor
    "Card" in "My Master Card", the last word of a longer title-case name). Title case on
    an everyday word that is no known name ("work on Legs and forearm") is emphasis as
    often as a name: it vouches only when the transformer NER is sure of it there."""
    found: set[str] = set()
    for text, text_spans in zip(texts, spans, strict=True):
        for span in text_spans:
            if span.entity_type not in NAME_TYPES or span.source.startswith("propagated/"):
                continue
            surface = text[span.start : span.end].strip()
            before = text[max(0, span.start - 40) : span.start]
            word = surface.lower()
            if (
                not _WORD.fullmatch(surface)
                or not title_case(surface)
                or SENTENCE_START.search(before)
                or _follows_title_case_word(before)
            ):
                continue
            if evidence.everyday_word(word) and word not in evidence.names:
                sure = (
                    span.source in evidence.evidence_sources
                    and span.score >= MODEL_EVIDENCE_MIN_SCORE
                )
                if not sure:
                    continue
            found.add(word)
    return found


def _follows_title_case_word(before: str) -> bool:
    """Whether the text before a span ends with a title-case word that is not at a
    sentence's start nor an honorific ("My Master ", not "Hi ", "Mr ")."""
    match = _LAST_WORD.search(before)
    if match is None or not title_case(match.group("word")):
        return False
    return match.group("word").lower() not in _HONORIFICS and not SENTENCE_START.search(
        before[: match.start("word")]
    )


_LAST_WORD = re.compile(r"(?P<word>[^\W\d_]+)\.?\s+$")
_HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "madam", "dear"})
