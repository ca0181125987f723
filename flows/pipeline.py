"""The pipeline as a Prefect flow: one task per DVC stage, run in order by DVC, so DVC's
cache decides what reruns; the first failing stage stops the flow with its own error.

A run without overrides runs ``dvc repro --single-item <stage>`` per stage in the workspace
(``flows/repro.py``: with a team's DVC remote, pulling first and pushing after). A run with
overrides (from the UI, or ``veiltune flow --set``) is a DVC experiment named after the flow
run (``flows/experiment.py``): the workspace's params.yaml is never written. Each task
streams its stage's output to the run's log as it comes, ends Completed, or Completed named
Skipped when DVC found nothing changed, or Restored when DVC's run cache held its outputs,
and publishes its artifacts.
"""

# No `from __future__ import annotations`: Prefect builds the flow's parameter model from its
# annotations in the process that loads the flow from its entrypoint, where names such as
# StageName in a string annotation cannot be resolved.
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.runtime import deployment, flow_run
from prefect.states import Completed, State
from pydantic import BeforeValidator

from components import stages as registry
from components.core import paths, tracking
from components.core.dvc_cli import Remote
from components.core.errors import ParamsError
from components.core.stage import StageContext
from components.export.signing import KEY_ENV, signing_key
from flows.artifacts import (
    StageReport,
    artifact_key,
    mlflow_run_url,
    publish_link,
    publish_run,
    publish_stage,
    run_header,
    run_verdict,
)
from flows.experiment import (
    ExperimentRun,
    copy_paths,
    exp_run_command,
    experiment_metrics,
    experiment_name,
    experiment_ref,
    uncached_outputs,
)
from flows.overrides import (
    RunOverrides,
    allowed_from_environment,
    export_allowed,
    override_changes,
    override_values,
    parse_allowed,
    refuse_unallowed_overrides,
    ui_may_override,
)
from flows.repro import push_outputs, repro_stage, stage_environment, team_remote
from flows.stage_process import StageFailed

__all__ = ["StageFailed", "pipeline", "serve"]

STAGES = tuple(stage.name for stage in registry.STAGES)
# The UI offers the names; the CLI's spelling (base-model) is accepted too.
StageName = Annotated[
    Literal[STAGES],  # type: ignore[valid-type]
    BeforeValidator(lambda v: v.replace("-", "_") if isinstance(v, str) else v),
]
# Seconds a stage may run before it is stopped (its registry entry's; the flow's `timeouts`
# parameter overrides).
DEFAULT_TIMEOUTS_S: Mapping[str, float] = {s.name: s.timeout_s for s in registry.STAGES}
# Runs of the deployment at a time: DVC's lock and the experiments' stash are per workspace.
DEPLOYMENT_CONCURRENCY = 1
BUNDLE = Path("exports") / "bundle.zip"
logger = logging.getLogger(__name__)


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
    names = [s.replace("-", "_") for s in stages]
    unknown = [s for s in names if s not in STAGES]
    if unknown:
        raise ParamsError(f"unknown stage {unknown[0]!r}; stages: {', '.join(STAGES)}")
    return [s for s in STAGES if s in names]


def stage_timeouts(timeouts: Mapping[str, float] | None) -> dict[str, float]:
    """DEFAULT_TIMEOUTS_S with this run's ``timeouts`` over it (stage names checked)."""
    given = {k.replace("-", "_"): v for k, v in (timeouts or {}).items()}
    for stage, seconds in given.items():
        if stage not in STAGES or not seconds > 0:
            raise ParamsError(
                f"timeouts: {stage}={seconds!r}: expected a stage among {', '.join(STAGES)} "
                "and a number of seconds > 0"
            )
    return {**DEFAULT_TIMEOUTS_S, **given}


def workspace_metrics(stage: str) -> dict[str, Any] | None:
    path = paths.metrics_file(stage)
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None


def stage_state(report: StageReport) -> State:
    """Completed, named Skipped or Restored when DVC ran nothing; the report is its result."""
    if report.state == "Skipped":
        return Completed(name="Skipped", message=f"{report.stage}: unchanged", data=report)
    if report.state == "Restored":
        message = f"{report.stage}: outputs restored from the run cache"
        return Completed(name="Restored", message=message, data=report)
    return Completed(message=f"{report.stage}: ran in {report.seconds:.1f} s", data=report)


