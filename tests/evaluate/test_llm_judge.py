"""The LLM judge's plumbing: its prompt, reading its marks, where it may send prompts, and
the bundled SmolLM2 as a local judge (plumbing only: a 135M model is no grader)."""

from __future__ import annotations

import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pytest

from components.core.errors import BackendError, ParamsError
from components.evaluate.config import EvaluateConfig, JudgeConfig
from components.evaluate.judge import SensitiveElement
from components.evaluate.llm_judge import (
    API_KEY_ENV,
    LlmJudge,
    build_llm_judge,
    judge_prompt,
    parse_marks,
)
from tests.local_servers import fake_judge, recording_proxy

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
    prompt = judge_prompt("The refill was late.", [HIV], reference="A prescription was late.")
    assert "Privacy (1-5)" in prompt and "Completeness (1-5)" in prompt
    assert "HIV [high]" in prompt and "The refill was late." in prompt
    assert "A prescription was late." in prompt


def test_an_unreadable_answer_passes_nothing_and_is_counted() -> None:
    answers = iter(["Privacy: 5\nCompleteness: 4", "I think it is fine."])

    def complete(prompts: Sequence[str]) -> list[str]:
        return [next(answers) for _ in prompts]

    judge = LlmJudge(complete)
    first = judge.judge("ok", [HIV], reference="ref")
    assert (first.privacy, first.completeness, first.acceptable) == (5, 4, True)
    second = judge.judge("ok", [HIV], reference="ref")
    assert (second.privacy, second.completeness, second.acceptable) == (1, 1, False)
    assert judge.unparsed == 1


def test_a_remote_endpoint_needs_consent_and_a_folder_must_be_a_model(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match=r"evaluate.judge.model: judge.example.com is not"):
        build_llm_judge("https://judge.example.com/v1", False, max_new_tokens=24)
    build_llm_judge(
        "https://judge.example.com/v1", True, max_new_tokens=24
    )  # consented: built, not called
    build_llm_judge("http://127.0.0.1:8000/v1", False, max_new_tokens=24)  # this machine
    with pytest.raises(ParamsError, match=r"is neither an http\(s\) URL nor a Hugging Face"):
        build_llm_judge(str(tmp_path), False, max_new_tokens=24)


def test_judge_params_are_checked() -> None:
    assert EvaluateConfig(judge={"model": None}).judge.model is None  # type: ignore[arg-type]
    with pytest.raises(ParamsError, match="evaluate.judge.max_new_tokens"):
        EvaluateConfig(judge={"max_new_tokens": 1})  # type: ignore[arg-type]


def proxied_environment(monkeypatch: pytest.MonkeyPatch, proxy: str) -> None:
    """Every proxy variable set to ``proxy``, no exception for any host."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "grpc_proxy"):
        monkeypatch.setenv(name, proxy)
    for name in ("no_proxy", "NO_PROXY", "no_grpc_proxy"):
        monkeypatch.delenv(name, raising=False)
    # urllib's default opener reads the environment's proxies once, when first built
    monkeypatch.setattr(urllib.request, "_opener", None)


def test_a_loopback_judge_is_asked_directly_whatever_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with recording_proxy() as proxy, fake_judge() as judge:
        proxied_environment(monkeypatch, proxy.url)
        verdict = build_llm_judge(judge.url + "/v1", False, max_new_tokens=24).judge(
            "ok", [HIV], reference="ref"
        )
    assert proxy.requests == []  # the prompt holds the facts: never handed to a proxy
    assert (verdict.privacy, verdict.completeness) == (5, 4)
    (request,) = judge.requests
    assert request["line"] == "POST /v1/chat/completions HTTP/1.1"
    assert "HIV [high]" in request["body"].decode()


def test_a_remote_judge_goes_through_the_proxy_the_params_name_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remote = "http://judge.example.test/v1"
    with recording_proxy() as named, recording_proxy() as environment:
        proxied_environment(monkeypatch, environment.url)
        judge = build_llm_judge(remote, True, max_new_tokens=24, proxy=named.url)
        with pytest.raises(BackendError, match="judge.example.test/v1/chat/completions"):
            judge.judge("ok", [HIV], reference="ref")  # the proxy answers 502
    (request,) = named.requests
    assert request["line"] == "POST http://judge.example.test/v1/chat/completions HTTP/1.1"
    assert environment.requests == []


def test_a_judge_that_redirects_is_refused_and_its_key_goes_nowhere_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, "sk-judge-key")
    with fake_judge() as elsewhere:
        target = elsewhere.url + "/v1/chat/completions"
        with fake_judge(redirect_to=target) as judge:
            llm = build_llm_judge(judge.url + "/v1", False, max_new_tokens=24)
            with pytest.raises(BackendError, match=rf"answered 302.*{target}.*redirect"):
                llm.judge("ok", [HIV], reference="ref")
    assert elsewhere.requests == []  # neither the key nor the prompt, and no grades taken
    (asked,) = judge.requests
    assert asked["headers"]["Authorization"] == "Bearer sk-judge-key"


@pytest.mark.parametrize(
    ("judge", "message"),
    [
        ({"model": "http://127.0.0.1:8000/v1", "proxy": "http://proxy:3128"}, "loopback"),
        ({"model": None, "proxy": "http://proxy:3128"}, "a judge URL"),
        (
            {"model": "https://judge.example.com/v1", "allow_remote": True, "proxy": "proxy:3128"},
            "http://HOST:PORT",
        ),
    ],
)
def test_a_judge_proxy_is_for_a_remote_url_and_is_a_url(
    judge: dict[str, object], message: str
) -> None:
    with pytest.raises(ParamsError, match=rf"evaluate.judge.proxy.*{message}"):
        JudgeConfig(**judge)  # type: ignore[arg-type]
    remote = {"model": "https://judge.example.com/v1", "allow_remote": True}
    assert JudgeConfig(**remote, proxy="http://proxy:3128").proxy == "http://proxy:3128"  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_bundled_model_runs_as_a_local_judge(base_model_dir: Path) -> None:
    judge = build_llm_judge(str(base_model_dir), False, max_new_tokens=16)
    verdict = judge.judge("A prescription was late.", [HIV], reference="A prescription was late.")
    assert 1 <= verdict.privacy <= 5 and 1 <= verdict.completeness <= 5
    assert judge.unparsed in (0, 1)  # whether SmolLM2 follows the format is not the point
