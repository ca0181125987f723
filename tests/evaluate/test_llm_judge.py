"""The LLM judge's plumbing: its prompt, reading its marks, where it may send prompts, and
the bundled SmolLM2 as a local judge (plumbing only: a 135M model is no grader)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from components.core.errors import ParamsError
from components.evaluate.config import EvaluateConfig
from components.evaluate.judge import SensitiveElement
from components.evaluate.llm_judge import (
    LlmJudge,
    build_llm_judge,
    judge_prompt,
    parse_marks,
)

HIV = SensitiveElement("healthcare.high.diagnosis.hiv", "high", ("HIV",))


@pytest.mark.parametrize(
    ("answer", "marks"),
    [
        ("Privacy: 4\nCompleteness: 5", (4, 5)),
        ("completeness = 2, privacy: 1", (1, 2)),
        ("**Privacy:** 3 ... Completeness: 3", (3, 3)),  # markdown bold is read through
        ("Privacy: 4", None),
        ("Privacy: 9\nCompleteness: 5", None),
        ("", None),
    ],
)
def test_marks_are_read_only_when_both_are_there(
    answer: str, marks: tuple[int, int] | None
) -> None:
    assert parse_marks(answer) == marks


def test_the_prompt_holds_the_rubric_the_facts_and_the_summary() -> None:
    prompt = judge_prompt("The refill was late.", [HIV], "A prescription was late.")
    assert "Privacy (1-5)" in prompt and "Completeness (1-5)" in prompt
    assert "HIV [high]" in prompt and "The refill was late." in prompt
    assert "A prescription was late." in prompt


def test_an_unreadable_answer_passes_nothing_and_is_counted() -> None:
    answers = iter(["Privacy: 5\nCompleteness: 4", "I think it is fine."])

    def complete(prompts: Sequence[str]) -> list[str]:
        return [next(answers) for _ in prompts]

    judge = LlmJudge(complete)
    first = judge.judge("ok", [HIV], "ref")
    assert (first.privacy, first.completeness, first.acceptable) == (5, 4, True)
    second = judge.judge("ok", [HIV], "ref")
    assert (second.privacy, second.completeness, second.acceptable) == (1, 1, False)
    assert judge.unparsed == 1


def test_a_remote_endpoint_needs_consent_and_a_folder_must_be_a_model(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match=r"evaluate.judge.model: judge.example.com is not"):
        build_llm_judge("https://judge.example.com/v1", False, 24)
    build_llm_judge("https://judge.example.com/v1", True, 24)  # consented: built, not called
    build_llm_judge("http://127.0.0.1:8000/v1", False, 24)  # this machine
    with pytest.raises(ParamsError, match=r"is neither an http\(s\) URL nor a Hugging Face"):
        build_llm_judge(str(tmp_path), False, 24)


def test_judge_params_are_checked() -> None:
    assert EvaluateConfig(judge={"model": None}).judge.model is None  # type: ignore[arg-type]
    with pytest.raises(ParamsError, match="evaluate.judge.max_new_tokens"):
        EvaluateConfig(judge={"max_new_tokens": 1})  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_bundled_model_runs_as_a_local_judge(base_model_dir: Path) -> None:
    judge = build_llm_judge(str(base_model_dir), False, 16)
    verdict = judge.judge("A prescription was late.", [HIV], "A prescription was late.")
    assert 1 <= verdict.privacy <= 5 and 1 <= verdict.completeness <= 5
    assert judge.unparsed in (0, 1)  # whether SmolLM2 follows the format is not the point
