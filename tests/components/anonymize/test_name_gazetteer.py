from __future__ import annotations

import pytest

from components.anonymize.recognizers.name_gazetteer import (
    NameGazetteerRecognizer,
    first_name_frequencies,
)


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