def result_line(stage: str, metrics: Mapping[str, Any]) -> str:
    """The stage's one summary line, as ``veiltune <stage>`` prints it, and where its
    metrics are: the file, and the table artifact ``publish_stage`` makes of it."""
    where = f"metrics/{stage}.json; artifact {artifact_key(stage, 'metrics')}"
    return f"{registry.BY_NAME[stage].summary(dict(metrics))} ({where})"


def _log_result(stage: str, metrics: Mapping[str, Any] | None) -> None:
    # One line, not the metrics JSON: the run log is read as the pipeline's progress, and
    # the metrics are a table artifact of their own.
    if metrics is not None:
        get_run_logger().info(result_line(stage, metrics))


def _failed(stage: str, exc: StageFailed) -> StageFailed:
    publish_stage(StageReport(stage, "Failed"))
    return exc


@task(task_run_name="dvc-repro-{stage}", cache_policy=NO_CACHE)
def run_stage(stage: str, env: dict[str, str], *, timeout_s: float, remote: Remote | None) -> State:
    """Run one DVC stage in the workspace (skipped by DVC when nothing it depends on changed,
    restored when the run cache holds its outputs)."""
    log = get_run_logger().info
    try:
        outcome = repro_stage(stage, env, on_line=log, timeout_s=timeout_s, remote=remote)
    except StageFailed as exc:
        raise _failed(stage, exc) from None
    metrics = workspace_metrics(stage)
    _log_result(stage, metrics)
    report = StageReport(stage, outcome.ended, outcome.seconds, metrics)
    publish_stage(report)
    return stage_state(report)


@task(task_run_name="dvc-exp-{stage}", cache_policy=NO_CACHE)
def follow_stage(stage: str, run: ExperimentRun, *, timeout_s: float) -> State:
    """One stage of the experiment in progress: its output, live, and how it ended."""
    try:
        outcome = run.follow(stage, get_run_logger().info, timeout_s=timeout_s)
    except StageFailed as exc:
        raise _failed(stage, exc) from None
    return stage_state(StageReport(stage, outcome.ended, outcome.seconds))


@task(task_run_name="experiment-results", cache_policy=NO_CACHE)
def experiment_results(name: str, reports: list[StageReport]) -> list[StageReport]:
    """Each stage's metrics as the experiment committed them: logged and published."""
    ref = experiment_ref(name, Path.cwd())
    done = []
    for report in reports:
        metrics = experiment_metrics(ref, report.stage, cwd=Path.cwd())
        _log_result(report.stage, metrics)
        done.append(StageReport(report.stage, report.state, report.seconds, metrics))
        publish_stage(done[-1])
    return done


def _is_deployment_run() -> bool:
    """Whether this run belongs to a deployment, i.e. was started through the Prefect API/UI."""
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None and context.flow_run.deployment_id:
        return True
    return deployment.id is not None


def check_run_params(params_path: Path, changes: dict[str, Any]) -> None:
    """Check this run's overrides and log each one (key, old and new value); nothing is
    written: the run is an experiment.

    Raises:
        ParamsError: an override is not allowed (a deployment run's key outside the UI's
            allow-list that ``veiltune serve --allow-overrides`` did not allow) or not valid.
    """
    refuse_unallowed_overrides(
        changes, deployment_run=_is_deployment_run(), allowed=allowed_from_environment(os.environ)
    )
    params = registry.load_params(params_path)
    registry.apply_overrides(params, changes)
    logger = get_run_logger()
    for change in override_changes(params, changes):
        level = logging.INFO if ui_may_override(change.key) else logging.WARNING
        logger.log(level, "override %s: %r -> %r", change.key, change.old, change.new)


def check_flow_arguments(
    stages: Sequence[str] | None,
    overrides: Mapping[str, Any] | None,
    *,
    corpus: str | None,
    params_path: Path = paths.PARAMS,
) -> None:
    """``veiltune flow``'s stages and overrides checked by the stage registry and the config
    classes before the flow starts: a bad one is the command's one error line, not a flow
    run that fails (with Prefect's traceback) after a temporary server was started for it.

    Raises:
        ParamsError: an unknown stage, or an override that names no param or a bad value.
    """
    _stage_list(stages)
    changes = run_changes(overrides, corpus)
    if changes:
        registry.apply_overrides(registry.load_params(params_path), changes)


