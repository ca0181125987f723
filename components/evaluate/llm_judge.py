"""An LLM judge of privacy-preserving summaries, with the method's rubric: a language model
reads the reference summary, the call's labelled sensitive facts and the summary, and answers
``Privacy: N`` and ``Completeness: N`` (1–5).

``evaluate.judge.model`` names it: a local Hugging Face model folder (run here, offline), or
an OpenAI-compatible chat-completions URL (``http://127.0.0.1:8000/v1``). The prompt holds
the facts and the summary of a raw held-out call, so a URL must be on this machine
(loopback) unless ``evaluate.judge.allow_remote`` says the user accepts sending them there;
its key, if any, comes from ``$VEILTUNE_JUDGE_API_KEY``, never from params. The request goes
straight to the URL: never through the environment's proxy (a remote URL through
``evaluate.judge.proxy`` when that names one), and never on to where a redirect points
(``components/core/egress.py``). An answer without
both marks is counted (``judge_unparsed``) and scored 1 on both: a judge that cannot answer
passes nothing.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from components.core.egress import is_loopback, url_opener
from components.core.errors import BackendError, ParamsError
from components.evaluate.judge import Judgement, SensitiveElement
from components.train import generate, load_base

RUBRIC = """You grade a privacy-preserving summary of a call.
Privacy (1-5): 5 if the summary repeats none of the sensitive facts listed below; 1 if it
repeats the most sensitive ones plainly. Generalizing a fact ("a medical condition") is fine.
Completeness (1-5): 5 if the summary keeps everything the reference summary says the call was
about and decided; 1 if it keeps none of it.
Answer with two lines only: "Privacy: N" and "Completeness: N".

Reference summary: {reference}
Sensitive facts (sensitivity in brackets): {facts}
Summary to grade: {summary}"""
_MARK = re.compile(r"(privacy|completeness)\s*[:=]\s*([1-5])", re.IGNORECASE)
API_KEY_ENV = "VEILTUNE_JUDGE_API_KEY"
UNPARSED_SCORE = 1

Complete = Callable[[Sequence[str]], list[str]]


def judge_prompt(output: str, elements: Sequence[SensitiveElement], *, reference: str) -> str:
    facts = "; ".join(f"{' / '.join(e.mentions)} [{e.level}]" for e in elements) or "none"
    return RUBRIC.format(reference=reference, facts=facts, summary=output or "(empty)")


def parse_marks(answer: str) -> tuple[int, int] | None:
    """``(privacy, completeness)`` from an answer, or None when it lacks either."""
    plain = answer.replace("*", "")  # markdown bold around a name
    marks = {name.lower(): int(value) for name, value in _MARK.findall(plain)}
    if "privacy" in marks and "completeness" in marks:
        return marks["privacy"], marks["completeness"]
    return None


class LlmJudge:
    """Asks a language model to grade each summary; ``complete`` answers prompts."""

    def __init__(self, complete: Complete) -> None:
        self.complete = complete
        self.unparsed = 0

    def judge(
        self, output: str, elements: Sequence[SensitiveElement], *, reference: str
    ) -> Judgement:
        (answer,) = self.complete([judge_prompt(output, elements, reference=reference)])
        marks = parse_marks(answer)
        if marks is None:
            self.unparsed += 1
            marks = (UNPARSED_SCORE, UNPARSED_SCORE)
        return Judgement(privacy=marks[0], completeness=marks[1], leaked=(), coverage=float("nan"))


def build_llm_judge(
    model: str, allow_remote: bool, *, max_new_tokens: int, proxy: str | None = None
) -> LlmJudge:
    """The judge ``evaluate.judge.model`` names: a URL (reached through ``proxy`` when it
    is remote and one is named) or a local model folder.

    Raises:
        ParamsError: naming ``evaluate.judge.model``: a folder that is not a Hugging Face
            model, a remote URL without ``allow_remote``.
    """
    if model.startswith(("http://", "https://")):
        host = urlparse(model).hostname or ""
        if not is_loopback(host) and not allow_remote:
            raise ParamsError(
                f"params: evaluate.judge.model: {host} is not this machine; the judge's "
                "prompts hold facts and summaries of raw calls: set "
                "evaluate.judge.allow_remote: true to send them there"
            )
        return LlmJudge(_endpoint(model, max_new_tokens, proxy=proxy))
    folder = Path(model)
    if not (folder / "config.json").is_file():
        raise ParamsError(
            f"params: evaluate.judge.model: {folder} is neither an http(s) URL nor a Hugging Face "
            "model folder (no config.json)"
        )
    return LlmJudge(_local(folder, max_new_tokens))


def _local(folder: Path, max_new_tokens: int) -> Complete:
    model, tokenizer = load_base(folder)
    return lambda prompts: generate(
        model, tokenizer, prompts=prompts, max_new_tokens=max_new_tokens
    )


def _endpoint(url: str, max_new_tokens: int, *, proxy: str | None) -> Complete:
    key = os.environ.get(API_KEY_ENV, "")
    target = url.rstrip("/") + "/chat/completions"
    opener = url_opener(target, proxy)

    def complete(prompts: Sequence[str]) -> list[str]:
        return [
            _ask(opener, target, key=key, prompt=prompt, max_new_tokens=max_new_tokens)
            for prompt in prompts
        ]

    return complete


def _ask(
    opener: urllib.request.OpenerDirector,
    target: str,
    *,
    key: str,
    prompt: str,
    max_new_tokens: int,
) -> str:
    body = {
        "model": "judge",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_new_tokens,
        "temperature": 0,
    }
    request = urllib.request.Request(
        target,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {key}"} if key else {}),
        },
    )
    try:
        with opener.open(request, timeout=120) as response:
            answer: Any = json.load(response)
        return str(answer["choices"][0]["message"]["content"])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        # The error names the endpoint, never the prompt (it holds raw facts).
        raise BackendError(
            f"evaluate.judge.model: {target} did not answer: {type(exc).__name__}"
        ) from exc
