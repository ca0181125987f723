"""The generation benchmark's measures of looping, its settings, and its refusal of a folder
that is no finished run."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.generation import main, parse_settings, repeats_a_4gram, repeats_a_sentence
from components.train import GenerationSettings
from components.train.generation import PLAIN


@pytest.mark.parametrize(
    ("text", "sentence", "four_words"),
    [
        (
            "The employee is asked to provide the memo. The employee is asked to provide the memo.",
            True,
            True,
        ),
        ("#Person1# asks #Person2# to go. #Person2# agrees to go with #Person1#.", False, False),
        ("They will meet at the bank and then meet at the bank again.", False, True),
        ("", False, False),
    ],
)
def test_a_loop_is_a_repeated_sentence_or_four_words(
    text: str, sentence: bool, *, four_words: bool
) -> None:
    assert repeats_a_sentence(text) is sentence
    assert repeats_a_4gram(text) is four_words


def test_before_is_plain_greedy_and_after_the_defaults() -> None:
    assert parse_settings([]) == {"before": PLAIN, "after": GenerationSettings()}
    assert parse_settings(["strict=1.3:4"])["strict"] == GenerationSettings(1.3, 4)


def test_a_folder_without_a_trained_adapter_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--run", str(tmp_path)]) == 1
    assert "a checkout after make run" in capsys.readouterr().err
