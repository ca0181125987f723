"""The register stage: the adapter into the MLflow registry as a candidate; ``champion`` only
when the gate and every audit passed, it learnt from the anonymized corpus and its utility is
at least the current champion's, judged from the evidence it stores with the version (the
metrics files, signed with the producer's key: ``export.signing_key``, made on first use)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from components.anonymize import detection_models
from components.core import lineage, paths, tracking
from components.core.headline import held_audits, write_dvc_headline
from components.core.jsonio import write_json_atomic
from components.core.signing import KEY_PARAM, signing_key
from components.core.stage import Metrics, StageContext
from components.gate import GateResult, require_trained_on_gated_corpus
from components.ingest import corpus_datasets
from components.register import registry
from components.register.binding import bound_adapter, trained_corpus
from components.register.card import CardFacts, adapter_card, privacy_claim
from components.register.config import RegisterConfig
from components.register.evidence import METRICS_FILES, EvidenceFiles
from components.register.promotion import register_version
from components.register.shared_base import BaseModel, describe_base_model

logger = logging.getLogger(__name__)


def run(config: RegisterConfig, context: StageContext) -> Metrics:
    from mlflow.tracking import MlflowClient

    found = _evidence(config, context)
    tracking.configure_tracking(config.experiment, context.workspace)
    # Register runs on every `dvc repro` (DVC cannot restore the registry): an adapter
    # registered before with the same evidence is reported, not registered again.
    version = registry.find_registered(
        MlflowClient(), config.model_name, fingerprint=found.fingerprint
    )
    if version is None:
        version = _register(config, context, found=found)  # recorded in its own MLflow run
    else:
        # no run: its record is the registry's, as it stands now (aliases move)
        write_json_atomic(context.output(paths.metrics_file("register")), version.to_metrics())
    metrics = version.to_metrics()
    write_headline(metrics, context)
    logger.info("%s v%s: %s", config.model_name, version.version, version.decision_reason)
    return metrics


@dataclass(frozen=True)
class _Evidence:
    """What register decides from: the stages' verdicts and records, the version's tags and
    the files stored with it, and the fingerprint that says whether it is registered."""

    corpus: str
    scored: dict[Path, Metrics]
    gate: GateResult
    audit: registry.AuditResult
    utility: float
    base: BaseModel
    tags: dict[str, str]
    files: EvidenceFiles
    rule: registry.UtilityRule
    fingerprint: str


def _evidence(config: RegisterConfig, context: StageContext) -> _Evidence:
    sources = {stage: str(paths.metrics_file(stage)) for stage in ("gate", "audit", "evaluate")}
    train_file = paths.metrics_file("train")
    require_trained_on_gated_corpus(
        context.metrics("train"),
        context.metrics("gate"),
        train_file=train_file,
        corpus=context.input(paths.ANON_CORPUS),
    )
    # What the adapter learnt from and which adapter was scored: the stages' own records.
    corpus = trained_corpus(
        context.metrics("train"),
        context.metrics("gate"),
        train_file=train_file,
        configured=context.setting("train.corpus"),
    )
    scored = {paths.metrics_file(s): context.metrics(s) for s in ("train", "evaluate", "audit")}
    adapter = bound_adapter(context.input(paths.ADAPTER), scored)
    gate = GateResult.from_metrics(context.metrics("gate"), sources["gate"])
    audit = registry.audit_result(context.metrics("audit"), sources["audit"])
    evaluation = registry.adapter_metrics(context.metrics("evaluate"), sources["evaluate"])
    utility = registry.utility_of(evaluation, config.utility_metric, source=sources["evaluate"])
    base_source = str(context.metrics("base_model")["source"])
    base = describe_base_model(context.input(paths.BASE_MODEL), base_source)
    tags = {
        **registry.version_tags(gate, audit, evaluation=evaluation, lineage=_lineage_tags(context)),
        **base.to_tags(),
    }
    # What the decision is made from, stored with the version: the files as they are now.
    # A baseline trained on the raw or masked corpus is for the utility report only: it
    # is registered as a candidate to compare against, never promoted.
    metrics_files = {name: context.input(paths.METRICS_DIR / name) for name in METRICS_FILES}
    files = EvidenceFiles.read(metrics_files, corpus, adapter_sha256=adapter)
    rule = registry.UtilityRule(config.utility_metric, config.higher_is_better)
    stakes = {"files": files.hashes(), **files.inputs()}
    fingerprint = registry.registration_fingerprint(
        context.input(paths.ADAPTER), tags, evidence=stakes, rule=rule
    )
    return _Evidence(corpus, scored, gate, audit, utility, base, tags, files, rule, fingerprint)


def _lineage_tags(context: StageContext) -> dict[str, str]:
    # DVC's own record and git's: the workspace's lineage, which no stage declares.
    lock = context.workspace / paths.DVC_LOCK
    lock_outs = {
        **lineage.dvc_lock_outs(lock, "ingest"),
        **lineage.dvc_lock_outs(lock, "anonymize"),
    }
    return {
        "train_loss": str(context.metrics("train")["train_loss"]),
        "git_commit": lineage.git_commit(context.workspace),
        "params_hash": lineage.params_hash(dict(context.params)),
        "data_version": json.dumps(lock_outs, sort_keys=True),
    }


def _register(
    config: RegisterConfig, context: StageContext, *, found: _Evidence
) -> registry.RegisteredVersion:
    """Register the adapter as a new version with its card, its signed evidence and its
    tags, in a run of its own."""
    from mlflow.tracking import MlflowClient

    key = signing_key(context.setting(KEY_PARAM), context.base_dir)  # made on first use
    ingest = context.metrics("ingest")
    card = CardFacts(
        config.model_name,
        context.metrics("base_model"),
        ingest,
        corpus_datasets(context.params.get("ingest") or {}, ingest.get("by_dataset")),
        found.corpus,
        found.gate,
        found.audit,
        config.utility_metric,
        found.utility,
        detection_models(context.params.get("anonymize") or {}),
        context.params.get("train") or {},
        privacy_claim(context.metrics("train")),
    )
    # Not in the fingerprint: a short rewording of the evidence registers nothing new.
    held = held_audits(found.scored[paths.metrics_file("audit")].get("audits") or {})
    headline = registry.headline_tags(
        found.gate, found.audit, held=held, metric=config.utility_metric, utility=found.utility
    )
    with context.mlflow_run():
        version = register_version(
            MlflowClient(),
            context.input(paths.ADAPTER),
            base=found.base,
            model_name=config.model_name,
            tags={**found.tags, **headline, registry.FINGERPRINT_TAG: found.fingerprint},
            files=found.files,
            rule=found.rule,
            model_card=adapter_card(card),
            key=key,
        )
        # Before the run ends: its end puts the pipeline's headline together from it.
        champion = {"champion": registry.CHAMPION in version.aliases}
        context.record(version.to_metrics(), logged=champion)
    return version


def write_headline(registered: Metrics, context: StageContext) -> None:
    """``metrics/headline.json``, declared by this stage, the last with a verdict: the gate's,
    the audits' and this version's verdicts and the utility the rule judged, in one row."""
    found = {stage: context.metrics(stage) for stage in ("gate", "audit", "evaluate")}
    write_dvc_headline(
        context.output(paths.HEADLINE), {**found, "register": registered}, params=context.params
    )


def summary(metrics: Metrics) -> str:
    """The line ``veiltune register`` prints: the version, its alias and why."""
    alias = "champion" if metrics["champion"] else "candidate"
    return (
        f"{metrics['model_name']} v{metrics['model_version']} registered as {alias} "
        f"({metrics['decision_reason']})"
    )
