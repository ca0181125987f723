"""Human grading of the privacy-preserving summaries, beside the judge.

``export``: the trained adapter writes a private summary of each held-out call that has a
reference one; the file gives graders the transcript, the reference and the summary, with
``privacy`` and ``completeness`` left blank (1–5, the judge's rubric,
docs/private-summaries.md). It holds raw text: it is written owner-only under ``data/raw``.
The judge's marks are not in it, so graders grade blind.

``import``: each grader's filled-in copy is checked (every mark an integer 1–5, every id one
of the export's), the judge scores the same summaries again (it is deterministic), and the
report gives each grader's agreement with the judge, and between graders: exact agreement,
Cohen's kappa on the acceptable verdict, quadratic-weighted kappa on each score. Numbers
only; no text leaves ``data/raw``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from components.core.atomic import PRIVATE
from components.core.corpus import Conversation
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl, write_json_atomic, write_jsonl_atomic
from components.evaluate.agreement import cohen_kappa
from components.evaluate.judge import ACCEPTABLE_ABOVE, OfflineJudge
from components.evaluate.private_summary import (
    conversation_setting,
    default_judge,
    sensitive_elements,
)
from components.train import PRIVATE_SUMMARY, fit_prompt, generate, task_examples, transcript

MARKS = ("privacy", "completeness")
MARK_RANGE = range(1, 6)


def gradable(conversations: Sequence[Conversation], limit: int) -> list[Conversation]:
    """The first ``limit`` conversations that have a reference private summary."""
    return [c for c in conversations if c.labels.get("summary_private")][:limit]


def export_summaries(
    conversations: Sequence[Conversation],
    model: Any,
    *,
    tokenizer: Any,
    output: Path,
    max_new_tokens: int,
    max_prompt_tokens: int,
) -> int:
    """Write the graders' file: one record per conversation; returns how many."""
    if not conversations:
        raise InputError(
            "grades export: no held-out conversation has labels.summary_private "
            "(ingest.sensitive_conversations generates some)"
        )
    examples = [task_examples(c, [PRIVATE_SUMMARY])[0] for c in conversations]
    prompts = [fit_prompt(e.prompt, tokenizer, max_tokens=max_prompt_tokens) for e in examples]
    summaries = generate(
        model, tokenizer, prompts=prompts, max_new_tokens=max_new_tokens, progress="grades export"
    )
    records = [
        {
            "id": c.id,
            "setting": conversation_setting(c),
            "transcript": transcript(c),
            "reference": c.labels["summary_private"],
            "summary": summary,
            "privacy": None,
            "completeness": None,
        }
        for c, summary in zip(conversations, summaries, strict=True)
    ]
    write_jsonl_atomic(output, records, mode=PRIVATE)
    return len(records)


def read_grades(path: Path, known: Mapping[str, Conversation]) -> dict[str, dict[str, Any]]:
    """One grader's marks and the summary each is for, by conversation id.

    Raises:
        InputError: naming file, line and key: an id not in the corpus, a repeated id, a
            mark that is not an integer from 1 to 5, a missing summary.
    """
    grades: dict[str, dict[str, Any]] = {}
    for line, record in iter_jsonl(path):
        where = f"{path}:{line}"
        conversation_id = record.get("id")
        if conversation_id not in known:
            raise InputError(f"{where}: key 'id': not a held-out conversation of the corpus")
        if conversation_id in grades:
            raise InputError(f"{where}: key 'id': graded twice")
        if not isinstance(record.get("summary"), str):
            raise InputError(f"{where}: key 'summary' must be the exported summary (a string)")
        for mark in MARKS:
            value = record.get(mark)
            if isinstance(value, bool) or not isinstance(value, int) or value not in MARK_RANGE:
                raise InputError(f"{where}: key '{mark}' must be an integer from 1 to 5")
        grades[str(conversation_id)] = record
    if not grades:
        raise InputError(f"{path}: no graded summaries")
    return grades


def import_grades(
    paths: Sequence[Path],
    conversations: Mapping[str, Conversation],
    *,
    output: Path,
    judge: OfflineJudge | None = None,
) -> dict[str, Any]:
    """Agreement of each grader with the judge and between graders, over the summaries they
    all graded; written to ``output``."""
    graders = {str(path): read_grades(path, conversations) for path in paths}
    shared = sorted(set.intersection(*(set(g) for g in graders.values())))
    if not shared:
        raise InputError("grades import: the graders' files share no conversation")
    first = next(iter(graders.values()))
    judge = judge or default_judge()
    machine = {}
    for cid in shared:
        conversation = conversations[cid]
        verdict = judge.judge(
            first[cid]["summary"],
            sensitive_elements(conversation),
            reference=str(conversation.labels["summary_private"]),
        )
        machine[cid] = {"privacy": verdict.privacy, "completeness": verdict.completeness}
    raters = {"judge": machine, **{name: marks for name, marks in graders.items()}}
    report = {
        "summaries": len(shared),
        "graders": len(graders),
        "agreement": [
            {"raters": [a, b], **agreement(raters[a], raters[b], ids=shared)}
            for a, b in combinations(raters, 2)
        ],
    }
    write_json_atomic(output, report)
    return report


def agreement(
    first: Mapping[str, Mapping[str, Any]],
    second: Mapping[str, Mapping[str, Any]],
    *,
    ids: Sequence[str],
) -> dict[str, float]:
    """Exact agreement and kappa of two raters on each mark and on the acceptable verdict."""
    found: dict[str, float] = {}
    for mark in MARKS:
        a, b = [int(first[i][mark]) for i in ids], [int(second[i][mark]) for i in ids]
        found[f"{mark}.exact"] = round(sum(x == y for x, y in zip(a, b, strict=True)) / len(ids), 4)
        found[f"{mark}.kappa_quadratic"] = round(cohen_kappa(a, b, weights="quadratic"), 4)
    left = [_acceptable(first[i]) for i in ids]
    right = [_acceptable(second[i]) for i in ids]
    agree = sum(x == y for x, y in zip(left, right, strict=True))
    found["acceptable.exact"] = round(agree / len(ids), 4)
    found["acceptable.kappa"] = round(cohen_kappa(left, right), 4)
    return found


def _acceptable(marks: Mapping[str, Any]) -> bool:
    return min(int(marks["privacy"]), int(marks["completeness"])) > ACCEPTABLE_ABOVE
