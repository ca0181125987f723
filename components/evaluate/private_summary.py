"""Scores of the privacy-preserving summary tasks: the judge's Privacy, Completeness and
acceptable verdict (``judge.py``) and ROUGE-1 against the reference privacy-preserving
summary, per conversation, overall and per setting of the sensitivity taxonomy.

A ``dual_summary`` answer is judged on its private part (``Private summary: ...``); its
normal part is not scored here. The judge reads the conversation's labelled sensitive spans
(raw held-out text: the evaluate stage scores raw conversations) and its
``summary_private`` label; a conversation without labelled spans leaks nothing it could be
caught on, so it is judged on completeness alone (Privacy 5).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from components.anonymize import SentenceEncoder, minilm_dir
from components.core.corpus import Conversation
from components.evaluate.answer_scores import rouge_scores
from components.evaluate.judge import (
    OVERALL,
    Judgement,
    OfflineJudge,
    SensitiveElement,
    SummaryJudge,
    setting_of,
    summary_by_setting,
)
from components.evaluate.llm_judge import build_llm_judge
from components.train import DUAL_SUMMARY, Example, dual_parts

UNLABELLED = "unlabelled"  # the setting of a conversation that names none


def sensitive_elements(conversation: Conversation) -> list[SensitiveElement]:
    """The conversation's labelled sensitive elements, each with every text it is said by."""
    mentions: dict[tuple[str, str], list[str]] = {}
    for span in conversation.sensitive:
        turn = conversation.turns[span.turn]
        text = (turn.text if span.field == "text" else turn.speaker or "")[span.start : span.end]
        said = mentions.setdefault((span.element, span.path), [])
        if text.strip() and text not in said:
            said.append(text)
    return [
        SensitiveElement(path, path.split(".")[1], tuple(texts))
        for (_, path), texts in mentions.items()
        if texts
    ]


def conversation_setting(conversation: Conversation) -> str:
    """Its ``setting`` label, else the setting of its first labelled element."""
    setting = conversation.labels.get("setting")
    if isinstance(setting, str) and setting:
        return setting
    return setting_of(conversation.sensitive[0].path) if conversation.sensitive else UNLABELLED


def build_judge(
    model: str | None, allow_remote: bool, *, max_new_tokens: int, proxy: str | None = None
) -> SummaryJudge:
    """``evaluate.judge``: the offline judge (``model`` null) or an LLM judge."""
    if model is None:
        return default_judge()

    return build_llm_judge(model, allow_remote, max_new_tokens=max_new_tokens, proxy=proxy)


@functools.cache
def default_judge() -> OfflineJudge:
    """The offline judge with the bundled MiniLM encoder, loaded once per process."""
    return OfflineJudge(SentenceEncoder(minilm_dir()))


def private_summary_scores(
    task: str,
    outputs: Sequence[str],
    *,
    items: Sequence[Example],
    conversations: Mapping[str, Conversation],
    judge: SummaryJudge | None = None,
) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The task's scores over its examples (means, and per setting), and each example's
    (``privacy``, ``completeness``, ``acceptable`` 0/1, ``rouge1``)."""
    judge = judge or default_judge()
    per_example: list[dict[str, float]] = []
    judged: list[tuple[str, Judgement]] = []
    for output, example in zip(outputs, items, strict=True):
        conversation = conversations[example.conversation_id]
        answer = dual_parts(output)[1] if task == DUAL_SUMMARY else output
        reference = str(conversation.labels["summary_private"])
        verdict = judge.judge(answer, sensitive_elements(conversation), reference=reference)
        judged.append((conversation_setting(conversation), verdict))
        per_example.append(
            {
                "privacy": float(verdict.privacy),
                "completeness": float(verdict.completeness),
                "acceptable": float(verdict.acceptable),
                "rouge1": rouge_scores(answer, reference)["rouge1"],
            }
        )
    overall: dict[str, float] = {}
    for setting, summary in summary_by_setting(judged).items():
        prefix = "" if setting == OVERALL else f"{setting}."
        overall.update(
            {
                f"{prefix}privacy": summary.privacy,
                f"{prefix}completeness": summary.completeness,
                f"{prefix}acceptable_rate": summary.acceptable_rate,
            }
        )
    overall["rouge1"] = sum(e["rouge1"] for e in per_example) / len(per_example)
    return overall, per_example
