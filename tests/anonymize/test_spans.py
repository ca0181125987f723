"""Span edges: one rule for every detector's spans (what is the item, what is the text
around it)."""

from __future__ import annotations

import pytest

from components.anonymize.spans import Span, edge_trimmed, ends_with_sentence_period, trim_edges
from components.core.lexicon import ends_abbreviation, ends_sentence

_BLOCK = "48 Rue X\n??? Apt. 018\n??? Denmark 15838"  # presidio-research's address lines


@pytest.mark.parametrize(
    ("text", "found", "item"),
    [
        ("from Acme Insurance. My policy", "Acme Insurance.", "Acme Insurance"),
        # an abbreviation keeps its period (its replacement gives a sentence's back)
        ("billed to Gonzalez LLC.", "Gonzalez LLC.", "Gonzalez LLC."),
        ("we bank with Acme Co. and they", "Acme Co.", "Acme Co."),
        ("Acme Co., Inc. is", "Acme Co.,", "Acme Co."),
        ("at 45 Elm St. Is that right?", "45 Elm St.", "45 Elm St."),
        ("the U.S. and", "the U.S.", "the U.S."),
        # never past a sentence's end; an abbreviation or an ellipsis ends none
        ("12 Oak Street, Boston. Can you", "12 Oak Street, Boston. Can", "12 Oak Street, Boston"),
        ("is INC994551. A new card", "INC994551. A", "INC994551"),
        ("Oak Street, St. Louis, MO.", "Oak Street, St. Louis, MO.", "Oak Street, St. Louis, MO"),
        (
            "to 22 Avda. Alameda 46, Becerril",
            "22 Avda. Alameda 46, Becerril",
            "22 Avda. Alameda 46, Becerril",
        ),
        (
            "45 Chausseestr. 32\n Suite 772",
            "45 Chausseestr. 32\n Suite 772",
            "45 Chausseestr. 32\n Suite 772",
        ),
        ("I'm Mark... Kowalski", "Mark... Kowalski", "Mark... Kowalski"),
        ("Yes! Bob here", "Yes! Bob", "Yes"),
        # marks that open a line end no sentence
        (_BLOCK, _BLOCK, _BLOCK),
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
def test_an_item_without_the_text_around_it(text: str, found: str, *, item: str) -> None:
    start = text.index(found)
    new_start, new_end = trim_edges(text, start, end=start + len(found))
    assert text[new_start:new_end] == item
    assert trim_edges(text, new_start, end=new_end) == (new_start, new_end)  # idempotent


def test_a_later_sentence_stays_in_a_span_of_its_own_when_it_holds_digits() -> None:
    text = "It's B113. Dash 7423935. Then INC994551. A new card"
    spans = [Span(5, 24, "GENERIC_ID", 0.6, "ids"), Span(30, 42, "GENERIC_ID", 0.6, "ids")]
    found = [text[s.start : s.end] for s in edge_trimmed(text, spans)]
    assert found == ["B113", "Dash 7423935", "INC994551"]


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
        ("G O N Z A L E Z.", False),  # a spelled run's last letter
        ("G-O-N-Z-A-L-E-Z.", False),
        ("Acme Insurance.", False),
        ("x.com/login.", False),
        ("3.5.", False),
    ],
)
def test_an_abbreviation_owns_its_period(text: str, abbreviation: bool) -> None:
    assert ends_abbreviation(text, len(text) - 1) is abbreviation


@pytest.mark.parametrize(
    ("text", "found", "period"),
    [
        ("billed to Gonzalez LLC.", "Gonzalez LLC.", True),
        ("at 45 Elm St. Is that right?", "45 Elm St.", True),
        ("from Smith Ltd.\nThanks", "Smith Ltd.", True),
        ("we bank with Acme Co. and they", "Acme Co.", False),
        ("Keychain Logistics Corp.. Then", "Keychain Logistics Corp.", False),  # its own
        ("from Acme Insurance", "Acme Insurance", False),
    ],
)
def test_an_abbreviation_s_period_that_ends_the_sentence(
    text: str, found: str, *, period: bool
) -> None:
    start = text.index(found)
    assert ends_with_sentence_period(text, start, end=start + len(found)) is period


@pytest.mark.parametrize(
    ("text", "index", "end"),
    [
        ("Boston. Can", 6, True),
        ("four. A", 4, True),
        ("Hi! There", 2, True),
        ("Really?! No", 7, True),
        ("\n??? Apt", 3, False),
        ("Boston. can", 6, False),  # no new sentence starts
        ("Boston.\nCan", 6, False),  # the line ends
        ("22 Avda. Alameda", 7, False),  # a short rare word is an abbreviation
        ("Reno. Is", 4, True),
        ("St. Louis", 2, False),
        ("Mark... Kowalski", 6, False),
        ("acme.com now", 4, False),
        ("the end.", 7, False),  # nothing follows: no sentence to end before
    ],
)
def test_a_sentence_ends_where_another_follows(text: str, index: int, *, end: bool) -> None:
    assert ends_sentence(text, index) is end
