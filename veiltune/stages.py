"""One thin entry per DVC stage: read the stage's params, call the component, write the
outputs atomically, log to MLflow. No computation lives here."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from components import config as cfg
from components import lineage, tracking
from components.corpus import Conversation, load_corpus
from components.errors import GateFailed, InputError
from components.jsonio import write_json_atomic, write_jsonl_atomic, write_text_atomic
from veiltune import paths

logger = logging.getLogger(__name__)


def _experiment(params_path: Path) -> str:
    register: cfg.RegisterConfig = cfg.load_stage_config(params_path, "register")
    return register.experiment


def _log_stage(stage: str, config: Any, metrics: dict[str, Any], artifacts: list[Path]) -> None:
    tracking.log_flat_params(stage, asdict(config))
    tracking.log_numeric_metrics(metrics)
    import mlflow

    for artifact in artifacts:
        mlflow.log_artifact(str(artifact))


def ingest(params_path: Path) -> dict[str, Any]:
    from components.ingest import corpus_metrics, ingest_corpus, split_ids
    from components.pi_inventory import inventory_entries, new_salt

    config: cfg.IngestConfig = cfg.load_stage_config(params_path, "ingest")
    conversations = ingest_corpus(config, params_path.parent)  # validated before any write
    with tracking.stage_run("ingest", _experiment(params_path)):
        splits = split_ids([c.id for c in conversations], config.heldout_fraction, config.seed)
        salt = new_salt()
        write_jsonl_atomic(paths.RAW_CORPUS, (c.to_record() for c in conversations))
        write_text_atomic(paths.SALT, salt + "\n")
        entries = inventory_entries(conversations, salt)
        write_jsonl_atomic(paths.INVENTORY, (e.to_record() for e in entries))
        write_json_atomic(paths.SPLITS, splits)
        metrics = corpus_metrics(conversations, splits)
        write_json_atomic(paths.metrics_file("ingest"), metrics)
        _log_stage("ingest", config, metrics, [paths.metrics_file("ingest")])
    return metrics


def base_model(params_path: Path) -> dict[str, Any]:
    from components.base_model import materialize_base_model
    from components.jsonio import atomic_path

    config: cfg.BaseModelConfig = cfg.load_stage_config(params_path, "base_model")
    with tracking.stage_run("base_model", _experiment(params_path)):
        with atomic_path(paths.BASE_MODEL) as tmp:
            info = materialize_base_model(config.source, tmp)
        metrics = asdict(info)
        write_json_atomic(paths.metrics_file("base_model"), metrics)
        _log_stage("base_model", config, metrics, [paths.metrics_file("base_model")])
    return metrics


def anonymize(
    params_path: Path, input_path: Path, output_path: Path,
    spans_path: Path | None = None, metrics_path: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Anonymize a corpus; with ``metrics_path`` it runs as the pipeline stage (MLflow too)."""
    import contextlib

    config: cfg.AnonymizeConfig = cfg.load_stage_config(params_path, "anonymize")
    run = (
        tracking.stage_run("anonymize", _experiment(params_path))
        if metrics_path
        else contextlib.nullcontext()
    )
    with run:
        metrics = _anonymize_files(config, params_path.parent, input_path, output_path, spans_path)
        if metrics_path:
            write_json_atomic(metrics_path, metrics)
            _log_stage("anonymize", config, metrics, [metrics_path])
    return metrics


def _anonymize_files(
    config: cfg.AnonymizeConfig,
    base_dir: Path,
    input_path: Path,
    output_path: Path,
    spans_path: Path | None,
) -> dict[str, Any]:
    """Stream the corpus through the anonymizer; both outputs appear only if all succeeds."""
    import contextlib
    import sys
    import time

    from tqdm import tqdm

    from components.anonymize.stream import AnonymizationTally, anonymize_stream
    from components.corpus import read_corpus
    from components.jsonio import atomic_path

    tally = AnonymizationTally()
    started = time.perf_counter()
    stream = anonymize_stream(read_corpus(input_path), config, base_dir, config.workers)
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(stack.enter_context(atomic_path(output_path)).open("w"))
        spans = (
            stack.enter_context(stack.enter_context(atomic_path(spans_path)).open("w"))
            if spans_path
            else None
        )
        progress = stack.enter_context(
            tqdm(desc="anonymize", unit=" conversations", mininterval=2, file=sys.stderr)
        )
        for original, (anonymized, replacements) in stream:
            out.write(json.dumps(anonymized.to_record(), ensure_ascii=False) + "\n")
            if spans is not None:
                spans.writelines(json.dumps(r.to_record()) + "\n" for r in replacements)
            tally.add(original, replacements)
            progress.update()
    return tally.to_metrics(time.perf_counter() - started, config.workers)


