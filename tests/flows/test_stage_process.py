"""A stage's output reaches the run's log line by line while it runs; skips, failures and
time limits are told apart; one experiment's output is handed out stage by stage."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from flows.experiment import ExperimentRun
from flows.stage_process import StageFailed, StageTimedOut, run_streamed, stage_marker


def python(code: str) -> list[str]:
    return [sys.executable, "-u", "-c", code]


def test_each_line_is_handed_on_while_the_stage_still_runs() -> None:
    seen: list[tuple[str, float]] = []
    code = "import sys, time\nfor i in range(3):\n    print(f'line {i}'); time.sleep(0.5)\n"
    code += "print('to stderr', file=sys.stderr)"
    outcome = run_streamed(
        "s",
        python(code),
        env=os.environ,
        on_line=lambda line: seen.append((line, time.monotonic())),
    )
    ended = time.monotonic()
    assert [line for line, _ in seen] == ["line 0", "line 1", "line 2", "to stderr"]
    assert ended - seen[0][1] >= 0.9  # the first line came a second before the end
    assert outcome.ended == "Ran" and outcome.skipped is False


def test_a_progress_bar_redrawn_in_place_is_logged_now_and_then_not_at_each_redraw() -> None:
    code = "import sys\nfor i in range(1, 6):\n    sys.stderr.write(f'\\rstep {i}/5')\n"
    code += "sys.stderr.write('\\n'); print('done')"
    seen: list[str] = []
    run_streamed("anonymize", python(code), env=os.environ, on_line=seen.append)
    assert seen == ["step 1/5", "step 5/5", "done"]  # the first, the last, the next line


def test_a_stage_dvc_skipped_or_restored_is_told_from_one_that_ran() -> None:
    assert stage_marker("Stage 'base_model' didn't change, skipping") == ("base_model", "Skipped")
    assert stage_marker("Running stage 'gate':") == ("gate", "Ran")
    restored = "Stage 'risk' is cached - skipping run, checking out outputs"
    assert stage_marker(restored) == ("risk", "Restored")
    assert stage_marker("Pulling data for stage: 'train'") == ("train", "Restored")
    assert stage_marker("> veiltune gate") is None
    code = "print(\"Stage 'gate' didn't change, skipping\")"
    assert run_streamed("gate", python(code), env=os.environ, on_line=lambda _: None).skipped
    code = f"print({restored!r})"
    outcome = run_streamed("risk", python(code), env=os.environ, on_line=lambda _: None)
    assert outcome.ended == "Restored" and outcome.skipped
    # a pull that failed is followed by a run; another stage's marker does not count
    pulled = "print(\"Pulling data for stage: 'train'\"); print(\"Running stage 'train':\")"
    assert run_streamed("train", python(pulled), env=os.environ, on_line=print).ended == "Ran"
    assert run_streamed("gate", python(code), env=os.environ, on_line=lambda _: None).ended == "Ran"


def test_a_failing_stage_raises_with_its_own_error() -> None:
    code = "import sys\nprint('veiltune gate: error: gate refused the corpus', file=sys.stderr)\n"
    code += "sys.exit(3)"
    with pytest.raises(StageFailed, match=r"stage gate failed \(exit 3\):\n.*refused the corpus"):
        run_streamed("gate", python(code), env=os.environ, on_line=lambda _: None)


def test_a_stage_past_its_time_limit_is_stopped_with_its_children(tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(child)!r}, 'w').write(str(p.pid)); print('started'); time.sleep(60)"
    )
    started = time.monotonic()
    with pytest.raises(StageTimedOut, match=r"stage train ran longer than 2 s"):
        run_streamed("train", python(code), env=os.environ, on_line=lambda _: None, timeout_s=2)
    assert time.monotonic() - started < 30
    time.sleep(0.5)
    assert not running(int(child.read_text()))  # the stage's own child went with it


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may never reap the orphan)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in {"Z", "X"}


FAKE_EXPERIMENT = """
import sys, time
for line in ["Reproducing experiment 'x'", "Running stage 'ingest':", "> veiltune ingest",
             "ingest done", "Stage 'anonymize' didn't change, skipping",
             "Stage 'risk' is cached - skipping run, checking out outputs",
             "Running stage 'review':", "> veiltune review"]:
    print(line); time.sleep(0.05)
if sys.argv[1] == "fail":
    print("veiltune review: error: boom"); sys.exit(1)
print("Ran experiment(s): x")
"""


def follow_all(mode: str, stages: list[str]) -> list[tuple[str, object, list[str]]]:
    run = ExperimentRun([*python(FAKE_EXPERIMENT), mode], os.environ)
    followed: list[tuple[str, object, list[str]]] = []
    try:
        for stage in stages:
            lines: list[str] = []
            try:
                outcome: object = run.follow(stage, lines.append, timeout_s=30).ended
            except StageFailed as exc:
                outcome = exc
            followed.append((stage, outcome, lines))
    finally:
        run.finish()
    return followed


def test_one_experiment_is_followed_stage_by_stage() -> None:
    followed = follow_all("ok", ["ingest", "anonymize", "risk", "review"])
    assert followed == [
        ("ingest", "Ran", ["Reproducing experiment 'x'", "Running stage 'ingest':",
                           "> veiltune ingest", "ingest done"]),
        ("anonymize", "Skipped", ["Stage 'anonymize' didn't change, skipping"]),
        # restored from the run cache: before, the run failed with "did not run it"
        ("risk", "Restored", ["Stage 'risk' is cached - skipping run, checking out outputs"]),
        ("review", "Ran", ["Running stage 'review':", "> veiltune review",
                           "Ran experiment(s): x"]),
    ]  # fmt: skip


def test_the_stage_an_experiment_fails_at_fails_with_its_error() -> None:
    (_, ingest, _), (_, review, _) = follow_all("fail", ["ingest", "review"])
    assert ingest == "Ran"
    assert isinstance(review, StageFailed) and "stage review failed (exit 1)" in str(review)
    assert "veiltune review: error: boom" in str(review)
