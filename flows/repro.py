"""One stage run in the workspace by ``dvc repro``, and the team's DVC remote: with one, a
stage first looks there for the outputs of its exact inputs, and pushes what it computed,
so a worker restores what another worker computed instead of computing it again
(docs/team.md).

DVC does the matching: ``dvc repro --pull`` pulls the remote's run cache (one entry per stage
run: its command, the hashes of its deps and params, and its outputs) and checks out the
outputs of an entry whose inputs match; ``dvc push --run-cache`` uploads the entries and the
outputs they name. Raw text never travels: ingest's outputs are uncached and persistent, so
DVC keeps that stage out of the run cache, and every worker ingests for itself (with the
team's salt, ``VEILTUNE_SALT_FILE``, to the same bytes).
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from prefect import get_run_logger

from components.core import tracking
from components.core.dvc_cli import Remote, default_remote, dvc_command, dvc_environment
from components.stages import BY_NAME, STAGES
from flows.stage_process import TAIL_LINES, LineSink, StageFailed, StageOutcome, run_streamed

logger = logging.getLogger(__name__)


def stage_environment(base: Mapping[str, str], parent_run_id: str) -> dict[str, str]:
    """The environment of ``dvc repro`` and the stage commands it runs.

    This interpreter's ``bin`` comes first on ``PATH`` (``dvc_environment``): ``veiltune
    serve`` may run in a shell that never activated the venv.
    """
    return {**dvc_environment(base), tracking.PARENT_RUN_ENV: parent_run_id}


def stage_command(stage: str, *, pull: bool = False) -> list[str]:
    """The argument list that reruns one stage (DVC skips it when nothing changed; with
    ``pull``, the default remote's run cache is searched first)."""
    return dvc_command("repro", *(["--pull"] if pull else []), "--single-item", stage)


def repro_stage(
    stage: str,
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    on_line: Callable[[str], None] = logger.info,
    timeout_s: float | None = None,
    remote: Remote | None = None,
) -> StageOutcome:
    """Run ``dvc repro --single-item <stage>``, each output line to ``on_line`` as it comes;
    with a ``remote``, restore the stage from it when it holds these inputs' outputs, and
    push what the stage computed.

    Raises:
        StageFailed: DVC exited non-zero (the message carries its last lines), the stage
            outlived ``timeout_s``, or the push to ``remote`` failed.
    """
    # `--pull` takes a stage whose outputs are missing but whose inputs match its lock
    # entry as unchanged, and checks its outputs out: for raw ones, never cached, that
    # leaves them missing; so a stage with raw outputs runs as without a remote.
    pull = remote is not None and (stage not in BY_NAME or BY_NAME[stage].shared)
    command = stage_command(stage, pull=pull)
    outcome = run_streamed(stage, command, env=env, on_line=on_line, cwd=cwd, timeout_s=timeout_s)
    if remote is not None:
        push_outputs(remote, [stage], env=env, on_line=on_line, cwd=cwd)
    return outcome


def team_remote() -> Remote | None:
    """The workspace's default DVC remote, logged: each stage then restores from it what a
    worker computed before and pushes what it computes."""
    remote = default_remote(Path.cwd())
    if remote is not None:
        get_run_logger().info("%s: stages restore from it and push to it", remote)
    return remote


def push_command(remote: Remote, stages: Sequence[str]) -> list[str]:
    """``dvc push --run-cache -r NAME STAGE...``: the stages' outputs and the run cache."""
    return dvc_command("push", "--run-cache", "-r", remote.name, *stages)


def push_outputs(
    remote: Remote,
    stages: Sequence[str],
    *,
    env: Mapping[str, str],
    on_line: LineSink,
    cwd: Path | None = None,
) -> None:
    """Push what ``stages`` computed (and the run cache) to ``remote``; DVC's lines to
    ``on_line``.

    Raises:
        StageFailed: the push failed (the remote unreachable, full, or refusing this
            account): its outputs stay in this workspace, the message names the remote and
            carries DVC's last lines.
    """
    done = subprocess.run(
        push_command(remote, stages), env=dict(env), cwd=cwd,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = (done.stdout + done.stderr).splitlines()
    for line in lines:
        on_line(line)
    error = f"exit {done.returncode}" if done.returncode else _push_metrics_files(remote, cwd)
    if error:
        tail = "\n".join(lines[-TAIL_LINES:])
        raise StageFailed(
            f"stage {', '.join(stages)}: its outputs are in this workspace, but pushing them "
            f"to the {remote} failed ({error}); check that this worker can write there "
            f"(`dvc push -r {remote.name}`):\n{tail}"
        )


def _push_metrics_files(remote: Remote, root: Path | None) -> str | None:
    """Push the run cache's copies of the stages' metrics and plots files; what went wrong,
    or None.

    They are uncached outputs (``cache: false``, committed to git instead). DVC saves them
    into its cache with each run-cache entry, and ``dvc repro --pull`` needs them to restore
    the entry, but ``dvc push --run-cache`` leaves them out (DVC 3.67): without them the next
    worker would run every stage again. Only these files go: numbers and hashes, never text
    (no other uncached output is in an entry: ingest's raw ones keep it out of the run cache).
    """
    from dvc.repo import Repo
    from dvc_data.hashfile.hash_info import HashInfo

    numbers = {a.path for s in STAGES for a in s.metrics} | {
        p.path for s in STAGES for p in s.plots
    }
    try:
        with Repo(str(root or Path.cwd())) as repo:
            named = set()
            for entry in Path(repo.cache.legacy.path, "runs").glob("*/*/*"):
                lock = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
                for out in lock.get("outs", []):
                    if out["path"] in numbers and "md5" in out:  # DVC 2's entries: no hash
                        named.add(HashInfo(out.get("hash", "md5-dos2unix"), out["md5"]))
            here = {h for h in named if _cache_of(repo, h).exists(h.value)}
            failed = repo.cloud.push(here, remote=remote.name).failed
    except Exception as exc:  # DVC's own error, whatever its class, is the message
        return f"{type(exc).__name__}: {exc}"
    return f"{len(failed)} metrics files not pushed" if failed else None


def _cache_of(repo: Any, hash_info: Any) -> Any:
    return repo.cache.legacy if hash_info.name == "md5-dos2unix" else repo.cache.local