def detect(params_path: Path, input_path: Path, output_path: Path) -> int:
    """Write ``{"id", "spans"}`` (or per-turn spans) for each input record, in order."""
    from components.anonymize.factory import (
        anonymization_policy,
        build_detector,
        detection_records,
    )

    config: cfg.AnonymizeConfig = cfg.load_stage_config(params_path, "anonymize")
    conversations = load_corpus(input_path)
    detector, policy = build_detector(config), anonymization_policy(config, params_path.parent)
    records = detection_records(conversations, detector, policy, config.batch_size)
    return write_jsonl_atomic(output_path, records)


def evaluate_detection(
    params_path: Path, dataset: str, path: Path | None, limit: int | None, output: Path
) -> dict[str, Any]:
    """Score the anonymize stage's detector on labelled data; write and log the metrics."""
    import mlflow

    from components.anonymize.factory import anonymization_policy, build_detector
    from components.evaluation.datasets import load_labelled
    from components.evaluation.run import evaluate_detection as run_evaluation

    config: cfg.AnonymizeConfig = cfg.load_stage_config(params_path, "anonymize")
    items = load_labelled(dataset, path, limit)
    detector, policy = build_detector(config), anonymization_policy(config, params_path.parent)
    metrics = {"dataset": dataset, **run_evaluation(items, detector, policy, config.batch_size)}
    write_json_atomic(output, metrics)
    experiment_id = tracking.configure_tracking(_experiment(params_path))
    with mlflow.start_run(experiment_id=experiment_id, run_name=f"evaluate-detection-{dataset}"):
        mlflow.set_tag("veiltune.kind", "evaluate-detection")
        tracking.log_flat_params("anonymize", asdict(config))
        mlflow.log_params({"dataset": dataset, "path": str(path), "limit": str(limit)})
        tracking.log_numeric_metrics(metrics)
        mlflow.log_artifact(str(output))
    return metrics


def risk(params_path: Path) -> dict[str, Any]:
    import pandas as pd

    from components.jsonio import iter_jsonl
    from components.risk import RISK_COLUMNS, residual_items, risk_row, summarize_risk

    config: cfg.RiskConfig = cfg.load_stage_config(params_path, "risk")
    with tracking.stage_run("risk", _experiment(params_path)):
        by_conversation: dict[str, list[dict[str, Any]]] = {}
        for _, record in iter_jsonl(paths.ANON_SPANS):
            by_conversation.setdefault(record["conversation_id"], []).append(record)
        rows = []
        for conversation in load_corpus(paths.RAW_CORPUS):
            replaced = by_conversation.get(conversation.id, [])
            items = residual_items(conversation, replaced, config.scores, config.default_score)
            rows.append(risk_row(conversation, items))
        table = pd.DataFrame(rows, columns=RISK_COLUMNS)
        write_text_atomic(paths.RISK_TABLE, table.to_csv(index=False))
        metrics = summarize_risk(table)
        write_json_atomic(paths.metrics_file("risk"), metrics)
        _log_stage("risk", config, metrics, [paths.metrics_file("risk"), paths.RISK_TABLE])
    return metrics


def gate(params_path: Path) -> dict[str, Any]:
    import pandas as pd

    from components.gate import validate_risk_table

    config: cfg.GateConfig = cfg.load_stage_config(params_path, "gate")
    with tracking.stage_run("gate", _experiment(params_path)):
        table = pd.read_csv(paths.RISK_TABLE, dtype={"conversation_id": str, "context": str})
        splits = json.loads(paths.SPLITS.read_text(encoding="utf-8"))
        expected_ids = [*splits["train"], *splits["heldout"]]
        result, validation = validate_risk_table(table, config.threshold, expected_ids=expected_ids)
        write_json_atomic(paths.GATE_RESULT, validation)
        metrics = result.to_metrics()
        write_json_atomic(paths.metrics_file("gate"), metrics)
        _log_stage("gate", config, metrics, [paths.metrics_file("gate"), paths.GATE_RESULT])
    if not result.passed:
        raise GateFailed(f"gate refused the corpus: {result.failure_message()}")
    return metrics


def _require_gate_passed() -> None:
    """Train never runs on a corpus that failed the gate, whatever called it."""
    gate_file = paths.metrics_file("gate")
    if not gate_file.is_file():
        raise GateFailed(f"{gate_file}: no gate result; run the gate stage first")
    if not json.loads(gate_file.read_text(encoding="utf-8")).get("passed"):
        raise GateFailed(f"{gate_file}: the corpus failed the gate; refusing to train on it")


def _split(conversations: list[Conversation], split: str) -> list[Conversation]:
    ids = set(json.loads(paths.SPLITS.read_text(encoding="utf-8"))[split])
    return [c for c in conversations if c.id in ids]


