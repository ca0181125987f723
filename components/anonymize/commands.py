"""The anonymize stage's tools beyond the pipeline: anonymize or detect in any JSONL file,
and score detection on labelled data."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from components.anonymize.config import AnonymizeConfig
from components.anonymize.factory import anonymization_policy, build_detector, detection_records
from components.anonymize.stage import anonymize_file
from components.core import tracking
from components.core.corpus import load_corpus
from components.core.jsonio import write_json_atomic, write_jsonl_atomic
from components.core.stage import Metrics, StageContext, check_paths


def anonymize(
    config: AnonymizeConfig,
    context: StageContext,
    input_path: Path,
    output_path: Path,
    spans_path: Path | None = None,
) -> Metrics:
    """Anonymize any corpus file (outside the pipeline: nothing logged to MLflow)."""
    check_paths([input_path], [output_path, spans_path])
    return anonymize_file(config, context.base_dir, input_path, output_path, spans_path)


def detect(
    config: AnonymizeConfig, context: StageContext, input_path: Path, output_path: Path
) -> int:
    """Write ``{"id", "spans"}`` (or per-turn spans) for each input record, in order."""
    check_paths([input_path], [output_path])
    conversations = load_corpus(input_path)
    detector = build_detector(config)
    policy = anonymization_policy(config, context.base_dir)
    records = detection_records(conversations, detector, policy, config.batch_size)
    return write_jsonl_atomic(output_path, records)


def evaluate_detection(
    config: AnonymizeConfig,
    context: StageContext,
    dataset: str,
    path: Path | None,
    limit: int | None,
    output: Path,
) -> Metrics:
    """Score the anonymize stage's detector on labelled data; write and log the metrics."""
    import mlflow

    from components.anonymize.evaluation.datasets import load_labelled
    from components.anonymize.evaluation.run import evaluate_detection as run_evaluation

    check_paths([path] if path is not None else [], [output])
    items = load_labelled(dataset, path, limit)
    detector = build_detector(config)
    policy = anonymization_policy(config, context.base_dir)
    metrics = {"dataset": dataset, **run_evaluation(items, detector, policy, config.batch_size)}
    write_json_atomic(output, metrics)
    experiment_id = tracking.configure_tracking(context.experiment)
    with mlflow.start_run(experiment_id=experiment_id, run_name=f"evaluate-detection-{dataset}"):
        mlflow.set_tag("veiltune.kind", "evaluate-detection")
        tracking.log_flat_params("anonymize", asdict(config))
        mlflow.log_params({"dataset": dataset, "path": str(path), "limit": str(limit)})
        tracking.log_numeric_metrics(metrics)
        mlflow.log_artifact(str(output))
    return metrics
