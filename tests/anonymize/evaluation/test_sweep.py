"""The detection sweep (one detection, many thresholds), the masked-word share and the
per-conversation grouping of labelled turns."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from components.anonymize.config import AnonymizeConfig
from components.anonymize.evaluation.datasets import GoldSpan, LabelledText
from components.anonymize.evaluation.run import conversation_groups, evaluate_detection
from components.anonymize.evaluation.scoring import DetectionScore, score_text
from components.anonymize.evaluation.sweep import parse_sweep, sweep_detection, with_value
from components.anonymize.factory import DEFAULT_SPEAKER_ROLES
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.spans import Span
from components.core.errors import ParamsError

POLICY = AnonymizationPolicy(speaker_roles=DEFAULT_SPEAKER_ROLES)
#        0         1         2         3
#        0123456789012345678901234567890123456
TEXT = "Please ask Zorblax about the invoice"
ITEMS = [LabelledText("t", TEXT, (GoldSpan(11, 18, "PERSON_NAME"),))]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("lm_probability.q=0.1", "the key is one of lm_probability.p, vocab_threshold"),
        ("lm_probability.p=low,0.1", "values are numbers"),
        ("vocab_threshold=", "no values"),
    ],
)
def test_a_bad_sweep_names_itself(spec: str, message: str) -> None:
    with pytest.raises(ParamsError, match=message) as raised:
        parse_sweep(spec)
    assert spec in str(raised.value)


def test_sweep_values_are_validated_as_the_params_they_set() -> None:
    assert parse_sweep("lm_probability.p=1e-4,0.01") == ("lm_probability.p", [1e-4, 0.01])
    config = AnonymizeConfig(detectors=["vocab_threshold"])
    assert with_value(config, "vocab_threshold", value=300.0).vocab_threshold == 300
    with pytest.raises(ParamsError, match="anonymize.vocab_threshold"):
        with_value(config, "vocab_threshold", value=2.5)
    with pytest.raises(ParamsError, match="anonymize.lm_probability.p"):
        with_value(config, "lm_probability.p", value=1.5)


def test_the_masked_word_share_counts_words_a_span_touches() -> None:
    score = DetectionScore()
    score_text(ITEMS[0], [Span(11, 18, "X", 1.0), Span(29, 31, "X", 1.0)], score=score)
    # "Zorblax" and "invoice" (touched by its first two letters) of 6 words
    assert score.to_metrics()["masked_word_share"] == round(2 / 6, 4)


def test_a_vocabulary_sweep_masks_more_as_the_list_shrinks(tmp_path: Path) -> None:
    config = AnonymizeConfig(detectors=["vocab_threshold"])
    rows = sweep_detection(
        ITEMS, config, base_dir=tmp_path, policy=POLICY, key="vocab_threshold", values=[50, 100_000]
    )
    short, long = rows
    assert (short["vocab_threshold"], long["vocab_threshold"]) == (50, 100_000)
    # 50 words keep the stop words only; 100,000 keep every word but the name
    assert short["masked_word_share"] > long["masked_word_share"] > 0
    assert short["char_recall"] == long["char_recall"] == 1.0
    assert long["char_precision"] == 1.0 > short["char_precision"]


def test_a_sweep_of_a_detector_not_configured_says_how_to_add_it(tmp_path: Path) -> None:
    config = AnonymizeConfig(detectors=["allow_list"])
    with pytest.raises(ParamsError, match="--detectors entities,vocab_threshold"):
        sweep_detection(
            ITEMS, config, base_dir=tmp_path, policy=POLICY, key="vocab_threshold", values=[100]
        )


class ContextRecorder:
    """Finds nothing; records each text with the context the engine read before it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        raise AssertionError("a contextual detector is asked in context")

    def detect_in_context(
        self, texts: Sequence[str], contexts: Sequence[str], *, batch_size: int = 64
    ) -> list[list[Span]]:
        self.seen += zip(texts, contexts, strict=True)
        return [[] for _ in texts]


def test_labelled_turns_are_detected_as_their_conversation() -> None:
    def turn(i: int, conversation: str, *, speaker: str | None, text: str) -> LabelledText:
        return LabelledText(
            f"{conversation}-{i}", text, (), conversation=conversation, speaker=speaker
        )

    items = [
        turn(0, "c1", speaker="Agent", text="Hello there."),
        turn(1, "c1", speaker="Customer", text="Hi."),
        LabelledText("alone", "A text alone.", ()),
        turn(0, "c2", speaker="Agent", text="Next call."),
    ]
    assert [[i.id for i in g] for g in conversation_groups(items)] == [
        ["c1-0", "c1-1"],
        ["alone"],
        ["c2-0"],
    ]
    recorder = ContextRecorder()
    metrics, _ = evaluate_detection(items, recorder, policy=POLICY, batch_size=2)
    assert metrics["n_texts"] == 4
    contexts = dict(recorder.seen)
    assert contexts["Hi."] == "Agent: Hello there.\nCustomer: "  # the call so far
    assert contexts["A text alone."] == "" and contexts["Next call."] == "Agent: "


def test_a_sweep_rejects_a_config_without_its_detector_through_replace() -> None:
    with pytest.raises(ParamsError, match="anonymize.detectors"):
        dataclasses.replace(AnonymizeConfig(), detectors=["entities", "no_such"])  # type: ignore[list-item]


def test_a_memo_asks_once_per_text_and_context_and_counts_what_it_asked() -> None:
    from components.anonymize.evaluation.sweep import Memo

    recorder = ContextRecorder()
    memo = Memo(recorder)
    memo.detect_in_context(["a b", "c"], ["x", ""])
    memo.detect_in_context(["a b", "c", "a b"], ["x", "", "y"])  # one new (text, context)
    assert recorder.seen == [("a b", "x"), ("c", ""), ("a b", "y")]
    assert memo.chars == 3 + 1 + 3 and memo.seconds > 0
