"""MLflow tracking: one parent run per pipeline run, a nested run per stage.

Stages run as separate processes (DVC calls them one by one), so the parent run is found
through ``VEILTUNE_PARENT_RUN_ID`` (set by the Prefect flow, which opens and closes it) or a
small state file that the first stage of a pipeline run writes and the export stage, the
last one, removes. A parent found through the state file is RUNNING only while one of its
stages runs: each stage ends it again (FAILED, and forgotten, when the stage failed), so a
stage run by hand, or a ``dvc repro`` that stops before export, leaves no run RUNNING. The
next stage reopens it if it ended less than ``REOPEN_WINDOW_S`` ago; later, a new pipeline
run begins.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from components.core import headline, paths, tracking_server
from components.core.errors import BackendError
from components.core.lineage import sha256_file, sha256_text

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_ARTIFACT_ROOT = "mlartifacts"
PARENT_RUN_ENV = "VEILTUNE_PARENT_RUN_ID"
PIPELINE_STATE = Path(".veiltune") / "pipeline_run.json"
PIPELINE_KIND = "pipeline"  # the `veiltune.kind` tag of a parent run
# DVC starts each stage as soon as the previous one ends: a longer gap is a new pipeline run.
REOPEN_WINDOW_S = 600
# MLflow 3's UI shows an experiment without this tag as a GenAI one (traces, latency, tokens:
# "No data"); veiltune's runs are model training, which this kind shows (runs, metrics).
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"


# What the tracking store's errors mean, and what to do about them.
_STORE_ADVICE = {
    "database is locked": "another process (an MLflow UI, a second pipeline run) holds it; "
    "wait for it to finish or stop it, then run again",
    "readonly database": "it is read-only; make the file and its folder writable (SQLite "
    "writes a journal beside it) or set MLFLOW_TRACKING_URI to a writable store",
    "unable to open database": "it cannot be opened; check that its folder exists and is "
    "writable, or set MLFLOW_TRACKING_URI",
    "disk i/o error": "the disk failed or is full; free space and run again",
}


def tracking_uri(root: Path = Path(".")) -> str:
    """The store MLflow writes to: ``MLFLOW_TRACKING_URI``, or ``mlflow.db`` in the workspace
    ``root`` (a command's default: the working directory)."""
    # An absolute path: MLflow caches stores by URI, and a relative one changes with the cwd.
    store = root / DEFAULT_TRACKING_URI.removeprefix("sqlite:///")
    return os.environ.get("MLFLOW_TRACKING_URI", f"sqlite:///{store.resolve()}")


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Translate a failing tracking store (locked, read-only, missing; a remote server or its
    database gone) into one ``BackendError`` naming the store and what to do, instead of a
    traceback.
    Any other error passes through unchanged (nothing is imported unless one happens)."""
    try:
        yield
    except Exception as exc:
        _raise_if_server_failed(exc)
        advice = _store_advice(exc)
        if advice is None:
            raise
        # SQLAlchemy's first line reads "(sqlite3.OperationalError) database is locked".
        message = re.sub(r"^\([\w.]+\)\s*", "", str(getattr(exc, "orig", None) or exc))
        reason = message.splitlines()[0] if message else type(exc).__name__
        raise BackendError(f"MLflow store {tracking_uri()}: {reason}; {advice}") from exc


def _raise_if_server_failed(exc: Exception) -> None:
    """A remote server (the team's) that stopped answering, or whose database did, mid-stage:
    one error naming it, instead of the client's traceback."""
    uri = tracking_uri()
    if not tracking_server.is_remote(uri) or not _server_failure(exc):
        return
    text = str(exc).strip()
    reason = text.splitlines()[0][:300] if text else type(exc).__name__
    raise BackendError(
        f"MLflow server {uri}: {reason}; run the stage again once the server and its "
        "database answer"
    ) from exc


def _server_failure(exc: Exception) -> bool:
    """The server unreachable (after the client's retries) or failing (5xx); not a request
    it refused for what it asked (4xx), which stays the stage's own error."""
    library = type(exc).__module__.split(".")[0]
    if library in ("requests", "urllib3"):
        return True
    if library != "mlflow":
        return False
    if str(exc).startswith("API request to"):  # MLflow's words when its retries ran out
        return True
    status = getattr(exc, "get_http_status_code", lambda: None)()
    return isinstance(status, int) and status >= 500


def _store_advice(exc: Exception) -> str | None:
    """What to do about a store error of SQLAlchemy's or MLflow's; None for anything else."""
    if not type(exc).__module__.startswith(("sqlalchemy", "mlflow")):
        return None
    text = str(getattr(exc, "orig", None) or exc).lower()
    return next((advice for key, advice in _STORE_ADVICE.items() if key in text), None)


def configure_tracking(experiment: str, root: Path = Path(".")) -> str:
    """Point MLflow at the store of the workspace ``root`` and return the experiment's id."""
    import mlflow

    uri = tracking_uri(root)
    if tracking_server.is_remote(uri):
        tracking_server.check_server(uri)
    mlflow.set_tracking_uri(uri)
    found = mlflow.get_experiment_by_name(experiment)
    if found is not None:
        # An experiment made before veiltune set its kind; a kind a user chose stays.
        if EXPERIMENT_KIND_TAG not in found.tags:
            mlflow.MlflowClient().set_experiment_tag(
                found.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND
            )
        return str(found.experiment_id)
    tags = {EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
    if tracking_server.is_remote(uri):  # the server's artifact store (proxied, for a team)
        return str(mlflow.create_experiment(experiment, tags=tags))
    artifact_root = (root / DEFAULT_ARTIFACT_ROOT).resolve().as_uri()
    return str(mlflow.create_experiment(experiment, artifact_location=artifact_root, tags=tags))


def start_pipeline_run(experiment_id: str, tags: dict[str, str] | None = None) -> str:
    """Open a parent run for one pipeline run and return its id (the run stays open)."""
    from mlflow.tracking import MlflowClient

    run = MlflowClient().create_run(
        experiment_id,
        run_name=f"pipeline-{time.strftime('%Y%m%d-%H%M%S')}",
        tags={"veiltune.kind": PIPELINE_KIND, **(tags or {})},
    )
    return str(run.info.run_id)


def pipeline_run_id(experiment_id: str, root: Path = Path(".")) -> str:
    """The parent run of the pipeline run in progress (RUNNING) in the workspace ``root``,
    opening one if there is none."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    if os.environ.get(PARENT_RUN_ENV):
        return os.environ[PARENT_RUN_ENV]
    state = root / PIPELINE_STATE
    if state.is_file():
        run_id = str(json.loads(state.read_text(encoding="utf-8"))["run_id"])
        client = MlflowClient()
        try:
            info = client.get_run(run_id).info
        except MlflowException:  # a deleted run or another store: open anew
            info = None
        if info is not None and _continues(info.status, info.end_time):
            client.update_run(run_id, status="RUNNING")
            return run_id
    run_id = start_pipeline_run(experiment_id)
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"run_id": run_id}), encoding="utf-8")
    return run_id


def _continues(status: str, end_time: int | None) -> bool:
    """Whether a stage starting now belongs to the pipeline run of this parent."""
    if status == "RUNNING":
        return True
    ended_ago = time.time() - (end_time or 0) / 1000
    return status == "FINISHED" and ended_ago < REOPEN_WINDOW_S


def finish_pipeline_run(run_id: str, status: str = "FINISHED", *, root: Path = Path(".")) -> None:
    """Close the parent run and forget it (in the workspace ``root``), so the next pipeline
    run opens a new one."""
    from mlflow.tracking import MlflowClient

    MlflowClient().set_terminated(run_id, status=status)
    state = root / PIPELINE_STATE
    if state.is_file() and not os.environ.get(PARENT_RUN_ENV):
        state.unlink()


@contextlib.contextmanager
def stage_run(stage: str, experiment: str, *, root: Path) -> Iterator[Any]:
    """A nested MLflow run for one stage under the pipeline's parent run, in the store of the
    workspace ``root`` (unless ``MLFLOW_TRACKING_URI`` names another)."""
    import mlflow
    from mlflow.tracking import MlflowClient

    experiment_id = configure_tracking(experiment, root)
    parent = pipeline_run_id(experiment_id, root)
    own_parent = not os.environ.get(PARENT_RUN_ENV)  # the flow ends its own parent
    try:
        with mlflow.start_run(
            experiment_id=experiment_id,
            run_name=stage,
            parent_run_id=parent,
            tags={"veiltune.stage": stage},
        ) as run:
            yield run
    except BaseException:
        if own_parent:
            finish_pipeline_run(parent, status="FAILED", root=root)
        raise
    # The parent run, not metrics/headline.json: that file is register's declared output.
    metrics, params = headline.read_headline_inputs(root / paths.METRICS_DIR, root / paths.PARAMS)
    summarize_pipeline_run(parent, metrics, params=params)
    if own_parent:
        MlflowClient().set_terminated(parent, status="FINISHED")


def summarize_pipeline_run(
    run_id: str, metrics: dict[str, dict[str, Any]], *, params: dict[str, Any]
) -> None:
    """Put the pipeline's headline results on its parent run: verdicts and utility as
    metrics (a flag as 1 or 0), the params that shaped them, and the verdicts as short tags
    the experiment's run list shows."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    results = headline.headline_metrics(metrics, params)
    now = int(time.time() * 1000)
    numbers = [
        Metric(key, float(value), now, 0)
        for key, value in results.items()
        if isinstance(value, int | float)
    ]
    # A param is written once: a run that already holds one keeps it.
    logged = client.get_run(run_id).data.params
    new = [Param(k, v) for k, v in headline.headline_params(params).items() if k not in logged]
    tags = [RunTag(k, v) for k, v in headline.headline_tags(results).items()]
    client.log_batch(run_id, metrics=numbers, params=new, tags=tags)


def nested_runs(run_id: str) -> int:
    """How many stage runs ran under the parent run ``run_id``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    experiment = client.get_run(run_id).info.experiment_id
    found = client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{run_id}'")
    return len(found)


def results_run(run_id: str) -> str:
    """The run that holds a finished pipeline run's results: ``run_id`` when a stage ran
    under it; else (every stage skipped: DVC had nothing to do) the latest earlier pipeline
    run under which one did, and the empty ``run_id`` is deleted. ``run_id`` when no
    earlier one exists."""
    from mlflow.tracking import MlflowClient

    if nested_runs(run_id):
        return run_id
    client = MlflowClient()
    experiment = client.get_run(run_id).info.experiment_id
    pipelines = client.search_runs(
        [experiment],
        f"tags.`veiltune.kind` = '{PIPELINE_KIND}'",
        order_by=["attributes.start_time DESC"],
    )
    earlier = next(
        (
            r.info.run_id
            for r in pipelines
            if r.info.run_id != run_id and nested_runs(r.info.run_id)
        ),
        None,
    )
    if earlier is None:
        return run_id
    client.delete_run(run_id)
    return earlier


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
    _flatten(metrics, prefix, out=flat)
    if flat:
        mlflow.log_metrics(flat)


def _flatten(value: Any, key: str, *, out: dict[str, float]) -> None:
    if isinstance(value, int | float):  # bools too: passed -> 1.0
        out[key] = float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{key}.{k}" if key else str(k), out=out)


def log_corpus_input(
    corpus: Path, conversation_ids: Sequence[str], *, name: str, context: str
) -> str:
    """Record the conversations the active run read as an MLflow dataset input: the corpus
    file's path, a digest of its content and of the ids read, and no text (rows may hold PI).

    Args:
        context: MLflow's input context, e.g. ``training`` or ``evaluation``.

    Returns:
        The digest (32 hex digits of a sha256; the corpus file's own sha256 is a tag).
    """
    import mlflow
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset

    corpus_sha256 = sha256_file(corpus)
    digest = sha256_text("\n".join([corpus_sha256, *sorted(conversation_ids)]))[:32]
    with warnings.catch_warnings():
        # MLflow registers its local-file source twice (schemes "" and "file"), then warns
        # that a path matches both: the same class either way.
        warnings.filterwarnings("ignore", "The specified dataset source can be interpreted")
        source = resolve_dataset_source(corpus.as_posix())
    # MetaDataset's stub declares `profile` abstract; the class defines it (None: no rows).
    dataset = MetaDataset(source, name=name, digest=digest)  # type: ignore[abstract]
    tags = {"corpus_sha256": corpus_sha256, "n_conversations": str(len(conversation_ids))}
    mlflow.log_input(dataset, context=context, tags=tags)
    return digest