def train(params_path: Path) -> dict[str, Any]:
    import mlflow

    from components.jsonio import atomic_path
    from components.train import train_lora

    config: cfg.TrainConfig = cfg.load_stage_config(params_path, "train")
    _require_gate_passed()
    with tracking.stage_run("train", _experiment(params_path)):
        conversations = _split(load_corpus(paths.ANON_CORPUS), "train")
        if not conversations:
            raise InputError(f"{paths.SPLITS}: the train split is empty")
        with atomic_path(paths.ADAPTER) as tmp:
            result = train_lora(paths.BASE_MODEL, conversations, config, tmp, paths.TRAIN_WORK)
        for step, loss in result.loss_history:
            mlflow.log_metric("loss", loss, step=step)
        metrics = result.to_metrics()
        write_json_atomic(paths.metrics_file("train"), metrics)
        _log_stage("train", config, metrics, [paths.metrics_file("train")])
    return metrics


def audit(params_path: Path) -> dict[str, Any]:
    from audits.pii_output import audit_outputs
    from components.adapter_model import generate, load_adapter
    from components.pi_inventory import read_inventory
    from components.tasks import continuation_prompt

    config: cfg.AuditConfig = cfg.load_stage_config(params_path, "audit")
    with tracking.stage_run("audit", _experiment(params_path)):
        conversations = _split(load_corpus(paths.ANON_CORPUS), "train")[: config.n_prompts]
        prompts = [continuation_prompt(c, config.prompt_turns) for c in conversations]
        model, tokenizer = load_adapter(paths.BASE_MODEL, paths.ADAPTER)
        outputs = generate(model, tokenizer, prompts, config.max_new_tokens)
        salt = paths.SALT.read_text(encoding="utf-8").strip()
        result = audit_outputs(
            outputs, read_inventory(paths.INVENTORY), salt, config.min_value_chars,
            config.max_leaks,
        )  # fmt: skip
        metrics = {"passed": result.passed, "pii_output": result.to_metrics()}
        write_json_atomic(paths.metrics_file("audit"), metrics)
        _log_stage("audit", config, metrics, [paths.metrics_file("audit")])
    return metrics


def register(params_path: Path) -> dict[str, Any]:
    from components.registry import promotion_decision, register_adapter

    config: cfg.RegisterConfig = cfg.load_stage_config(params_path, "register")
    gate_metrics = _read_metrics("gate")
    audit_metrics = _read_metrics("audit")
    train_metrics = _read_metrics("train")
    tags = {
        "gate_passed": str(bool(gate_metrics["passed"])).lower(),
        "gate_mu_plus_sigma": str(gate_metrics["mu_plus_sigma"]),
        "audit_passed": str(bool(audit_metrics["passed"])).lower(),
        "train_loss": str(train_metrics["train_loss"]),
        "git_commit": lineage.git_commit(Path.cwd()),
        "params_hash": lineage.params_hash(cfg.read_params(params_path)),
        "data_version": json.dumps(lineage.dvc_lock_outs(paths.DVC_LOCK, "ingest")),
    }
    champion = promotion_decision(bool(gate_metrics["passed"]), bool(audit_metrics["passed"]))
    with tracking.stage_run("register", config.experiment) as run:
        version = register_adapter(
            paths.ADAPTER, paths.BASE_MODEL, config.model_name, tags, champion
        )
        metrics = {**version.to_metrics(), "run_id": run.info.run_id}
        write_json_atomic(paths.metrics_file("register"), metrics)
        _log_stage("register", config, {"champion": version.to_metrics()["champion"]}, [])
    return metrics


def _read_metrics(stage: str) -> dict[str, Any]:
    path = paths.metrics_file(stage)
    if not path.is_file():
        raise InputError(f"{path}: missing; run the {stage} stage first")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def export(params_path: Path) -> dict[str, Any]:
    from components.export import build_bundle

    config: cfg.ExportConfig = cfg.load_stage_config(params_path, "export")
    register_metrics = _read_metrics("register")
    files = {
        "params.yaml": params_path,
        "dvc.lock": paths.DVC_LOCK,
        "risk/risk_table.csv": paths.RISK_TABLE,
        "gate/validation.json": paths.GATE_RESULT,
        **{
            f"metrics/{stage}.json": paths.metrics_file(stage)
            for stage in ("ingest", "base_model", "anonymize", "risk", "gate", "train", "audit",
                          "register")
        },
    }  # fmt: skip
    experiment = _experiment(params_path)
    with tracking.stage_run("export", experiment) as run:
        parent = run.data.tags.get("mlflow.parentRunId", "")
        lineage_info = {
            "git_commit": lineage.git_commit(Path.cwd()),
            "params": cfg.read_params(params_path),
            "mlflow": {"pipeline_run_id": parent, "export_run_id": run.info.run_id},
            "registered_model": {
                k: register_metrics[k] for k in ("model_name", "model_version", "aliases")
            },
            "tool_versions": lineage.tool_versions(),
        }
        manifest = build_bundle(files, lineage_info, paths.BUNDLE, config.make_zip)
        metrics = {
            "n_files": len(manifest["files"]),
            "manifest_sha256": manifest["manifest_sha256"],
        }
        _log_stage(
            "export", config, {"n_files": metrics["n_files"]}, [paths.BUNDLE / "manifest.json"]
        )
    if parent:
        tracking.finish_pipeline_run(parent)
    return metrics
