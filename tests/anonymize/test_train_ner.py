"""``veiltune train-ner``: gold spans become token labels, and fine-tuning a tiny encoder
built in the test gives a model ``anonymize.ner.model`` loads and that finds what it learned."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.anonymize.evaluation.datasets import NEUTRAL, GoldSpan, LabelledText
from components.anonymize.ner import load_token_classifier
from components.anonymize.ner_training import (
    IGNORED,
    ONNX_FILE,
    TrainSettings,
    bio_labels,
    fine_tune,
    token_labels,
)
from components.core.errors import InputError
from tests.anonymize.tiny_ner import build_tiny_ner

LABELS = bio_labels()


def _label(name: str) -> int:
    return LABELS.index(name)


def test_gold_spans_become_bio_labels_and_neutral_spans_leave_the_loss() -> None:
    text = "call alice smith at 555 0100 from boston on monday"
    gold = (
        GoldSpan(5, 16, "PERSON_NAME"),
        GoldSpan(20, 28, "PHONE_NUMBER"),
        GoldSpan(34, 40, "LOCATION"),
        GoldSpan(44, 50, NEUTRAL),
    )
    words = [(0, 4), (5, 10), (11, 16), (17, 19), (20, 23), (24, 28), (29, 33), (34, 40)]
    offsets = [(0, 0), *words, (41, 43), (44, 50), (0, 0)]
    labels = token_labels(LabelledText("t", text, gold), offsets, labels=LABELS)
    assert labels == [
        IGNORED,  # [CLS]
        _label("O"),
        _label("B-PER"),
        _label("I-PER"),
        _label("O"),
        _label("O"),  # a phone number is the pattern recognizers' job
        _label("O"),
        _label("O"),
        _label("B-LOC"),
        _label("O"),
        IGNORED,  # a date: neither taught as an entity nor as none
        IGNORED,  # [SEP]
    ]


def _texts(n: int) -> list[LabelledText]:
    shapes = [
        ("alice went to boston", [(0, 5, "PERSON_NAME"), (14, 20, "LOCATION")]),
        ("pay my bill", []),
        ("hello bob", [(6, 9, "PERSON_NAME")]),
        ("the call is from new york", [(17, 25, "LOCATION")]),
    ]
    return [
        LabelledText(f"t{i}", text, tuple(GoldSpan(*g) for g in gold))
        for i in range(n)
        for text, gold in [shapes[i % len(shapes)]]
    ]


def _spans(model: str, folder: Path, *, texts: list[str]) -> list[set[tuple[str, str]]]:
    classifier = load_token_classifier(model, folder, threads=1, batch_size=4)
    return [
        {(text[s.start : s.end], s.label) for s in spans}
        for text, spans in zip(texts, classifier.classify(texts), strict=True)
    ]


PROBE = ["hello alice", "bob went to boston", "pay my bill"]
LEARNED = [{("alice", "PER")}, {("bob", "PER"), ("boston", "LOC")}, set()]


@pytest.mark.parametrize(("learning_rate", "learns"), [(3e-2, True), (1e-7, False)])
def test_a_tiny_encoder_learns_the_labelled_spans_and_its_onnx_finds_them(
    tmp_path: Path, learning_rate: float, *, learns: bool
) -> None:
    # the tiny model's head is replaced by a new one of the training labels: what it finds
    # after fine-tuning it learned (a step too small to learn finds none of it), and its
    # ONNX finds each name and place
    base = build_tiny_ner(tmp_path / "base", max_positions=32)
    output = tmp_path / "trained"
    settings = TrainSettings(epochs=12, batch_size=8, learning_rate=learning_rate)
    figures = fine_tune(base, _texts(64), output=output, settings=settings)
    assert figures["examples"] == 64
    found = _spans(str(output / ONNX_FILE), tmp_path, texts=PROBE)
    assert (found == LEARNED) is learns
    # the PyTorch folder beside it says the same
    assert _spans(str(output), tmp_path, texts=PROBE) == found


def test_nothing_to_learn_is_one_error_and_no_model(tmp_path: Path) -> None:
    base = build_tiny_ner(tmp_path / "base")
    empty = [LabelledText("t", "   ", ())]
    with pytest.raises(InputError, match="no labelled text"):
        fine_tune(base, empty, output=tmp_path / "out", settings=TrainSettings(epochs=1))
    assert not (tmp_path / "out").exists()


def test_a_base_that_is_no_model_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    with pytest.raises(InputError, match="--base"):
        fine_tune(
            tmp_path / "base", _texts(4), output=tmp_path / "out", settings=TrainSettings(epochs=1)
        )


def test_the_command_refuses_a_base_that_is_no_model_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from veiltune.cli import main

    (tmp_path / "base").mkdir()
    argv = ["train-ner", "--data", "embedded", "--embedded-conversations", "2"]
    code = main([*argv, "--base", str(tmp_path / "base"), "--output", str(tmp_path / "out")])
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert "--base" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
