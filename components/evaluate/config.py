"""The evaluate stage's params."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar
from urllib.parse import urlparse

from pydantic import Field

from components.core.config import Count, NonEmpty, params_section
from components.core.config import require as _require
from components.core.egress import check_proxy
from components.train import CALL_TASKS, SUMMARY_PRIVACY_TASKS

# The tasks evaluate can score by generating (the call tasks, and the privacy-preserving
# summaries the judge scores); perplexity is always measured.
SCORED_TASKS = (*CALL_TASKS, *SUMMARY_PRIVACY_TASKS)


@dataclass
@params_section("evaluate.judge")
class JudgeConfig:
    """``evaluate.judge``: who scores the privacy-preserving summaries."""

    # null: the offline judge (components/evaluate/judge.py); else an LLM judge with the
    # method's rubric: a local Hugging Face model folder, or an OpenAI-compatible URL
    model: NonEmpty | None = None
    allow_remote: bool = False  # a URL off this machine receives facts of raw calls
    max_new_tokens: Annotated[int, Field(ge=4)] = 24
    # The proxy (http://HOST:PORT) a remote judge URL is reached through; null: none. The
    # environment's http(s)_proxy is never used, and a loopback URL never goes through one.
    proxy: str | None = None

    def __post_init__(self) -> None:
        is_url = self.model is not None and self.model.startswith(("http://", "https://"))
        host = (urlparse(self.model).hostname or "") if is_url and self.model else None
        check_proxy(self.proxy, host, key="evaluate.judge.proxy")


@dataclass
@params_section("evaluate")
class EvaluateConfig:
    SECTION: ClassVar[str] = "evaluate"

    max_conversations: Count = 30  # held-out conversations scored (all tasks of each)
    max_new_tokens: Count = 48
    max_prompt_tokens: Annotated[int, Field(ge=16)] = 768
    include_base: bool = True  # also score the base model zero-shot, for the report
    # The tasks scored by generating; [] scores perplexity alone (the language-modelling
    # comparison of fragments and the masking baselines, minutes instead of most of an hour).
    # private_summary / dual_summary are judged where a held-out conversation has the labels.
    tasks: list[str] = field(default_factory=lambda: list(CALL_TASKS))
    judge: JudgeConfig = field(default_factory=JudgeConfig)

    def __post_init__(self) -> None:
        if isinstance(self.judge, dict):  # a config read back from its asdict() form
            self.judge = JudgeConfig(**self.judge)
        unknown = sorted(set(self.tasks) - set(SCORED_TASKS))
        _require(not unknown, "evaluate.tasks", allowed=f"a list among {', '.join(SCORED_TASKS)}")
