"""The pipeline as a Prefect flow: one task per DVC stage, run in order by ``dvc repro``, so
DVC's cache decides what reruns; the first failing stage stops the flow with its own error."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from prefect import flow, get_run_logger, task
from prefect.runtime import flow_run

from components import config as cfg
from components import tracking
from components.errors import ParamsError, VeiltuneError

STAGES = (
    "ingest", "base_model", "anonymize", "risk", "review", "gate", "train", "evaluate", "audit",
    "register", "export",
)  # fmt: skip
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


@task(task_run_name="dvc-repro-{stage}")
def run_stage(stage: str, env: dict[str, str]) -> None:
    """Run one DVC stage (skipped by DVC when nothing it depends on changed)."""
    logger = get_run_logger()
    completed = subprocess.run(
        ["dvc", "repro", "--single-item", stage],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    tail = "\n".join(
        (completed.stdout + completed.stderr).strip().splitlines()[-_OUTPUT_TAIL_LINES:]
    )
    if completed.returncode != 0:
        raise StageFailed(f"stage {stage} failed (exit {completed.returncode}):\n{tail}")
    logger.info("stage %s done:\n%s", stage, tail)


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
            ``{"train.max_steps": 5}``; validated before anything runs.
        corpus: path of a JSONL corpus to ingest (sets ``ingest.corpus_path``).
    """
    selected = _stage_list(stages)
    params_path = Path("params.yaml")
    changes = {**(overrides or {}), **({"ingest.corpus_path": corpus} if corpus else {})}
    if changes:
        cfg.write_params(params_path, cfg.apply_overrides(cfg.read_params(params_path), changes))
    experiment = cfg.load_stage_config(params_path, "register").experiment
    parent = tracking.start_pipeline_run(
        tracking.configure_tracking(experiment), {"prefect.flow_run_id": str(flow_run.id)}
    )
    env = {**os.environ, tracking.PARENT_RUN_ENV: parent}
    try:
        for stage in selected:
            run_stage(stage, env)
    except BaseException:
        tracking.finish_pipeline_run(parent, status="FAILED")
        raise
    tracking.finish_pipeline_run(parent)
    return selected


def serve(name: str) -> None:
    """Serve the flow as a deployment; runs started from the Prefect UI execute here."""
    pipeline.serve(name=name, description=pipeline.__doc__)
