"""The anonymize stage's tools beyond the pipeline: anonymize or detect in any JSONL file,
score and calibrate detection on labelled data, and train a NER for it."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, cast

from components.anonymize.calibration import Thresholds, write_calibration
from components.anonymize.config import AnonymizeConfig, DetectorName
from components.anonymize.distributed import detect_groups_on_cluster, detect_on_cluster
from components.anonymize.evaluation.calibrate import BETAS, Calibration
from components.anonymize.evaluation.calibrate import calibrate as run_calibration
from components.anonymize.evaluation.datasets import (
    SPEECH_PREFIX,
    SPLIT_KINDS,
    LabelledText,
    embedded_texts,
    load_labelled,
)
from components.anonymize.evaluation.run import conversation_groups, score_detection
from components.anonymize.evaluation.run import evaluate_detection as run_evaluation
from components.anonymize.evaluation.scoring import FalsePositive
from components.anonymize.evaluation.speechlike import speech_like
from components.anonymize.evaluation.sweep import parse_sweep, sweep_detection
from components.anonymize.factory import (
    anonymization_policy,
    build_detector,
    detection_records,
    ner_recognizer,
)
from components.anonymize.ner_training import TRAIN_EMBEDDED_SEED, TrainSettings, fine_tune
from components.anonymize.stage import anonymize_file
from components.core import tracking
from components.core.corpus import load_corpus
from components.core.jsonio import write_json_atomic, write_jsonl_atomic
from components.core.stage import Metrics, StageContext, check_paths

logger = logging.getLogger(__name__)


def anonymize(
    config: AnonymizeConfig,
    context: StageContext,
    *,
    input_path: Path,
    output_path: Path,
    spans_path: Path | None = None,
) -> Metrics:
    """Anonymize any corpus file (outside the pipeline: nothing logged to MLflow)."""
    check_paths([input_path], [output_path, spans_path])
    return anonymize_file(
        config,
        context.base_dir,
        input_path=input_path,
        output_path=output_path,
        spans_path=spans_path,
    )


def detect(
    config: AnonymizeConfig, context: StageContext, *, input_path: Path, output_path: Path
) -> int:
    """Write ``{"id", "spans"}`` (or per-turn spans) for each input record, in order."""
    check_paths([input_path], [output_path])
    if config.cluster is not None:
        return detect_on_cluster(
            config, context.base_dir, input_path=input_path, output_path=output_path
        )
    # The detector first: a bad model or policy file is named before the corpus is read.
    detector = build_detector(config, context.base_dir)
    policy = anonymization_policy(config, context.base_dir)
    conversations = load_corpus(input_path)
    records = detection_records(
        conversations, detector, policy=policy, batch_size=config.batch_size
    )
    return write_jsonl_atomic(output_path, records)


def evaluate_detection(
    config: AnonymizeConfig,
    context: StageContext,
    *,
    dataset: str,
    path: Path | None,
    limit: int | None,
    output: Path,
    split: str = "all",
    show_false_positives: int = 0,
    sweep: str | None = None,
    detectors: str | None = None,
) -> tuple[Metrics, list[FalsePositive]]:
    """Score the anonymize stage's detector on labelled data; write and log the metrics.
    ``detectors`` (comma-separated) replaces ``anonymize.detectors`` for this run.

    Returns the metrics and a sample of ``show_false_positives`` false positives with their
    context, for the caller to show a developer: they may hold private text, so they are
    neither written with the metrics nor logged to MLflow. With ``sweep``
    (``KEY=V1,V2,...``) the metrics are one row per value under ``sweep`` instead.
    """
    if detectors:  # validated as the param is, when replace builds it: a bad name names the key
        names = cast("list[DetectorName]", [name.strip() for name in detectors.split(",")])
        config = replace(config, detectors=names)
    check_paths([path] if path is not None else [], [output])
    swept = parse_sweep(sweep) if sweep else None  # a bad --sweep fails before any loading
    items = load_labelled(dataset, path, limit=limit, split=split)
    scored, samples = _scored(
        items, config, base_dir=context.base_dir, swept=swept, sample_size=show_false_positives
    )
    metrics = {"dataset": dataset, "split": split, "detectors": config.detectors, **scored}
    write_json_atomic(output, metrics)
    where = {"dataset": dataset, "path": str(path), "limit": str(limit), "split": split}
    _log_detection_run(config, context, where=where, metrics=metrics, output=output)
    return metrics, samples


def _scored(
    items: list[LabelledText],
    config: AnonymizeConfig,
    *,
    base_dir: Path,
    swept: tuple[str, list[float]] | None,
    sample_size: int,
) -> tuple[Metrics, list[FalsePositive]]:
    """The detector's scores on ``items`` and a sample of its false positives: one row per
    value of ``swept`` (in this process), else one score (on ``anonymize.cluster`` when
    params name one)."""
    policy = anonymization_policy(config, base_dir)
    if swept is not None:
        if config.cluster:
            logger.info("a sweep runs in one process: anonymize.cluster is not used")
        key, values = swept
        rows = sweep_detection(
            items, config, base_dir=base_dir, policy=policy, key=key, values=values
        )
        return {"sweep": rows}, []
    if config.cluster:
        groups = conversation_groups(items)
        detected = detect_groups_on_cluster(config, base_dir, groups=groups)
        return score_detection(items, groups, detected=detected, sample_size=sample_size)
    detector = build_detector(config, base_dir)
    return run_evaluation(
        items,
        detector,
        policy=policy,
        batch_size=config.batch_size,
        sample_size=sample_size,
    )


def _log_detection_run(
    config: AnonymizeConfig,
    context: StageContext,
    *,
    where: dict[str, str],
    metrics: Metrics,
    output: Path,
) -> None:
    """One MLflow run of the scoring: the params, the metrics (a sweep's curve a step a
    value) and the metrics file; never the false positives' text."""
    import mlflow

    experiment_id = tracking.configure_tracking(context.experiment)
    name = f"evaluate-detection-{where['dataset']}"
    with mlflow.start_run(experiment_id=experiment_id, run_name=name):
        mlflow.set_tag("veiltune.kind", "evaluate-detection")
        tracking.log_flat_params("anonymize", asdict(config))
        mlflow.log_params(where)
        for step, row in enumerate(metrics.get("sweep", [])):
            mlflow.log_metrics({k: float(v) for k, v in row.items()}, step=step)
        tracking.log_numeric_metrics(metrics)
        mlflow.log_artifact(str(output))


