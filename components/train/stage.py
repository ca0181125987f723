"""The train stage: LoRA on the base model from the corpus the gate passed (or, for the
utility report's baselines, the raw, masked or fragmented corpus), resumable from its
checkpoints."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from components.core import paths, tracking
from components.core.atomic import atomic_folder
from components.core.corpus import Conversation, load_corpus
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl, jsonl_by_key, write_text_atomic
from components.core.lineage import (
    ADAPTER_KEY,
    CORPUS_KEY,
    TRAIN_CORPUS_KEY,
    TRAINED_CORPUS_KEY,
    adapter_sha256,
    sha256_file,
)
from components.core.stage import Metrics, StageContext, split
from components.gate import require_gate_passed
from components.ingest import AuditCanary, inserted_canaries
from components.train.config import TrainConfig
from components.train.engine import world_rank
from components.train.fragments import build_fragments
from components.train.methods import TRAINING_METHODS
from components.train.result import TrainResult
from components.train.tasks import Example, TrainingExamples, canary_examples, mask_replaced
from components.train.training_method import TrainingJob


def run(config: TrainConfig, context: StageContext) -> Metrics:
    import mlflow

    from components.train.live_metrics import MlflowLossCallback

    gated_corpus = _require_gate_passed(context)
    rank = world_rank()
    if rank:
        # Under a launcher every rank runs the stage and trains on its share of each batch;
        # rank 0 alone writes the adapter, the metrics and the MLflow run.
        data = training_data(config, context)
        result = _train(
            config, data, output=_work(context) / f"rank-{rank}", callbacks=[], context=context
        )
        return {"rank": rank, "world_size": result.world_size, "steps": result.steps}
    mlflow.enable_system_metrics_logging()  # CPU, memory (and GPU) use while training
    adapter = context.output(paths.ADAPTER)
    with context.mlflow_run():
        data = training_data(config, context)
        if config.corpus == "fragmented":
            mlflow.set_tag("veiltune.fragments_source", config.fragments.source)
        mlflow.set_tag("veiltune.train_corpus", config.corpus)
        tracking.log_corpus_input(
            data.source,
            [c.id for c in data.conversations],
            name=f"{config.corpus} corpus: train split",
            context="training",
        )
        mlflow.set_tag("veiltune.train_method", config.method)
        live = MlflowLossCallback()
        with atomic_folder(adapter, "adapter") as tmp:
            result = _train(config, data, output=tmp, callbacks=[live], context=context)
        # A resumed run has the steps before its checkpoint in its history, not live.
        for name, history in (("loss", result.loss_history), ("eval_loss", result.eval_history)):
            for step, loss in history:
                if step not in live.logged[name]:
                    mlflow.log_metric(name, loss, step=step)
        metrics = {
            **result.to_metrics(),
            **data.fragment_metrics,
            CORPUS_KEY: gated_corpus,
            # what this run read and wrote, whatever params.yaml says by register's time
            TRAIN_CORPUS_KEY: config.corpus,
            TRAINED_CORPUS_KEY: sha256_file(data.source),
            ADAPTER_KEY: adapter_sha256(adapter),
        }
        loss_file = context.output(paths.TRAIN_LOSS)
        write_text_atomic(loss_file, loss_csv(result.loss_history))
        context.record(metrics, artifacts=[loss_file])
    return metrics


@dataclass(frozen=True)
class TrainingData:
    """What the stage trains on: the train split of its corpus (masked, for
    ``train.corpus: masked``), and the fragments' examples for ``fragmented``."""

    source: Path
    conversations: list[Conversation]
    examples: TrainingExamples | None = None
    fragment_metrics: dict[str, float] = field(default_factory=dict)
    canaries: list[Example] = field(default_factory=list)  # the one-run audit's, inserted


def training_data(config: TrainConfig, context: StageContext) -> TrainingData:
    source = context.input(training_corpus(config.corpus, config.fragments.source))
    splits = context.input(paths.SPLITS)
    conversations = split(load_corpus(source), "train", splits=splits)
    if not conversations:
        raise InputError(f"{splits}: the train split is empty")
    if config.corpus == "masked":
        records = jsonl_by_key(context.input(paths.ANON_SPANS), "conversation_id")
        conversations = [mask_replaced(c, records.get(c.id, [])) for c in conversations]
    canaries = canary_examples(
        list(
            inserted_canaries(
                AuditCanary.from_record(obj)
                for _, obj in iter_jsonl(context.input(paths.AUDIT_CANARIES))
            )
        )
    )
    if config.corpus != "fragmented":
        return TrainingData(source, conversations, canaries=canaries)
    fragments = build_fragments(
        conversations, config.fragments, eval_fraction=config.eval_fraction, seed=config.seed
    )
    return TrainingData(
        source,
        conversations,
        fragments.training_examples(),
        fragments.stats.to_metrics(),
        canaries=canaries,
    )


def _train(
    config: TrainConfig,
    data: TrainingData,
    *,
    output: Path,
    callbacks: list[Any],
    context: StageContext,
) -> TrainResult:
    """Train with the method ``train.method`` names, on the stage's data."""
    if config.deepspeed:  # named as every path in params: from params.yaml's folder
        config = replace(config, deepspeed=str(context.base_dir / config.deepspeed))
    job = TrainingJob(
        context.input(paths.BASE_MODEL),
        data.conversations,
        config,
        output,
        _work(context),
        callbacks,
        examples=data.examples,
        source=str(data.source),
        canaries=data.canaries,
    )
    return TRAINING_METHODS[config.method].train(job)


def loss_csv(history: Sequence[tuple[int, float]]) -> str:
    """The training loss at each logged step, as dvc.yaml's plot reads it (``step,loss``)."""
    return "step,loss\n" + "".join(f"{step},{loss:.6g}\n" for step, loss in history)


def training_corpus(corpus: str, fragments_source: str = "anonymized") -> Path:
    """The anonymized corpus; the raw one only for the report's baselines without
    anonymization: the oracle, and fragments of the raw corpus."""
    raw = corpus == "raw" or (corpus == "fragmented" and fragments_source == "raw")
    return paths.RAW_CORPUS if raw else paths.ANON_CORPUS


def _work(context: StageContext) -> Path:
    """The stage's checkpoints (``train.resume``): its own scratch in the workspace, which
    no stage reads and DVC does not track."""
    return context.workspace / paths.TRAIN_WORK


def _require_gate_passed(context: StageContext) -> str:
    """Train never runs on a corpus that failed the gate, or on another corpus than the one
    the gate passed, whatever called it; returns that corpus's sha256."""
    gate_file = context.input(paths.metrics_file("gate"))
    verdict = json.loads(gate_file.read_text(encoding="utf-8")) if gate_file.is_file() else None
    return require_gate_passed(verdict, gate_file, corpus=context.input(paths.ANON_CORPUS))


def summary(metrics: Metrics) -> str:
    """The line ``veiltune train`` prints: the steps and the losses (a rank's steps alone,
    on every rank but the first)."""
    if "train_loss" not in metrics:
        return f"rank {metrics['rank']} of {metrics['world_size']}: {metrics['steps']} steps"
    line = f"{metrics['steps']} steps, train loss {metrics['train_loss']:g}"
    if "best_eval_loss" in metrics:
        line += f", best eval loss {metrics['best_eval_loss']:g}"
    if "dp.epsilon" in metrics:
        line += f", DP ε {metrics['dp.epsilon']} spent at δ {metrics['dp.delta']:.3g}"
    return f"{line}; adapter in {paths.ADAPTER}"