def experiment_environment(
    env: Mapping[str, str], context: StageContext, *, signs: bool
) -> dict[str, str]:
    """``env`` plus the workspace's MLflow store and signing key, by absolute path: an
    experiment runs in ``.dvc/tmp/exps``, where relative ones would name copies (and a key
    made there on first use would be lost with it, so a run that signs makes it here)."""
    extra = {"MLFLOW_TRACKING_URI": tracking.tracking_uri()}
    if not env.get(KEY_ENV):
        key = (context.base_dir / context.configs["export"].signing_key).resolve()
        if signs and not key.exists():
            signing_key(context.configs["export"].signing_key, context.base_dir)  # made here
        if key.exists():
            extra[KEY_ENV] = str(key)
    return {**env, **extra}


def run_in_workspace(
    stages: Sequence[str],
    env: dict[str, str],
    *,
    timeouts: Mapping[str, float],
    reports: list[StageReport],
    remote: Remote | None,
) -> None:
    for stage in stages:
        task_ = run_stage.with_options(retries=registry.BY_NAME[stage].retries)
        reports.append(task_(stage, env, timeout_s=timeouts[stage], remote=remote).result())


def run_experiment(
    name: str,
    stages: Sequence[str],
    *,
    changes: Mapping[str, Any],
    env: dict[str, str],
    timeouts: Mapping[str, float],
    reports: list[StageReport],
    remote: Remote | None,
) -> None:
    copy = copy_paths(Path.cwd(), uncached_outputs(Path("dvc.yaml")))
    command = exp_run_command(name, stages, overrides=changes, copy=copy, pull=bool(remote))
    run = ExperimentRun(command, env)
    try:
        for stage in stages:
            reports.append(follow_stage(stage, run, timeout_s=timeouts[stage]).result())
    finally:
        run.finish()
    if remote is not None:  # the experiment's runs went to this workspace's run cache
        push_outputs(remote, stages, env=env, on_line=get_run_logger().info)
    reports[:] = experiment_results(name, reports)


def run_changes(overrides: Mapping[str, Any] | None, corpus: str | None) -> dict[str, Any]:
    """The run's dotted overrides, ``corpus`` as ``ingest.corpus_path``; a corpus path made
    absolute, since an experiment runs in a copy of the workspace that lacks the file."""
    changes = {**(overrides or {}), **({"ingest.corpus_path": corpus} if corpus else {})}
    if isinstance(changes.get("ingest.corpus_path"), str):
        changes["ingest.corpus_path"] = str(Path(changes["ingest.corpus_path"]).resolve())
    return changes


