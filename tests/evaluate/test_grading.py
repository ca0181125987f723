"""Human grading of private summaries: the graders' file, its checks, and the agreement
report (graders against the judge and each other)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from components.core.corpus import Conversation
from components.core.errors import InputError
from components.evaluate.grading import export_summaries, gradable, import_grades
from components.evaluate.judge import OfflineJudge
from components.ingest import generate_sensitive_corpus
from components.train import load_base

WORDS_ONLY = OfflineJudge()


@pytest.fixture(scope="module")
def calls() -> list[Conversation]:
    return generate_sensitive_corpus(12, seed=13)


def _graded(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _rows(calls: list[Conversation], marks: list[tuple[int, int]]) -> list[dict[str, object]]:
    # the reference private summary as "what the model wrote": the judge gives it 5 and 5
    return [
        {"id": c.id, "summary": c.labels["summary_private"], "privacy": p, "completeness": q}
        for c, (p, q) in zip(calls, marks, strict=True)
    ]


@pytest.mark.slow
def test_export_writes_a_blank_owner_only_file_for_graders(
    tmp_path: Path, base_model_dir: Path, *, calls: list[Conversation]
) -> None:
    model, tokenizer = load_base(base_model_dir)
    output = tmp_path / "raw" / "summaries.jsonl"
    chosen = gradable([Conversation("plain", calls[0].turns), *calls], 2)
    assert [c.id for c in chosen] == [c.id for c in calls[:2]]  # only calls with a reference
    assert (
        export_summaries(
            chosen,
            model,
            tokenizer=tokenizer,
            output=output,
            max_new_tokens=12,
            max_prompt_tokens=512,
        )
        == 2
    )
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [r["id"] for r in records] == [c.id for c in calls[:2]]
    assert all(r["privacy"] is None and r["completeness"] is None for r in records)
    # the model's summary (a tiny random model's words), the reference and the transcript
    assert all(
        isinstance(r["summary"], str) and r["reference"] and r["transcript"] for r in records
    )
    assert "judge" not in json.dumps(records)  # graders grade blind
    assert stat.S_IMODE(output.stat().st_mode) == 0o600


def test_import_reports_agreement_with_the_judge_and_between_graders(
    tmp_path: Path, calls: list[Conversation]
) -> None:
    agree = _graded(tmp_path / "a.jsonl", _rows(calls, [(5, 5)] * 12))
    # a grader who finds half the references leaky and incomplete
    harsh = _graded(tmp_path / "b.jsonl", _rows(calls, [(5, 5), (2, 3)] * 6))
    output = tmp_path / "grading.json"
    by_id = {c.id: c for c in calls}
    report = import_grades([agree, harsh], by_id, output=output, judge=WORDS_ONLY)
    assert json.loads(output.read_text()) == report
    assert (report["summaries"], report["graders"]) == (12, 2)
    pairs = {tuple(row["raters"]): row for row in report["agreement"]}
    with_judge = pairs[("judge", str(agree))]
    assert with_judge["privacy.exact"] == with_judge["acceptable.exact"] == 1.0
    assert with_judge["acceptable.kappa"] == 1.0  # one verdict everywhere: nothing to disagree on
    harsh_judge = pairs[("judge", str(harsh))]
    assert harsh_judge["acceptable.exact"] == 0.5 and harsh_judge["privacy.exact"] == 0.5
    assert "transcript" not in output.read_text() and "summary_private" not in output.read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"privacy": 6}, r"g.jsonl:1: key 'privacy' must be an integer from 1 to 5"),
        ({"completeness": "4"}, r"g.jsonl:1: key 'completeness' must be an integer"),
        ({"privacy": True}, r"g.jsonl:1: key 'privacy' must be an integer"),
        ({"id": "sens-99999"}, r"g.jsonl:1: key 'id': not a held-out conversation"),
        ({"summary": None}, r"g.jsonl:1: key 'summary' must be the exported summary"),
    ],
)
def test_a_bad_mark_names_file_line_and_key(
    tmp_path: Path, calls: list[Conversation], *, change: dict[str, object], message: str
) -> None:
    rows = _rows(calls[:2], [(5, 5), (4, 4)])
    rows[0] = {**rows[0], **change}
    path = _graded(tmp_path / "g.jsonl", rows)
    with pytest.raises(InputError, match=message):
        import_grades(
            [path], {c.id: c for c in calls}, output=tmp_path / "out.json", judge=WORDS_ONLY
        )
    assert not (tmp_path / "out.json").exists()


def test_a_summary_graded_twice_is_refused(tmp_path: Path, calls: list[Conversation]) -> None:
    rows = _rows(calls[:1], [(5, 5)]) * 2
    path = _graded(tmp_path / "g.jsonl", rows)
    with pytest.raises(InputError, match=r"g.jsonl:2: key 'id': graded twice"):
        import_grades(
            [path], {c.id: c for c in calls}, output=tmp_path / "out.json", judge=WORDS_ONLY
        )
