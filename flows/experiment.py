"""A run with overrides as a DVC experiment: ``dvc exp run --temp``, never the workspace.

DVC builds the experiment in ``.dvc/tmp/exps`` from HEAD plus the workspace's changes to
tracked files, sets the overrides there (``-S``), runs the stages and commits the result as
an experiment ref named after the flow run; ``params.yaml`` in the workspace is never
written, and every such run is a row of ``dvc exp show`` (``dvc exp apply NAME`` brings one
into the workspace). What the temporary copy would lack is handed to it:

- outputs kept out of DVC's cache (``cache: false``: the raw corpus, the inventory, metrics)
  and an untracked ``dvc.lock``, copied in (``-C``) so unchanged stages are still skipped;
- the MLflow store and the signing key, by absolute path in the environment, so the
  experiment's runs land in the workspace's store and its bundle is signed with its key.

One ``dvc exp run`` runs every selected stage; ``ExperimentRun.follow`` hands each stage's
share of its output to that stage's task, so the flow keeps a task, live logs and a state
per stage.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from components.core.dvc_cli import dvc_command
from flows.stage_process import (
    Ended,
    LineSink,
    StageFailed,
    StageOutcome,
    StreamedProcess,
    deadline_after,
    failure,
    stage_marker,
    timed_out,
)

_REF_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_BACKSLASHES_BEFORE_QUOTE = re.compile(r"\\+(?='|\Z)")


def experiment_name(flow_run_name: str, flow_run_id: str) -> str:
    """A git-ref-safe, unique experiment name: the flow run's name and its id's first 8.

    ``brave-tiger`` (id ``3f2a...``) → ``brave-tiger-3f2a9c1d``; anything but letters,
    digits, ``-`` and ``_`` becomes ``-``.
    """
    base = _REF_UNSAFE.sub("-", flow_run_name).strip("-_")[:60] or "run"
    suffix = _REF_UNSAFE.sub("", flow_run_id)[:8]
    return f"{base}-{suffix}" if suffix else base


def hydra_value(value: Any) -> str:
    """``value`` in the override grammar of ``dvc exp run -S`` (Hydra's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    # Quoted, so it is never read as a number; Hydra reads a backslash as an escape only
    # before a quote or the closing quote.
    text = _BACKSLASHES_BEFORE_QUOTE.sub(lambda m: m[0] * 2, str(value))
    return "'" + text.replace("'", "\\'") + "'"


def set_param_args(overrides: Mapping[str, Any]) -> list[str]:
    """``-S ++key=value`` per override (``++``: set the key whether or not params has it)."""
    return [
        arg for key, value in overrides.items() for arg in ("-S", f"++{key}={hydra_value(value)}")
    ]


def uncached_outputs(dvc_yaml: Path) -> list[str]:
    """The outputs, metrics and plots dvc.yaml keeps out of DVC's cache (``cache: false``)."""
    stages = (yaml.safe_load(dvc_yaml.read_text(encoding="utf-8")) or {}).get("stages", {})
    found: list[str] = []
    for stage in stages.values():
        for kind in ("outs", "metrics", "plots"):
            for entry in stage.get(kind) or []:
                if isinstance(entry, dict):
                    found += [p for p, o in entry.items() if (o or {}).get("cache") is False]
    return found


def _tracked(path: str, cwd: Path) -> bool:
    listed = subprocess.run(
        ["git", "ls-files", "--", path], cwd=cwd, capture_output=True, text=True, check=True
    )
    return bool(listed.stdout.strip())


def copy_paths(workspace: Path, outputs: Iterable[str]) -> list[str]:
    """What ``-C`` must copy into the experiment so that ``outputs`` exist there as here.

    Tracked files come with the experiment's commit. DVC copies the paths in order, a folder
    with its parents but a file only into a folder that exists there, so an untracked file
    whose folder holds nothing tracked is copied with its folder, unless a path copied before
    it lies in that folder (and so makes it).
    """
    chosen: list[str] = []
    for output in [*outputs, "dvc.lock"]:
        path = workspace / output
        if not path.exists() or _tracked(output, workspace):
            continue
        parent = Path(output).parent
        made = any(Path(c).is_relative_to(parent) for c in chosen)
        if path.is_file() and parent != Path(".") and not made:
            output = output if _tracked(str(parent), workspace) else str(parent)
        if not any(output == c or Path(output).is_relative_to(c) for c in chosen):
            chosen.append(output)
    return chosen


def exp_run_command(
    name: str,
    stages: Iterable[str],
    *,
    overrides: Mapping[str, Any],
    copy: Iterable[str],
    pull: bool = False,
) -> list[str]:
    """``dvc exp run --temp -n NAME -C ... -S ... [--pull] --single-item STAGE...`` (``pull``:
    the default remote's run cache searched first)."""
    copies = [arg for path in copy for arg in ("-C", path)]
    return dvc_command(
        "exp", "run", "--temp", "-n", name, *copies, *set_param_args(overrides),
        *(["--pull"] if pull else []), "--single-item", *stages,
    )  # fmt: skip


def experiment_ref(name: str, cwd: Path) -> str:
    """The git ref DVC committed experiment ``name`` to."""
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/exps"],
        cwd=cwd, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    found = [ref for ref in refs if ref.endswith(f"/{name}")]
    if not found:
        raise StageFailed(f"dvc exp run reported no experiment named {name}")
    return found[0]


def experiment_metrics(ref: str, stage: str, *, cwd: Path) -> dict[str, Any] | None:
    """``metrics/<stage>.json`` as the experiment committed it (None when it holds none)."""
    shown = subprocess.run(
        ["git", "show", f"{ref}:metrics/{stage}.json"],
        cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return dict(json.loads(shown.stdout)) if shown.returncode == 0 else None


class ExperimentRun:
    """One ``dvc exp run`` in progress, its output handed out stage by stage."""

    def __init__(self, argv: list[str], env: Mapping[str, str], *, cwd: Path | None = None):
        self.process = StreamedProcess(argv, env, cwd=cwd)
        self._next: tuple[str, tuple[str, Ended]] | None = None  # a later stage's first line

    def follow(self, stage: str, on_line: LineSink, *, timeout_s: float | None) -> StageOutcome:
        """Hand ``stage``'s lines to ``on_line``: from where the last stage's ended to where
        the next stage starts (or the run ends, for the last one).

        Raises:
            StageFailed: the run exited non-zero while at this stage, or ended without it.
            StageTimedOut: the stage outlived ``timeout_s``; the whole run was stopped.
        """
        started = time.monotonic()
        seen = self._resume(stage, on_line)  # this stage's marker: (stage, how it ended)
        try:
            for line in self.process.lines(deadline_after(timeout_s)):
                found = stage_marker(line)
                if found is not None and seen is not None and found[0] != stage:
                    self._next = (line, found)  # the next stage's first line
                    break
                seen = found if found is not None and found[0] == stage else seen
                on_line(line)
            else:
                if self.process.wait() != 0:
                    raise failure(stage, self.process)
        except TimeoutError:
            raise timed_out(stage, timeout_s) from None
        if seen is None:
            tail = "\n".join(self.process.tail)
            raise StageFailed(f"stage {stage}: dvc exp run did not run it:\n{tail}")
        return StageOutcome(stage, seen[1], time.monotonic() - started)

    def _resume(self, stage: str, on_line: LineSink) -> tuple[str, Ended] | None:
        """Hand on the line the previous stage stopped at; its marker when it is ``stage``'s."""
        if self._next is None:
            return None
        line, found = self._next
        self._next = None
        on_line(line)
        return found if found[0] == stage else None

    def finish(self) -> None:
        """Hand nothing more out; stop the run if it is still going (a stage failed)."""
        self.process.stop()
