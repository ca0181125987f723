from __future__ import annotations

from pathlib import Path

import pytest

from components.anonymize.evaluation.datasets import NEUTRAL, GoldSpan, LabelledText, load_labelled
from components.anonymize.evaluation.scoring import DetectionScore, score_text
from components.anonymize.spans import Span
from components.core.errors import InputError
from tests.conftest import SHARED_DATA as SHARED
from tests.conftest import TEST_DATA


def test_vendored_samples_load_with_types_mapped_and_offsets_on_the_text() -> None:
    research = load_labelled(
        "presidio_research", TEST_DATA / "presidio_research" / "generated_small.sample.json"
    )
    assert len(research) == 20
    types = {g.entity_type for item in research for g in item.gold}
    assert {"PERSON_NAME", "STREET_ADDRESS", "CREDIT_CARD_NUMBER"} <= types
    assert not types & {"PERSON", "ADDRESS", "CREDIT_CARD"}  # every source name mapped
    first = research[0]  # offsets point at the span's own text, in the source's order
    assert [(first.text[g.start : g.end], g.entity_type) for g in first.gold][:2] == [
        ("Wijtze", "PERSON_NAME"),
        ("(96) 627-277", "PHONE_NUMBER"),
    ]
    wnut = load_labelled("wnut17", TEST_DATA / "wnut17" / "emerging.dev.sample.conll")
    assert len(wnut) == 30
    spans = [(item.text[g.start : g.end], g.entity_type) for item in wnut for g in item.gold]
    assert {("Redondo Beach Blvd", "LOCATION"), ("Hillary Clinton", "PERSON_NAME")} <= set(spans)
    persons = [text for text, entity_type in spans if entity_type == "PERSON_NAME"]
    assert len(persons) == 14 and all(p == p.strip() and p for p in persons)


def test_character_scores_are_label_agnostic_and_ignore_neutral_and_spaces() -> None:
    text = "Call Ann Lee on Monday at home"
    #       0123456789012345678901234567890
    item = LabelledText("t", text, (GoldSpan(5, 12, "PERSON_NAME"), GoldSpan(16, 22, NEUTRAL)))
    score = DetectionScore()
    # "Ann" caught under another type, "Monday" (neutral) predicted, "home" a false positive
    score_text(
        item,
        [Span(5, 8, "LOCATION", 1.0), Span(16, 22, "DATE", 1.0), Span(26, 30, "X", 1.0)],
        score=score,
    )
    assert (score.true_positive_chars, score.false_positive_chars, score.false_negative_chars) == (
        3,
        4,
        3,
    )
    metrics = score.to_metrics()
    assert metrics["char_recall"] == 0.5 and metrics["char_precision"] == round(3 / 7, 4)
    # 3 of 6 non-space characters < 80%: the entity is missed
    assert metrics["entity_recall_by_type"]["PERSON_NAME"] == {
        "recall": 0.0,
        "caught": 0,
        "total": 1,
    }


def test_entity_caught_at_eighty_percent_coverage() -> None:
    item = LabelledText("t", "id 1234567890", (GoldSpan(3, 13, "GENERIC_ID"),))
    score = DetectionScore()
    score_text(item, [Span(3, 11, "GENERIC_ID", 1.0)], score=score)
    assert score.to_metrics()["entity_recall"] == 1.0
    score = DetectionScore()
    score_text(item, [Span(3, 10, "GENERIC_ID", 1.0)], score=score)
    assert score.to_metrics()["entity_recall"] == 0.0


def test_jsonl_loader_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": 1, "text": "Hi Bob", "gold": [[3, 6, "PERSON_NAME"]]}\n')
    (item,) = load_labelled("jsonl", path)
    assert item.gold == (GoldSpan(3, 6, "PERSON_NAME"),) and item.text[3:6] == "Bob"
    path.write_text('{"id": 1, "text": "Hi", "gold": [[3, "PERSON_NAME"]]}\n')
    with pytest.raises(InputError, match="gold.jsonl:1: 'gold' must be a list of"):
        load_labelled("jsonl", path)
    with pytest.raises(InputError, match="unknown dataset kind"):
        load_labelled("csv", path)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is not beside the project")
def test_shared_loaders_map_types_and_offsets() -> None:
    research = load_labelled(
        "presidio_research", SHARED / "presidio_research" / "generated_small.json"
    )
    assert len(research) == 100
    types = {g.entity_type for item in research for g in item.gold}
    assert "PERSON_NAME" in types and "PERSON" not in types
    wnut = load_labelled("wnut17", SHARED / "wnut17" / "emerging.dev.conll")
    assert len(wnut) == 1009
    persons = [
        item.text[g.start : g.end]
        for item in wnut
        for g in item.gold
        if g.entity_type == "PERSON_NAME"
    ]
    assert len(persons) == 470 and all(p == p.strip() and p for p in persons)


