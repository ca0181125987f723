"""The audit stage: attack the trained adapter (the attacks live in top-level ``audits/``);
``metrics/audit.json`` passes only if every audit did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from audits.protocol import DpClaim
from audits.result import audit_summary
from components.anonymize import AnonymizeConfig, entity_detector, placeholder_view
from components.audit.config import AuditConfig
from components.audit.runner import AuditInputs, run_audits
from components.core import paths
from components.core.audit_record import split_details
from components.core.corpus import load_corpus
from components.core.jsonio import iter_jsonl, jsonl_by_key, write_json_atomic
from components.core.lineage import ADAPTER_KEY, adapter_sha256
from components.core.salt import read_salt
from components.core.stage import Metrics, StageContext, split
from components.ingest import AuditCanary, Canary, read_inventory
from components.train import TrainConfig, corpus_examples, load_adapter


def run(config: AuditConfig, context: StageContext) -> Metrics:
    train_config = context.config(TrainConfig)
    read = context.input
    splits, adapter = read(paths.SPLITS), read(paths.ADAPTER)
    with context.mlflow_run():
        raw = load_corpus(read(paths.RAW_CORPUS))
        train_raw = split(raw, "train", splits=splits)
        # Members are what the model trained on: not the conversations train kept aside to
        # measure eval loss, nor those it skipped for want of labels for its tasks (with
        # fragments: the conversations one of its training chunks came from).
        members = corpus_examples(train_raw, train_config).trained_ids
        trained = [c for c in train_raw if c.id in members]
        anonymized = load_corpus(read(paths.ANON_CORPUS))
        by_id = {c.id: c for c in anonymized}
        train_anonymized = [by_id[c.id] for c in trained]
        records = jsonl_by_key(read(paths.ANON_SPANS), "conversation_id")
        inputs = AuditInputs(
            train_raw=trained,
            heldout_raw=split(raw, "heldout", splits=splits),
            heldout_anonymized=split(anonymized, "heldout", splits=splits),
            canaries=[Canary.from_record(obj) for _, obj in iter_jsonl(read(paths.CANARIES))],
            inventory=read_inventory(read(paths.INVENTORY)),
            salt=read_salt(read(paths.SALT)),
            train_anonymized=train_anonymized,
            train_placeholder_view=[
                placeholder_view(c, records.get(c.id, [])) for c in train_anonymized
            ],
            base_model=read(paths.BASE_MODEL),
            locale=context.config(AnonymizeConfig).surrogate.locale,
            audit_canaries=[
                AuditCanary.from_record(obj) for _, obj in iter_jsonl(read(paths.AUDIT_CANARIES))
            ],
            dp_claim=dp_claim(read(paths.metrics_file("train"))),
        )
        attacked = adapter_sha256(adapter)  # the adapter audited: register checks
        model, tokenizer = load_adapter(read(paths.BASE_MODEL), adapter)
        # the entity engine's findings in outputs (word-level detectors flag most words)
        detector = entity_detector(context.config(AnonymizeConfig), context.base_dir)
        results = run_audits(model, tokenizer, config=config, inputs=inputs, detector=detector)
        summary = {**audit_summary(results, train_config.corpus), ADAPTER_KEY: attacked}
        # what decides in the metrics file; the other figures (each canary, each info type)
        # apart: DVC's table has a column per key
        metrics, details = split_details(summary)
        details_file = context.output(paths.AUDIT_DETAILS)
        write_json_atomic(details_file, details)
        context.record(metrics, artifacts=[details_file], logged=audit_figures(summary))
    return metrics


def dp_claim(train_metrics: Path) -> DpClaim | None:
    """The ε train's accountant counts spent and its δ (None without ``train.privacy``; an
    infinite ε, DP clipping without noise, claims nothing either)."""
    metrics = json.loads(train_metrics.read_text(encoding="utf-8"))
    epsilon = metrics.get("dp.epsilon")
    if not isinstance(epsilon, int | float):
        return None
    return DpClaim(float(epsilon), float(metrics["dp.delta"]))


def audit_figures(metrics: Metrics) -> dict[str, Any]:
    """The audit's numbers, flat, for MLflow (each canary's: the details artifact)."""
    flat: dict[str, Any] = {"audit_passed": metrics["passed"]}
    for name, result in metrics["audits"].items():
        flat[f"{name}.passed"] = result["passed"]
        for key, value in result["figures"].items():
            if isinstance(value, dict) and key != "canaries":
                flat.update({f"{name}.{key}.{k}": v for k, v in value.items()})
            elif key != "canaries":
                flat[f"{name}.{key}"] = value
    return flat


def summary(metrics: Metrics) -> str:
    """The line ``veiltune audit`` prints: the verdict, and each audit's."""
    audits = metrics["audits"].items()
    each = ", ".join(f"{name} {'ok' if r['passed'] else 'FAILED'}" for name, r in audits)
    return f"{'passed' if metrics['passed'] else 'failed'} ({each})"
