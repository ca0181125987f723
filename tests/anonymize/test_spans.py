"""Span edges: one rule for every detector's spans (what is the item, what is the text
around it)."""

from __future__ import annotations

import pytest

from components.anonymize.spans import Span, edge_trimmed, trim_edges
from components.core.lexicon import ends_abbreviation, ends_sentence


@pytest.mark.parametrize(
    ("text", "found", "item"),
    [
        ("from Acme Insurance. My policy", "Acme Insurance.", "Acme Insurance"),
        ("billed to Gonzalez LLC.", "Gonzalez LLC.", "Gonzalez LLC"),
        # an abbreviation's period stays while the sentence goes on, and is the
        # sentence's before the next one
        ("we bank with Acme Co. and they", "Acme Co.", "Acme Co."),
        ("Acme Co., Inc. is", "Acme Co.,", "Acme Co."),
        ("we bank with Acme Co. They", "Acme Co.", "Acme Co"),
        ("at 45 Elm St. Is that right?", "45 Elm St.", "45 Elm St"),
        ("the U.S. and", "the U.S.", "the U.S."),
        # never past a sentence's end; an abbreviation or an ellipsis ends none
        ("12 Oak Street, Boston. Can you", "12 Oak Street, Boston. Can", "12 Oak Street, Boston"),
        ("is INC994551. A new card", "INC994551. A", "INC994551"),
        ("Oak Street, St. Louis, MO.", "Oak Street, St. Louis, MO.", "Oak Street, St. Louis, MO"),
        ("I'm Mark... Kowalski", "Mark... Kowalski", "Mark... Kowalski"),
        ("Yes! Bob here", "Yes! Bob", "Yes"),
        # whitespace, clause punctuation, quotes, unmatched or enclosing brackets
        ("at https://x.com/a, but", "https://x.com/a,", "https://x.com/a"),
        ("send to:\n  Jane Doe\n", ":\n  Jane Doe\n", "Jane Doe"),
        ('he said "Acme" twice', '"Acme"', "Acme"),
        ("it's 'Chris' ok", "'Chris'", "Chris"),
        ("James' car", "James'", "James'"),
        ("call (212) 555-0143.", "(212) 555-0143.", "(212) 555-0143"),
        ("my name is (John Smith) ok", "(John Smith)", "John Smith"),
        ("John Smith) ok", "John Smith)", "John Smith"),
        ("hi @handle: there", "@handle:", "@handle"),
        ("the ... end", "...", ""),
    ],
)
def test_an_item_without_the_text_around_it(text: str, found: str, item: str) -> None:
    start = text.index(found)
    new_start, new_end = trim_edges(text, start, start + len(found))
    assert text[new_start:new_end] == item
    assert trim_edges(text, new_start, new_end) == (new_start, new_end)  # idempotent


def test_edge_trimmed_keeps_each_span_its_type_and_source_and_drops_empty_ones() -> None:
    text = "Call Acme Insurance. Or ... now"
    spans = [Span(5, 20, "ORGANIZATION_NAME", 0.6, "cue"), Span(24, 27, "PERSON_NAME", 0.9, "x")]
    assert edge_trimmed(text, spans) == [Span(5, 19, "ORGANIZATION_NAME", 0.6, "cue")]
    assert edge_trimmed(text, spans)[0].source == "cue"


@pytest.mark.parametrize(
    ("text", "abbreviation"),
    [
        ("Acme Co.", True),
        ("John F.", True),
        ("at 10 a.m.", True),
        ("Main St.", True),
        ("Acme Insurance.", False),
        ("x.com/login.", False),
        ("3.5.", False),
    ],
)
def test_an_abbreviation_owns_its_period(text: str, abbreviation: bool) -> None:
    assert ends_abbreviation(text, len(text) - 1) is abbreviation


@pytest.mark.parametrize(
    ("text", "index", "end"),
    [
        ("Boston. Can", 6, True),
        ("four. A", 4, True),
        ("Hi! There", 2, True),
        ("St. Louis", 2, False),
        ("Mark... Kowalski", 6, False),
        ("acme.com now", 4, False),
        ("the end.", 7, False),  # nothing follows: no sentence to end before
    ],
)
def test_a_sentence_ends_where_another_follows(text: str, index: int, end: bool) -> None:
    assert ends_sentence(text, index) is end