@flow(name="veiltune-pipeline", log_prints=False)
def pipeline(
    stages: list[StageName] | None = None,
    overrides: RunOverrides | None = None,
    *,
    corpus: str | None = None,
    timeouts: dict[str, float] | None = None,
) -> list[str]:
    """Run the pipeline's stages in order.

    Args:
        stages: which stages to run (default all), always in pipeline order.
        overrides: dotted params for this run, e.g. ``{"train.max_steps": 5}``; validated
            before anything runs. The run is then a DVC experiment named after the flow run
            (params.yaml is not written). From the UI, only the sizes and training
            hyperparameters of ``flows.overrides.UI_OVERRIDABLE`` (the form shows each with
            its type and range; one left empty keeps params.yaml's value), and what
            ``veiltune serve --allow-overrides`` allows besides.
        corpus: path of a JSONL corpus to ingest (sets ``ingest.corpus_path``; from the UI,
            only where ``veiltune serve --allow-overrides ingest.corpus_path`` allows it).
        timeouts: seconds a stage may run before it is stopped, e.g. ``{"train": 7200}``
            (defaults: DEFAULT_TIMEOUTS_S).
    """
    selected = _stage_list(stages)
    limits = stage_timeouts(timeouts)
    changes = run_changes(override_values(overrides), corpus)
    if changes:
        check_run_params(paths.PARAMS, changes)
    context = registry.stage_context(paths.PARAMS)
    experiment_id = tracking.configure_tracking(context.experiment)
    parent = tracking.start_pipeline_run(experiment_id, {"prefect.flow_run_id": str(flow_run.id)})
    link = mlflow_run_url(tracking.tracking_uri(), experiment_id, run_id=parent)
    publish_link("mlflow-run", link, text="MLflow: this run's pipeline run")
    env = stage_environment(os.environ, parent)
    name = experiment_name(flow_run.name, str(flow_run.id)) if changes else None
    remote = team_remote()
    reports: list[StageReport] = []
    try:
        if name is None:
            run_in_workspace(selected, env, timeouts=limits, reports=reports, remote=remote)
        else:
            signs = bool({"register", "export"} & set(selected))
            env = experiment_environment(env, context, signs=signs)
            run_experiment(
                name, selected, changes=changes, env=env, timeouts=limits, reports=reports,
                remote=remote,
            )  # fmt: skip
    except BaseException:
        tracking.finish_pipeline_run(parent, status="FAILED")
        failed = next((s for s in selected if s not in {r.stage for r in reports}), "")
        publish_run([*reports, StageReport(failed, "Failed")], run_header(name, changes, link=link))
        raise
    tracking.finish_pipeline_run(parent)
    link = _results_link(experiment_id, parent, link=link)
    if name is None and "export" in selected and BUNDLE.is_file():
        publish_link(
            "bundle", BUNDLE.resolve().as_uri(), text="The compliance bundle (exports/bundle.zip)"
        )
    verdict = run_verdict(name, reports, params=context.params)
    publish_run(reports, [verdict, *run_header(name, changes, link=link)])
    return selected


def _results_link(experiment_id: str, parent: str, *, link: str) -> str:
    """The link to the MLflow run holding the results: the pipeline's run, unless every
    stage was skipped and its empty run is gone (then the run that produced them, linked)."""
    holder = tracking.results_run(parent)
    if holder == parent:
        return link
    link = mlflow_run_url(tracking.tracking_uri(), experiment_id, run_id=holder)
    publish_link("mlflow-run", link, text="MLflow: the pipeline run that produced these results")
    return link


ENTRYPOINT = "flows/pipeline.py:pipeline"  # the flow, as a worker finds it in its checkout


def serve(name: str, allow_overrides: Sequence[str] = ()) -> None:
    """Serve the flow as a deployment; runs started from the Prefect UI execute here, one at
    a time (a run started while another runs waits for its slot).

    Args:
        name: the deployment's name.
        allow_overrides: params beyond the UI's allow-list (``gate``,
            ``evaluate.judge.model``...) that runs of this deployment may override; they
            inherit the allowance from this process's environment, which no API caller can
            set.
    """
    allowed = parse_allowed(allow_overrides)
    export_allowed(allowed, os.environ)
    if allowed:
        logger.warning(
            "deployment runs may override, beyond the UI's allow-list: %s", ", ".join(allowed)
        )
    pipeline.serve(name=name, description=pipeline.__doc__, global_limit=DEPLOYMENT_CONCURRENCY)


def deploy(name: str, pool: str, *, checkout: Path) -> dict[str, str]:
    """Deploy the flow to the work pool ``pool``: its runs execute on whichever worker takes
    them, in the checkout at ``checkout`` on that worker's machine (each worker machine keeps
    its own clone there, with its own DVC cache), one at a time per deployment.

    What a run may override beyond the UI's allow-list comes from the worker's environment
    (``VEILTUNE_ALLOW_OVERRIDES``, set where the worker is started); the team stack's pool
    lets no run set a worker's environment (``veiltune.team.prefect_server``).
    """
    source = pipeline.from_source(source=str(checkout.resolve()), entrypoint=ENTRYPOINT)
    deployment = source.deploy(  # type: ignore[union-attr]
        name=name,
        work_pool_name=pool,
        description=pipeline.__doc__,
        concurrency_limit=DEPLOYMENT_CONCURRENCY,
        print_next_steps=False,
    )
    return {"deployment": f"{pipeline.name}/{name}", "id": str(deployment), "work_pool": pool}
