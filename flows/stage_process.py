"""A DVC command run as a child process, its output read line by line while it runs.

The flow logs each line as it arrives (a stage's own log included; a progress bar redrawn
in place, every ``PROGRESS_EVERY_S`` and when it ends), tells a stage that ran from one DVC
skipped or restored from its run cache by DVC's own words, and stops a stage that outlives
its time limit: the whole process group goes, so no stage command is left running.
"""

from __future__ import annotations

import io
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from components.core.errors import VeiltuneError

# DVC's own words (dvc/stage/__init__.py, dvc/stage/cache.py and dvc/repo/reproduce.py).
RUNNING = re.compile(r"^Running stage '(?P<stage>[^']+)':")
SKIPPED = re.compile(r"^Stage '(?P<stage>[^']+)' didn't change, skipping")
# The run cache (this workspace's, or a team remote's with --pull) held the stage's outputs
# for exactly these inputs; or, with --pull, the stage's inputs match its lock entry and its
# missing outputs were pulled: checked out, not computed (a failed pull runs the stage).
RESTORED = re.compile(
    r"^(Stage '(?P<stage>[^']+)' is cached - skipping run"
    r"|Pulling data for stage: '(?P<pulled>[^']+)')"
)
TAIL_LINES = 25
PROGRESS_EVERY_S = 10.0  # a progress bar redrawn in place is logged this often
_KILL_GRACE_S = 10

LineSink = Callable[[str], None]
# How a stage ended, as the flow's reports name it: computed, unchanged, or its outputs
# taken from the run cache.
Ended = Literal["Ran", "Skipped", "Restored"]


class StageFailed(VeiltuneError):
    """A DVC stage exited non-zero; the message carries the stage's own error."""


class StageTimedOut(StageFailed):
    """A stage ran longer than its time limit and was stopped."""


@dataclass(frozen=True)
class StageOutcome:
    """How one stage ended: run by DVC, skipped because nothing it depends on changed, or
    restored from the run cache."""

    stage: str
    ended: Ended
    seconds: float

    @property
    def skipped(self) -> bool:
        """Whether DVC ran nothing: unchanged or restored."""
        return self.ended != "Ran"


def stage_marker(line: str) -> tuple[str, Ended] | None:
    """``(stage, how it ended)`` when ``line`` is DVC starting, skipping or restoring a stage."""
    patterns: tuple[tuple[re.Pattern[str], Ended], ...] = (
        (RUNNING, "Ran"), (SKIPPED, "Skipped"), (RESTORED, "Restored"),
    )  # fmt: skip
    for pattern, ended in patterns:
        found = pattern.match(line)
        if found:
            named = found.groupdict()
            return named["stage"] or named["pulled"], ended
    return None


class StreamedProcess:
    """A child process (its own process group) whose stdout and stderr lines, merged, are
    read by a thread as they come; iterate with ``lines``."""

    def __init__(self, argv: list[str], env: Mapping[str, str], *, cwd: Path | None = None):
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,  # a timeout stops DVC and the stage it runs together
        )
        self._ended = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        # newline="": a progress bar's redraws end in "\r" alone, told apart from lines
        text = io.TextIOWrapper(self._process.stdout, errors="replace", newline="")
        last_redraw = -float("inf")
        with text:
            for raw in text:
                line = raw.rstrip("\r\n")
                if raw.endswith("\r"):  # a redraw: one every PROGRESS_EVERY_S is enough
                    if not line.strip() or time.monotonic() - last_redraw < PROGRESS_EVERY_S:
                        continue
                    last_redraw = time.monotonic()
                self._lines.put(line)
        self._lines.put(None)

    def lines(self, deadline: float | None = None) -> Iterator[str]:
        """The output's lines as they arrive, until it ends.

        Raises:
            TimeoutError: ``deadline`` (a ``time.monotonic()`` value) passed first; the
                process group has been stopped.
        """
        while not self._ended:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                line = self._lines.get(timeout=wait)
            except queue.Empty:
                self.stop()
                raise TimeoutError from None
            if line is None:
                self._ended = True
                return
            self.tail.append(line)
            yield line

    def wait(self) -> int:
        """The exit status, once the output has ended."""
        return self._process.wait()

    def stop(self) -> None:
        """Stop the process group: SIGTERM, then SIGKILL after a grace period."""
        if self._process.poll() is not None:
            return
        os.killpg(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(timeout=_KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()


def deadline_after(timeout_s: float | None) -> float | None:
    return None if timeout_s is None else time.monotonic() + timeout_s


def failure(stage: str, process: StreamedProcess) -> StageFailed:
    """The error of a stage whose command exited non-zero: its exit status and last lines."""
    tail = "\n".join(process.tail)
    return StageFailed(f"stage {stage} failed (exit {process.wait()}):\n{tail}")


def timed_out(stage: str, timeout_s: float | None) -> StageTimedOut:
    return StageTimedOut(
        f"stage {stage} ran longer than {timeout_s:g} s and was stopped "
        "(raise it with the flow's `timeouts` parameter)"
    )


def run_streamed(
    stage: str,
    argv: list[str],
    *,
    env: Mapping[str, str],
    on_line: LineSink,
    cwd: Path | None = None,
    timeout_s: float | None = None,
) -> StageOutcome:
    """Run one stage's DVC command, handing each output line to ``on_line`` as it comes.

    Raises:
        StageFailed: the command exited non-zero; the message carries its last lines.
        StageTimedOut: it ran longer than ``timeout_s`` and was stopped.
    """
    started = time.monotonic()
    process = StreamedProcess(argv, env, cwd=cwd)
    ended: Ended = "Ran"
    try:
        for line in process.lines(deadline_after(timeout_s)):
            on_line(line)
            found = stage_marker(line)
            if found is not None and found[0] == stage:
                ended = found[1]  # the last word: a pull that failed is followed by a run
    except TimeoutError:
        raise timed_out(stage, timeout_s) from None
    except BaseException:  # the run was cancelled (Prefect's SIGTERM), or on_line failed
        process.stop()
        raise
    if process.wait() != 0:
        raise failure(stage, process)
    return StageOutcome(stage, ended, time.monotonic() - started)