def format_sweep(rows: Sequence[Mapping[str, Any]]) -> str:
    """A sweep's rows as a Markdown table, the swept value first."""
    key = next(iter(rows[0]))
    columns = [key, "char_precision", "char_recall", "char_f1", "entity_recall"]
    columns.append("masked_word_share")
    lines = ["| " + " | ".join(columns) + " |", "|" + " ---: |" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(f"{row[c]:g}" for c in columns) + " |")
    return "\n".join(lines)


def format_false_positives(samples: list[FalsePositive]) -> str:
    """The sample as a developer reads it: one block per span, its context with the span
    in ``[[ ]]``."""
    lines = [f"{len(samples)} false positives (seeded sample; private text, not logged):"]
    for sample in samples:
        lines.append(f"- {sample.text_id} {sample.entity_type} by {sample.source}:")
        lines.append(f"    {sample.context!r}")
    return "\n".join(lines)


def calibrate(
    config: AnonymizeConfig,
    context: StageContext,
    *,
    data: Sequence[tuple[str, Path | None]],
    output: Path,
    limit: int | None = None,
) -> Metrics:
    """Calibrate the recognizers' thresholds of each operating point on labelled data and
    write them to ``output`` (presidio-research: its tuning templates only)."""
    from components.anonymize.presidio_backend import PresidioDetector

    check_paths([path for _, path in data if path is not None], [output])
    sets = {}
    for kind, path in data:
        base = kind.removeprefix(SPEECH_PREFIX)
        split = "tuning" if base == "presidio_research" else "all"
        name = f"{kind}:{path.name}" if path is not None else kind
        items = load_labelled(base, path, limit=limit, split=split)
        sets[name] = [speech_like(item) for item in items] if kind != base else items
    backend = PresidioDetector(
        config.spacy_model,
        config.info_types,
        thresholds=Thresholds(config.score_threshold),
        ner=ner_recognizer(config, context.base_dir),
        corroborate=config.ner.corroborate,
    )
    policy = anonymization_policy(config, context.base_dir)
    points = run_calibration(
        Calibration(sets, backend, policy=policy, default=config.score_threshold)
    )
    document = {
        "calibrated_on": {name: len(items) for name, items in sets.items()},
        "objective": (
            "mean over the data sets of character F-beta; beta per point: "
            + ", ".join(f"{point} {beta}" for point, beta in BETAS.items())
        ),
        "engine_threshold": config.score_threshold,
        "operating_points": points,
    }
    write_calibration(output, document)
    return {"output": str(output), **document}


def train_ner(
    data: Sequence[tuple[str, Path | None]],
    base: Path,
    *,
    output: Path,
    settings: TrainSettings,
    embedded_conversations: int = 200,
) -> Metrics:
    """Fine-tune the encoder at ``base`` into a token classifier for ``anonymize.ner.model``
    on labelled data (presidio_research and wnut17: their tuning side only, so the held-out
    side still measures it; embedded: conversations evaluation never reads) and write it to
    ``output`` with its ONNX."""
    check_paths([path for _, path in data if path is not None], [output])
    texts = []
    counts = {}
    for kind, path in data:
        base_kind = kind.removeprefix(SPEECH_PREFIX)
        if base_kind == "embedded":
            items = list(embedded_texts(embedded_conversations, TRAIN_EMBEDDED_SEED))
        else:
            split = "tuning" if base_kind in SPLIT_KINDS else "all"
            items = load_labelled(base_kind, path, limit=None, split=split)
        if kind != base_kind:
            items = [speech_like(item, seed=i) for i, item in enumerate(items)]
        counts[f"{kind}:{path.name}" if path is not None else kind] = len(items)
        texts.extend(items)
    figures = fine_tune(base, texts, output=output, settings=settings)
    return {"output": str(output), "trained_on": counts, **figures}
