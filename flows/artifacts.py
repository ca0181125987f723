"""What a flow run shows on its Prefect artifacts page: per stage a markdown summary and a
table of its metrics, links to the MLflow run and the bundle, and one summary of the run.

Built from the stages' metrics files only (``metrics/<stage>.json``: counts, scores, hashes
and verdicts, never raw text); a failed stage's error, which may quote its input, stays in
its task run's state and log. Keys are stable (lowercase, dashes), so each is one artifact
with a version per run in the UI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)
from prefect.runtime import flow_run

from components.core import paths
from components.core.headline import (
    DEFAULT_UTILITY_METRIC,
    headline_metrics,
    read_headline_inputs,
    verdict_line,
)

# The metric that says whether a stage's check passed.
VERDICTS = {"gate": "passed", "audit": "passed", "register": "champion"}
MLFLOW_UI_ENV = "VEILTUNE_MLFLOW_UI_URL"
DEFAULT_MLFLOW_UI = "http://127.0.0.1:5000"  # `make mlflow-ui`
_KEY_METRICS = 8


@dataclass(frozen=True)
class StageReport:
    """One stage of a flow run as its artifacts show it."""

    stage: str
    state: str  # Ran, Skipped, Restored, Failed
    seconds: float | None = None
    metrics: Mapping[str, Any] | None = None


def artifact_key(*parts: str) -> str:
    """``("base_model", "summary")`` → ``base-model-summary``."""
    return "-".join(p.lower().replace("_", "-") for p in parts)


def flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested metrics as dotted keys; lists of scalars joined, other lists counted."""
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            scalars = all(not isinstance(v, Mapping | list) for v in value)
            flat[name] = ", ".join(map(str, value)) if scalars else f"{len(value)} items"
        else:
            flat[name] = value
    return flat


def verdict(report: StageReport) -> str:
    """``passed``/``FAILED`` for a stage with a check (gate, audit, register), else ``""``."""
    key = VERDICTS.get(report.stage)
    if key is None or report.metrics is None or key not in report.metrics:
        return ""
    passed = bool(report.metrics[key])
    if report.stage == "register":
        return "champion" if passed else "candidate"
    return "passed" if passed else "FAILED"


def _format(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _key_metrics(metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The first top-level numbers and flags: what a glance needs (hashes left out)."""
    scalar = [(k, v) for k, v in metrics.items() if isinstance(v, int | float | bool)]
    return [(k, _format(v)) for k, v in scalar[:_KEY_METRICS]]


def stage_markdown(report: StageReport) -> str:
    """The stage's summary: what happened, its verdict, its key metrics."""
    took = "" if report.seconds is None else f" in {report.seconds:.1f} s"
    state = {
        "Ran": f"ran{took}",
        "Skipped": "skipped: nothing it depends on changed (metrics of its last run)",
        "Restored": "restored: the run cache held its outputs for exactly these inputs "
        "(metrics of the run that computed them, here or on another worker)",
        # Its error stays in the task run's state and log: stage output may quote its input.
        "Failed": "**failed**: its error is the task run's state message",
    }.get(report.state, report.state)
    lines = [f"## {report.stage}: {state}", ""]
    if verdict(report):
        lines += [f"Check: **{verdict(report)}**", ""]
    if report.metrics:
        lines += ["| metric | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in _key_metrics(report.metrics)]
    elif report.state != "Failed":
        lines.append("No metrics file.")
    return "\n".join(lines)


def run_markdown(reports: Sequence[StageReport], header: Sequence[str]) -> str:
    """The whole run at a glance: ``header`` lines, then one row per stage."""
    rows = [
        f"| {r.stage} | {r.state} | {verdict(r)} | "
        f"{'' if r.seconds is None else f'{r.seconds:.1f}'} |"
        for r in reports
    ]
    table = ["| stage | state | check | seconds |", "| --- | --- | --- | --- |", *rows]
    return "\n".join(["# veiltune pipeline run", "", *header, "", *table])


def mlflow_run_url(tracking_uri: str, experiment_id: str, *, run_id: str) -> str:
    """The MLflow UI's page of a run: the tracking server itself, or ``make mlflow-ui``'s."""
    base = tracking_uri if tracking_uri.startswith(("http://", "https://")) else None
    base = (base or os.environ.get(MLFLOW_UI_ENV) or DEFAULT_MLFLOW_UI).rstrip("/")
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"


def publish_stage(report: StageReport) -> None:
    """The stage's markdown summary and, when it has metrics, their table."""
    create_markdown_artifact(
        stage_markdown(report),
        key=artifact_key(report.stage, "summary"),
        description=f"veiltune stage {report.stage}: {report.state}",
    )
    if report.metrics:
        rows = [{"metric": k, "value": _format(v)} for k, v in flatten(report.metrics).items()]
        create_table_artifact(
            rows,
            key=artifact_key(report.stage, "metrics"),
            description=f"metrics/{report.stage}.json",
        )


def publish_link(key: str, link: str, *, text: str) -> None:
    create_link_artifact(link, link_text=text, key=key, description=text)


def publish_run(reports: Sequence[StageReport], header: Sequence[str]) -> None:
    create_markdown_artifact(
        run_markdown(reports, header),
        key="pipeline-summary",
        description="every stage of this veiltune run",
    )


def run_header(name: str | None, changes: Mapping[str, Any], *, link: str) -> list[str]:
    """The run page's first lines: the flow run, its MLflow run, and where it ran (the
    workspace, or a DVC experiment ``name`` with its ``changes``)."""
    lines = [f"Flow run: `{flow_run.name}`. MLflow: [pipeline run]({link})."]
    if name is None:
        return [*lines, "Ran in the workspace (no overrides)."]
    sets = ", ".join(f"`{k}={v!r}`" for k, v in changes.items())
    return [
        *lines,
        f"DVC experiment **{name}** with {sets}; the workspace is unchanged.",
        f"Compare: `dvc exp show`. Take its results (bundle included): `dvc exp apply {name}`.",
    ]


def run_verdict(
    name: str | None, reports: Sequence[StageReport], *, params: Mapping[str, Any]
) -> str:
    """The run's verdict: from the workspace's metrics files (a stage DVC skipped holds its
    results there), or from what an experiment's stages returned."""
    if name is None:
        metrics, params = read_headline_inputs(paths.METRICS_DIR, paths.PARAMS)
    else:
        metrics = {r.stage: dict(r.metrics) for r in reports if r.metrics}
    metric = (params.get("register") or {}).get("utility_metric", DEFAULT_UTILITY_METRIC)
    return verdict_line(headline_metrics(metrics, params), str(metric))
