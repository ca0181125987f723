"""The evaluate stage's tools beside the pipeline: the utility report across runs, the
profile that trains the runs it compares, and the pack that takes those runs to a GPU."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from components.core import paths, tracking
from components.core.atomic import atomic_folder, check_output_folder
from components.core.config import apply_overrides, build_configs
from components.core.corpus import load_corpus
from components.core.dvc_cli import dvc_command, dvc_environment
from components.core.errors import InputError
from components.core.jsonio import write_json_atomic, write_text_atomic
from components.core.stage import Metrics, StageContext, check_paths, split
from components.evaluate.config import EvaluateConfig
from components.evaluate.grading import export_summaries, gradable, import_grades
from components.evaluate.portable import PACK_KIND, make_pack
from components.evaluate.profile import RUN_STORE, PlannedRun
from components.evaluate.report import report_chart_png, report_markdown
from components.evaluate.runs import (
    EVALUATE_FILE,
    PER_CONVERSATION_FILE,
    RUN_KIND,
    Record,
    Run,
    collect_runs,
    parse_records,
    privacy_section,
    read_evaluation,
    run_folder,
    runs_from_exp_show,
)
from components.evaluate.summary import summarize
from components.evaluate.variants import canonical
from components.train import TrainConfig, load_adapter

logger = logging.getLogger(__name__)
REPORT_FILES = ("utility.json", "utility.md", "utility.png")
REPORT_KIND = "utility-report"  # its folder's marker: only a report replaces a report


def utility_report(context: StageContext, output_dir: Path, *, store: Path = RUN_STORE) -> Metrics:
    """Compare the variants of the run store, or, while it holds no run, of DVC's experiments
    (intervals where their per-conversation scores can be read, means otherwise), with their
    gate, risk and audit figures (each experiment's own; the workspace's metrics for the
    store); write the report and log it to MLflow."""
    import mlflow

    check_output_folder(output_dir, REPORT_KIND)
    runs = collect_runs(store) if store.is_dir() else []
    if not runs:
        runs = _experiment_runs()
    if not runs:
        raise InputError(
            f"no run in {store} and none with {paths.metrics_file('evaluate')} in DVC's "
            "experiments: run `veiltune utility-profile`, or the pipeline and "
            "`dvc exp run -S train.corpus=raw`"
        )
    summary = {**summarize(runs), "privacy": privacy_section(runs, paths.METRICS_DIR)}
    with atomic_folder(output_dir, REPORT_KIND) as tmp:
        write_json_atomic(tmp / "utility.json", summary)
        write_text_atomic(tmp / "utility.md", report_markdown(summary))
        (tmp / "utility.png").write_bytes(report_chart_png(summary["variants"]))
    experiment_id = tracking.configure_tracking(context.experiment)
    with mlflow.start_run(experiment_id=experiment_id, run_name="utility-report"):
        mlflow.set_tag("veiltune.kind", "utility-report")
        for variant, entry in summary["variants"].items():
            tracking.log_numeric_metrics(entry["metrics"], prefix=variant)
        for name in REPORT_FILES:
            mlflow.log_artifact(str(output_dir / name), artifact_path="utility_report")
    return {
        "variants": sorted(summary["variants"]),
        "comparison": [check["statement"] for check in summary["comparison"].values()],
        "output": str(output_dir),
    }


def _experiment_runs() -> list[Run]:
    run = subprocess.run(
        dvc_command("exp", "show", "--json"), capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise InputError(f"dvc exp show failed: {run.stderr.strip()[-500:]}")
    return runs_from_exp_show(json.loads(run.stdout), _experiment_records)


def _experiment_records(name: str, rev: str) -> tuple[Record, ...] | None:
    """The per-conversation scores an experiment's evaluate stage wrote, from the workspace
    or DVC's cache; None (its row gets means only) when it wrote none, being older than
    them, or the cache no longer holds them."""
    import dvc.api
    from dvc.exceptions import DvcException

    try:
        text = dvc.api.read(str(paths.PER_CONVERSATION), rev=None if rev == "workspace" else rev)
    except (DvcException, FileNotFoundError) as exc:
        logger.warning("%s: no per-conversation scores (%s): means only", name, type(exc).__name__)
        return None
    return tuple(parse_records(text.splitlines(), f"{name}:{paths.PER_CONVERSATION}"))


def utility_profile(
    context: StageContext, planned: Sequence[PlannedRun], *, store: Path, output_dir: Path
) -> Metrics:
    """Train and evaluate each planned run as a DVC experiment in the workspace, copy its
    evaluation into the run store, then write the report from the store.

    A run the store already holds is skipped, so an interrupted profile resumes where it
    stopped (remove a run's folder to redo it). Each run starts from the params.yaml the
    profile found, which is put back at the end: runs do not inherit each other's overrides.
    """
    check_output_folder(output_dir, REPORT_KIND)  # before hours of runs, not after
    original = paths.PARAMS.read_text(encoding="utf-8")
    try:
        for index, run in enumerate(planned, start=1):
            folder = run_folder(store, run.variant, seed=run.seed)
            if (folder / EVALUATE_FILE).is_file():
                logger.info(
                    "run %d/%d: %s seed %d already in %s",
                    index,
                    len(planned),
                    run.variant,
                    run.seed,
                    folder,
                )
                continue
            logger.info(
                "run %d/%d: %s seed %d: %s",
                index,
                len(planned),
                run.variant,
                run.seed,
                run.overrides,
            )
            write_text_atomic(paths.PARAMS, original)
            _exp_run(run)
            store_run(run, folder)
    finally:
        write_text_atomic(paths.PARAMS, original)
    return utility_report(context, output_dir, store=store)


def _exp_run(run: PlannedRun) -> None:
    try:
        subprocess.run(
            dvc_command(*run.exp_run_args()), check=True, env=dvc_environment(os.environ)
        )
    except subprocess.CalledProcessError as exc:
        raise InputError(
            f"dvc exp run failed for {run.variant} seed {run.seed} (exit {exc.returncode}); "
            "its output is above"
        ) from exc


def store_run(run: PlannedRun, folder: Path) -> None:
    """Copy the workspace's evaluation (evaluate.json, per-conversation scores) into the run
    store's ``folder``, once it says it is the planned variant and seed."""
    evaluated = paths.metrics_file("evaluate")
    evaluation = read_evaluation(evaluated)
    found = (canonical(str(evaluation["variant"])), evaluation.get("train_seed"))
    if found != (run.variant, run.seed):
        raise InputError(
            f"{evaluated}: variant {found[0]} seed {found[1]}, but the run was {run.variant} "
            f"seed {run.seed}: the experiment did not evaluate what it was asked to train"
        )
    with atomic_folder(folder, RUN_KIND) as tmp:
        shutil.copyfile(evaluated, tmp / EVALUATE_FILE)
        shutil.copyfile(paths.PER_CONVERSATION, tmp / PER_CONVERSATION_FILE)


def utility_pack(
    context: StageContext,
    destination: Path,
    *,
    anonymized: Mapping[str, Path],
    steps: int | None,
    max_eval: int | None,
    tasks: Sequence[str] | None = None,
    eval_tasks: Sequence[str] | None = None,
) -> Metrics:
    """``veiltune utility-pack``: the pack of :mod:`components.evaluate.portable` from the
    raw corpus, its splits and the given anonymize outputs, with params.yaml's train and
    evaluate params (``steps``, ``max_eval``, the trained ``tasks`` and the scored
    ``eval_tasks`` in their place when given)."""
    overrides = {
        "train.max_steps": steps,
        "train.tasks": list(tasks) if tasks is not None else None,
        "evaluate.max_conversations": max_eval,
        "evaluate.tasks": list(eval_tasks) if eval_tasks is not None else None,
    }
    check_output_folder(destination, PACK_KIND, raw=True)
    given = {key: value for key, value in overrides.items() if value is not None}
    sections = {"train": TrainConfig, "evaluate": EvaluateConfig}
    configs = build_configs(apply_overrides(context.params, given, sections=sections), sections)
    train, evaluate = configs["train"], configs["evaluate"]
    if not paths.SPLITS.is_file():
        raise InputError(f"{paths.SPLITS}: missing; run the ingest stage first")
    splits = json.loads(paths.SPLITS.read_text(encoding="utf-8"))
    manifest = make_pack(
        destination,
        load_corpus(paths.RAW_CORPUS),
        splits=splits,
        anonymized=anonymized,
        train=train,
        evaluate=evaluate,
    )
    logger.info("%s: %s", destination, manifest["n_train_conversations"])
    return {"pack": str(destination), **manifest["n_train_conversations"]}


def grades_export(context: StageContext, output: Path, *, limit: int) -> Metrics:
    """The graders' file of the adapter's private summaries of held-out calls
    (``components/evaluate/grading.py``); it holds raw text, so it must be under data/raw."""
    check_paths([paths.RAW_CORPUS], [output], raw=True)
    if not output.resolve().is_relative_to(paths.RAW_DIR.resolve()):
        raise InputError(
            f"grades export: {output} holds raw text and must be under {paths.RAW_DIR}"
        )
    config = context.config(EvaluateConfig)
    conversations = gradable(
        split(load_corpus(paths.RAW_CORPUS), "heldout", splits=paths.SPLITS), limit
    )
    model, tokenizer = load_adapter(paths.BASE_MODEL, paths.ADAPTER)
    count = export_summaries(
        conversations,
        model,
        tokenizer=tokenizer,
        output=output,
        max_new_tokens=config.max_new_tokens,
        max_prompt_tokens=config.max_prompt_tokens,
    )
    return {"summaries": count, "output": str(output)}


def grades_import(inputs: Sequence[Path], output: Path) -> Metrics:
    """Agreement of the graders with the judge and with each other (numbers only)."""
    check_paths([*inputs, paths.RAW_CORPUS], [output])
    conversations = {c.id: c for c in load_corpus(paths.RAW_CORPUS)}
    report = import_grades(inputs, conversations, output=output)
    return {"summaries": report["summaries"], "graders": report["graders"], "output": str(output)}
