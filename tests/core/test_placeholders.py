from __future__ import annotations

import pytest

from components.anonymize.spans import Span, resolve_overlaps
from components.core.placeholders import PlaceholderBook, entity_tokens


@pytest.mark.parametrize(
    ("surface", "tokens"),
    [
        ("Mark Kowalski", ("mark", "kowalski")),
        ("M-A-R-K", ("mark",)),
        ("m a r k", ("mark",)),
        ("O'Brien", ("o", "brien")),
        ("", ()),
    ],
)
def test_entity_tokens(surface: str, tokens: tuple[str, ...]) -> None:
    assert entity_tokens(surface) == tokens


def test_same_entity_same_number_variants_included() -> None:
    book = PlaceholderBook()
    assert book.placeholder("PERSON_NAME", "Mark Kowalski") == "[PERSON_NAME_1]"
    assert book.placeholder("PERSON_NAME", "Pam") == "[PERSON_NAME_2]"
    assert book.placeholder("PERSON_NAME", "mark") == "[PERSON_NAME_1]"
    assert book.placeholder("PERSON_NAME", "M-A-R-K") == "[PERSON_NAME_1]"
    assert book.placeholder("PERSON_NAME", "KOWALSKI") == "[PERSON_NAME_1]"
    assert book.placeholder("PERSON_NAME", "Pam Beesly") == "[PERSON_NAME_2]"  # the full name
    assert book.placeholder("PERSON_NAME", "beesly") == "[PERSON_NAME_2]"
    assert book.placeholder("EMAIL_ADDRESS", "a@b.com") == "[EMAIL_ADDRESS_1]"
    assert book.placeholder("EMAIL_ADDRESS", "c@b.com") == "[EMAIL_ADDRESS_2]"
    # a partial email is not folded into another email
    assert book.placeholder("EMAIL_ADDRESS", "b.com") == "[EMAIL_ADDRESS_3]"


def test_numbering_restarts_per_book() -> None:
    first, second = PlaceholderBook(), PlaceholderBook()
    first.placeholder("PERSON_NAME", "Ann")
    assert second.placeholder("PERSON_NAME", "Bob") == "[PERSON_NAME_1]"


def test_overlaps_resolved_longest_then_score_whatever_the_order() -> None:
    spans = [
        Span(0, 4, "PERSON_NAME", 0.9),
        Span(0, 13, "PERSON_NAME", 0.6),
        Span(20, 30, "URL", 0.5),
        Span(15, 30, "EMAIL_ADDRESS", 1.0),
        Span(40, 45, "LOCATION", 0.4),
        Span(40, 45, "PERSON_NAME", 0.8),
    ]
    expected = [
        Span(0, 13, "PERSON_NAME", 0.6),
        Span(15, 30, "EMAIL_ADDRESS", 1.0),
        Span(40, 45, "PERSON_NAME", 0.8),
    ]
    assert resolve_overlaps(spans) == expected
    assert resolve_overlaps(list(reversed(spans))) == expected
