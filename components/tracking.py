"""MLflow tracking: one parent run per pipeline run, a nested run per stage.

Stages run as separate processes (DVC calls them one by one), so the parent run is found
through ``VEILTUNE_PARENT_RUN_ID`` (set by the Prefect flow) or a small state file that the
first stage of a pipeline run writes and the export stage, the last one, closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_ARTIFACT_ROOT = "mlartifacts"
PARENT_RUN_ENV = "VEILTUNE_PARENT_RUN_ID"
PIPELINE_STATE = Path(".veiltune") / "pipeline_run.json"


def configure_tracking(experiment: str) -> str:
    """Point MLflow at the project's store and return the experiment's id."""
    import mlflow

    # An absolute path: MLflow caches stores by URI, and a relative one changes with the cwd.
    default = f"sqlite:///{Path(DEFAULT_TRACKING_URI.removeprefix('sqlite:///')).resolve()}"
    mlflow.set_tracking_uri(os.environ.get("MLFLOW_TRACKING_URI", default))
    found = mlflow.get_experiment_by_name(experiment)
    if found is not None:
        return str(found.experiment_id)
    artifact_root = Path(DEFAULT_ARTIFACT_ROOT).resolve().as_uri()
    return str(mlflow.create_experiment(experiment, artifact_location=artifact_root))


def start_pipeline_run(experiment_id: str, tags: dict[str, str] | None = None) -> str:
    """Open a parent run for one pipeline run and return its id (the run stays open)."""
    from mlflow.tracking import MlflowClient

    run = MlflowClient().create_run(
        experiment_id,
        run_name=f"pipeline-{time.strftime('%Y%m%d-%H%M%S')}",
        tags={"veiltune.kind": "pipeline", **(tags or {})},
    )
    return str(run.info.run_id)


def pipeline_run_id(experiment_id: str) -> str:
    """The parent run of the pipeline run in progress, opening one if there is none."""
    from mlflow.tracking import MlflowClient

    if os.environ.get(PARENT_RUN_ENV):
        return os.environ[PARENT_RUN_ENV]
    if PIPELINE_STATE.is_file():
        run_id = str(json.loads(PIPELINE_STATE.read_text(encoding="utf-8"))["run_id"])
        with contextlib.suppress(Exception):  # a deleted run or another store: open anew
            if MlflowClient().get_run(run_id).info.status == "RUNNING":
                return run_id
    run_id = start_pipeline_run(experiment_id)
    PIPELINE_STATE.parent.mkdir(parents=True, exist_ok=True)
    PIPELINE_STATE.write_text(json.dumps({"run_id": run_id}), encoding="utf-8")
    return run_id


def finish_pipeline_run(run_id: str, status: str = "FINISHED") -> None:
    """Close the parent run and forget it, so the next pipeline run opens a new one."""
    from mlflow.tracking import MlflowClient

    MlflowClient().set_terminated(run_id, status=status)
    if PIPELINE_STATE.is_file() and not os.environ.get(PARENT_RUN_ENV):
        PIPELINE_STATE.unlink()


@contextlib.contextmanager
def stage_run(stage: str, experiment: str) -> Iterator[Any]:
    """A nested MLflow run for one stage under the pipeline's parent run."""
    import mlflow

    experiment_id = configure_tracking(experiment)
    parent = pipeline_run_id(experiment_id)
    with mlflow.start_run(
        experiment_id=experiment_id,
        run_name=stage,
        parent_run_id=parent,
        tags={"veiltune.stage": stage},
    ) as run:
        yield run


def log_flat_params(prefix: str, values: dict[str, Any]) -> None:
    """Log a config's fields as ``prefix.key`` params (lists and dicts as JSON)."""
    import mlflow

    flat = {
        f"{prefix}.{k}": json.dumps(v, sort_keys=True) if isinstance(v, list | dict) else v
        for k, v in values.items()
    }
    mlflow.log_params({k: str(v)[:6000] for k, v in flat.items()})


def log_numeric_metrics(metrics: dict[str, Any], prefix: str = "") -> None:
    """Log the numeric leaves of a (nested) metrics dict as ``a.b.c`` keys."""
    import mlflow

    flat: dict[str, float] = {}
    _flatten(metrics, prefix, flat)
    if flat:
        mlflow.log_metrics(flat)


def _flatten(value: Any, key: str, out: dict[str, float]) -> None:
    if isinstance(value, int | float):  # bools too: passed -> 1.0
        out[key] = float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{key}.{k}" if key else str(k), out)
