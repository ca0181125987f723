"""The pipeline as a Prefect flow: one task per DVC stage, run in order by ``dvc repro``, so
DVC's cache decides what reruns; the first failing stage stops the flow with its own error."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from prefect import flow, get_run_logger, task
from prefect.context import FlowRunContext
from prefect.runtime import deployment, flow_run

from components import stages as registry
from components.core import tracking
from components.core.config import write_params
from components.core.dvc_cli import dvc_command
from components.core.errors import ParamsError, VeiltuneError
from flows.overrides import (
    allowed_from_environment,
    export_allowed,
    override_changes,
    parse_allowed,
    protected_prefix,
    refuse_protected_overrides,
)

STAGES = tuple(stage.name for stage in registry.STAGES)
_OUTPUT_TAIL_LINES = 25


class StageFailed(VeiltuneError):
    """A DVC stage exited non-zero; the message carries the stage's own error."""


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``["train.max_steps=5"]`` → ``{"train.max_steps": 5}`` (values parsed as YAML)."""
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ParamsError(f"override {pair!r}: expected KEY=VALUE, e.g. train.max_steps=5")
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def _stage_list(stages: Sequence[str] | None) -> list[str]:
    if not stages:
        return list(STAGES)
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ParamsError(f"unknown stage {unknown[0]!r}; stages: {', '.join(STAGES)}")
    return [s for s in STAGES if s in stages]


def stage_environment(base: Mapping[str, str], parent_run_id: str) -> dict[str, str]:
    """The environment of ``dvc repro`` and the stage commands it runs.

    This interpreter's ``bin`` comes first on ``PATH``: dvc.yaml's commands call ``veiltune``
    by name, and ``veiltune serve`` may run in a shell that never activated the venv.
    """
    path = os.pathsep.join(p for p in (str(Path(sys.executable).parent), base.get("PATH")) if p)
    return {**base, "PATH": path, tracking.PARENT_RUN_ENV: parent_run_id}


def stage_command(stage: str) -> list[str]:
    """The argument list that reruns one stage (DVC skips it when nothing changed)."""
    return dvc_command("repro", "--single-item", stage)


def repro_stage(stage: str, env: Mapping[str, str], cwd: Path | None = None) -> str:
    """Run ``dvc repro --single-item <stage>``; return its output's tail.

    Raises:
        StageFailed: DVC exited non-zero; the message carries the tail of its output.
    """
    completed = subprocess.run(
        stage_command(stage),
        capture_output=True,
        text=True,
        env=dict(env),
        cwd=cwd,
        check=False,
    )
    tail = "\n".join(
        (completed.stdout + completed.stderr).strip().splitlines()[-_OUTPUT_TAIL_LINES:]
    )
    if completed.returncode != 0:
        raise StageFailed(f"stage {stage} failed (exit {completed.returncode}):\n{tail}")
    return tail


@task(task_run_name="dvc-repro-{stage}")
def run_stage(stage: str, env: dict[str, str]) -> None:
    """Run one DVC stage (skipped by DVC when nothing it depends on changed)."""
    get_run_logger().info("stage %s done:\n%s", stage, repro_stage(stage, env))


def _is_deployment_run() -> bool:
    """Whether this run belongs to a deployment, i.e. was started through the Prefect API/UI."""
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None and context.flow_run.deployment_id:
        return True
    return deployment.id is not None


def set_run_params(params_path: Path, changes: dict[str, Any]) -> None:
    """Write this run's overrides to params.yaml and log each one (key, old and new value).

    Raises:
        ParamsError: an override is not allowed (a privacy control changed by a deployment run
            that ``veiltune serve --allow-overrides`` did not allow) or not valid; params.yaml
            is then left as it was.
    """
    refuse_protected_overrides(
        changes, deployment_run=_is_deployment_run(), allowed=allowed_from_environment(os.environ)
    )
    params = registry.load_params(params_path)
    write_params(params_path, registry.apply_overrides(params, changes))
    logger = get_run_logger()
    for change in override_changes(params, changes):
        level = logging.WARNING if protected_prefix(change.key) else logging.INFO
        logger.log(level, "override %s: %r -> %r", change.key, change.old, change.new)


@flow(name="veiltune-pipeline", log_prints=False)
def pipeline(
    stages: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
    corpus: str | None = None,
) -> list[str]:
    """Run the pipeline's stages in order.

    Args:
        stages: which stages to run (default all), always in pipeline order.
        overrides: dotted params to set in params.yaml for this run, e.g.
            ``{"train.max_steps": 5}``; validated before anything runs. From the UI, privacy
            controls (anonymize, risk, gate, audit, train.corpus, export.pi_scan_min_chars)
            only where ``veiltune serve --allow-overrides`` allows them.
        corpus: path of a JSONL corpus to ingest (sets ``ingest.corpus_path``).
    """
    selected = _stage_list(stages)
    params_path = Path("params.yaml")
    changes = {**(overrides or {}), **({"ingest.corpus_path": corpus} if corpus else {})}
    if changes:
        set_run_params(params_path, changes)
    experiment = registry.stage_context(params_path).experiment
    parent = tracking.start_pipeline_run(
        tracking.configure_tracking(experiment), {"prefect.flow_run_id": str(flow_run.id)}
    )
    env = stage_environment(os.environ, parent)
    try:
        for stage in selected:
            run_stage(stage, env)
    except BaseException:
        tracking.finish_pipeline_run(parent, status="FAILED")
        raise
    tracking.finish_pipeline_run(parent)
    return selected


def serve(name: str, allow_overrides: Sequence[str] = ()) -> None:
    """Serve the flow as a deployment; runs started from the Prefect UI execute here.

    Args:
        name: the deployment's name.
        allow_overrides: protected params (``gate``, ``anonymize.score_threshold``...) that
            runs of this deployment may override; they inherit the allowance from this
            process's environment, which no API caller can set.
    """
    allowed = parse_allowed(allow_overrides)
    export_allowed(allowed, os.environ)
    if allowed:
        logging.getLogger(__name__).warning(
            "deployment runs may override privacy controls: %s", ", ".join(allowed)
        )
    pipeline.serve(name=name, description=pipeline.__doc__)