def test_titles_are_neutral_even_when_labelled_as_a_person() -> None:
    from components.anonymize.evaluation.datasets import NEUTRAL, GoldSpan, neutral_titles

    text = "Mr. Ford met Dr. Ann Lee and Mrs."
    gold = (
        GoldSpan(0, 8, "PERSON_NAME"),
        GoldSpan(13, 24, "PERSON_NAME"),
        GoldSpan(29, 33, "PERSON_NAME"),
        GoldSpan(4, 8, NEUTRAL),
    )
    assert [(text[g.start : g.end], g.entity_type) for g in neutral_titles(text, gold)] == [
        ("Mr. ", NEUTRAL),
        ("Ford", "PERSON_NAME"),
        ("Dr. ", NEUTRAL),
        ("Ann Lee", "PERSON_NAME"),
        ("Mrs.", NEUTRAL),
        ("Ford", NEUTRAL),
    ]


def test_predicted_characters_are_broken_down_by_recognizer_and_type() -> None:
    text = "Call Ann Lee about the Boogie"
    #       01234567890123456789012345678
    item = LabelledText("t", text, (GoldSpan(5, 12, "PERSON_NAME"),))
    score = DetectionScore()
    predicted = [
        Span(5, 12, "PERSON_NAME", 0.85, "SpacyRecognizer"),
        Span(23, 29, "PERSON_NAME", 0.4, "UnfamiliarWordRecognizer"),
        Span(0, 4, "ORGANIZATION_NAME", 0.85, "SpacyRecognizer"),
    ]
    score_text(item, predicted, score=score)
    metrics = score.to_metrics()
    by_source = metrics["predicted_chars_by_source"]
    assert by_source["SpacyRecognizer"] == {
        "true_positive_chars": 6,
        "false_positive_chars": 4,
        "precision": 0.6,
        "false_positive_share": 0.4,
    }
    assert by_source["UnfamiliarWordRecognizer"]["false_positive_chars"] == 6
    assert list(by_source) == ["UnfamiliarWordRecognizer", "SpacyRecognizer"]  # largest first
    by_type = metrics["predicted_chars_by_type"]
    assert by_type["PERSON_NAME"]["false_positive_chars"] == 6
    assert by_type["ORGANIZATION_NAME"]["precision"] == 0.0
    # the breakdown names recognizers and types only: no text of the data reaches metrics
    assert "Boogie" not in str(metrics) and "Call" not in str(metrics)


def test_false_positive_sample_is_bounded_seeded_and_kept_out_of_metrics() -> None:
    items = [
        LabelledText(
            f"t{i}",
            f"word{i} and Bob{i}",
            (GoldSpan(len(f"word{i} and "), len(f"word{i} and Bob{i}"), "PERSON_NAME"),),
        )
        for i in range(50)
    ]

    def sample() -> list[str]:
        score = DetectionScore(sample_size=5)
        for item in items:
            spans = [
                Span(0, len(item.text.split()[0]), "PERSON_NAME", 0.4, "UnfamiliarWordRecognizer")
            ]
            spans.append(
                Span(item.gold[0].start, item.gold[0].end, "PERSON_NAME", 0.85, "SpacyRecognizer")
            )
            score_text(item, spans, score=score)
        assert len(score.samples) == 5
        assert all(s.source == "UnfamiliarWordRecognizer" for s in score.samples)
        assert "samples" not in score.to_metrics()
        return [s.context for s in score.samples]

    first = sample()
    assert first == sample()  # seeded: the same sample every run
    assert all(c.startswith("[[word") and "]] and Bob" in c for c in first)
    assert len({c for c in first}) == 5 and first != [f"[[word{i}]] and Bob{i}" for i in range(5)]


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("presidio_research", TEST_DATA / "presidio_research" / "generated_small.sample.json"),
        ("wnut17", TEST_DATA / "wnut17" / "emerging.dev.sample.conll"),
    ],
)
def test_a_set_splits_by_group_and_never_mixes_them(kind: str, path: Path) -> None:
    # presidio-research by template, WNUT-17 by sentence
    every = load_labelled(kind, path)
    tuning = load_labelled(kind, path, split="tuning")
    heldout = load_labelled(kind, path, split="heldout")
    assert len(tuning) + len(heldout) == len(every) and tuning and heldout
    assert not {t.group for t in tuning} & {t.group for t in heldout}


def test_only_sets_with_groups_split() -> None:
    path = TEST_DATA / "presidio_research" / "generated_small.sample.json"
    with pytest.raises(InputError, match="presidio_research and wnut17 only"):
        load_labelled("embedded", None, limit=2, split="heldout")
    with pytest.raises(InputError, match="unknown split"):
        load_labelled("presidio_research", path, split="train")
