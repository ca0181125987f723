"""The speech-like view of labelled text keeps each gold span on what its value became."""

from __future__ import annotations

from components.anonymize.evaluation.datasets import GoldSpan, LabelledText
from components.anonymize.evaluation.speechlike import speech_like


def spans(item: LabelledText) -> list[tuple[str, str]]:
    return [(item.text[g.start : g.end], g.entity_type) for g in item.gold]


def test_a_sentence_is_said_as_a_recognizer_writes_it() -> None:
    text = "Call Jane Doe at 415-555-0199 or jane.doe@example.com, thanks!"
    gold = (
        GoldSpan(5, 13, "PERSON_NAME"),
        GoldSpan(17, 29, "PHONE_NUMBER"),
        GoldSpan(33, 53, "EMAIL_ADDRESS"),
    )
    said = speech_like(LabelledText("t1", text, gold), seed=1)
    assert said.text == said.text.lower() and not set(",!-@") & set(said.text)
    assert spans(said) == [
        ("jane doe", "PERSON_NAME"),
        ("four one five five five five zero one nine nine", "PHONE_NUMBER"),
        ("jane dot doe at example dot com", "EMAIL_ADDRESS"),
    ]
    assert said.text.endswith("thanks")


def test_fillers_go_between_words_never_inside_a_value_and_the_view_is_repeatable() -> None:
    text = " ".join(["I think the account of Maria Gonzalez was closed last week"] * 20)
    gold = tuple(
        GoldSpan(i, i + len("Maria Gonzalez"), "PERSON_NAME")
        for i in range(len(text))
        if text.startswith("Maria Gonzalez", i)
    )
    said = speech_like(LabelledText("t2", text, gold), seed=3)
    assert {"uh", "um"} & set(said.text.split())  # 20 sentences: some fillers
    assert set(spans(said)) == {("maria gonzalez", "PERSON_NAME")} and len(said.gold) == 20
    assert speech_like(LabelledText("t2", text, gold), seed=3) == said
