"""One thin entry per DVC stage: read the stage's params, call the component, write the
outputs atomically, log to MLflow. No computation lives here."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from components.core import config as cfg
from components.core import lineage, paths, tracking
from components.core.corpus import Conversation, load_corpus
from components.core.errors import GateFailed, InputError, ParamsError
from components.core.jsonio import (
    PRIVATE,
    atomic_path,
    check_input_file,
    check_output_file,
    private_folder,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)
from components.core.lineage import sha256_file
from components.gate.binding import CORPUS_KEY

logger = logging.getLogger(__name__)


def check_paths(inputs: Sequence[Path], outputs: Sequence[Path | None]) -> None:
    """Refuse missing inputs and unsafe outputs before any work (or model loading) starts.

    An output must name a file: not ``.``, an empty name or an existing folder, not one of
    the inputs or another output, in an existing folder unless the folder is one of the
    pipeline's own (``paths.OUTPUT_ROOTS``).
    """
    for path in inputs:
        check_input_file(path)
    named = [o for o in outputs if o is not None]
    for i, output in enumerate(named):
        check_output_file(
            output, [*inputs, *named[:i]], create_parent=paths.is_pipeline_output(output)
        )


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
    from components.ingest.canaries import plant_canaries
    from components.ingest.pi_inventory import inventory_entries, new_salt
    from components.ingest.sources import corpus_metrics, ingest_corpus, split_ids

    config: cfg.IngestConfig = cfg.load_stage_config(params_path, "ingest")
    conversations = ingest_corpus(config, params_path.parent)  # validated before any write
    splits = split_ids([c.id for c in conversations], config.heldout_fraction, config.seed)
    try:
        conversations, canaries = plant_canaries(
            conversations, splits["train"], config.canary_types, config.canary_repetitions,
            config.seed,
        )  # fmt: skip
    except ValueError as exc:
        raise ParamsError(f"params: ingest.canary_repetitions: {exc}") from exc
    with tracking.stage_run("ingest", _experiment(params_path)):
        salt = new_salt()
        # Raw text, the key and the inventory are readable by their owner only, whatever
        # the umask: 0700 folders, 0600 files.
        for folder in (paths.RAW_DIR, paths.INVENTORY.parent):
            private_folder(folder)
        write_jsonl_atomic(paths.RAW_CORPUS, (c.to_record() for c in conversations), PRIVATE)
        write_jsonl_atomic(paths.CANARIES, (c.to_record() for c in canaries), PRIVATE)
        write_text_atomic(paths.SALT, salt + "\n", PRIVATE)
        entries = inventory_entries(conversations, salt)
        write_jsonl_atomic(paths.INVENTORY, (e.to_record() for e in entries), PRIVATE)
        write_json_atomic(paths.SPLITS, splits)
        metrics = {**corpus_metrics(conversations, splits), "n_canaries": len(canaries)}
        write_json_atomic(paths.metrics_file("ingest"), metrics)
        _log_stage("ingest", config, metrics, [paths.metrics_file("ingest")])
    return metrics


def base_model(params_path: Path) -> dict[str, Any]:
    from components.base_model.materialize import materialize_base_model

    config: cfg.BaseModelConfig = cfg.load_stage_config(params_path, "base_model")
    with tracking.stage_run("base_model", _experiment(params_path)):
        with atomic_path(paths.BASE_MODEL, directory=True) as tmp:
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

    check_paths([input_path], [output_path, spans_path, metrics_path])
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
    from components.core.corpus import read_corpus

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

    check_paths([input_path], [output_path])
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

    from components.anonymize.evaluation.datasets import load_labelled
    from components.anonymize.evaluation.run import evaluate_detection as run_evaluation
    from components.anonymize.factory import anonymization_policy, build_detector

    check_paths([path] if path is not None else [], [output])
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
    """Score what survived in every conversation: by ground truth where it is labelled
    (``risk.source: auto``), else by the automatic second-opinion scan, which also runs on
    every conversation; the gate reads the chosen scores."""
    from components.core.jsonio import iter_jsonl
    from components.risk.corpus import conversation_sources, score_corpus
    from components.risk.scoring import RiskPolicy

    config: cfg.RiskConfig = cfg.load_stage_config(params_path, "risk")
    threshold = cfg.load_stage_config(params_path, "gate").threshold
    policy = RiskPolicy(config.scores, config.default_score)
    with tracking.stage_run("risk", _experiment(params_path)):
        salt = paths.SALT.read_text(encoding="utf-8").strip()
        by_conversation: dict[str, list[dict[str, Any]]] = {}
        for _, record in iter_jsonl(paths.ANON_SPANS):
            by_conversation.setdefault(record["conversation_id"], []).append(record)
        raw = load_corpus(paths.RAW_CORPUS)
        anonymized = {c.id: c for c in load_corpus(paths.ANON_CORPUS)}
        missing = next((c.id for c in raw if c.id not in anonymized), None)
        if missing is not None:
            raise InputError(f"{paths.ANON_CORPUS}: conversation {missing} missing")
        sources = conversation_sources(raw, config.source, str(paths.RAW_CORPUS))
        scored = score_corpus(raw, anonymized, by_conversation, policy, salt, sources)
        # The gate checks that the table it judges was computed on the corpus on disk.
        metrics = {**scored.to_metrics(), CORPUS_KEY: sha256_file(paths.ANON_CORPUS)}
        artifacts = _write_risk_outputs(
            scored.table, scored.estimate_table, scored.items, metrics, threshold
        )
        _log_stage("risk", config, metrics, artifacts)
    return metrics


def _write_risk_outputs(
    table: Any, estimate_table: Any, items: list[Any], metrics: dict[str, Any], threshold: float
) -> list[Path]:
    from components.risk.report import risk_histogram_png, risk_report_html, risk_table_markdown

    png = risk_histogram_png(
        [int(v) for v in table["score"]], threshold, metrics["mean"], metrics["std"]
    )
    markdown = risk_table_markdown(metrics, threshold)
    html = risk_report_html(metrics, threshold, png, title=f"Residual risk ({metrics['source']})")
    write_text_atomic(paths.RISK_TABLE, table.to_csv(index=False))
    write_text_atomic(paths.RISK_ESTIMATE_TABLE, estimate_table.to_csv(index=False))
    write_jsonl_atomic(paths.RISK_ITEMS, [item.to_record() for item in items])
    write_text_atomic(paths.RISK_REPORT_MD, markdown)
    write_text_atomic(paths.RISK_REPORT_HTML, html)
    with atomic_path(paths.RISK_HISTOGRAM) as tmp:
        tmp.write_bytes(png)
    write_json_atomic(paths.metrics_file("risk"), metrics)
    return [
        paths.metrics_file("risk"), paths.RISK_TABLE, paths.RISK_ESTIMATE_TABLE, paths.RISK_ITEMS,
        paths.RISK_REPORT_MD, paths.RISK_REPORT_HTML, paths.RISK_HISTOGRAM,
    ]  # fmt: skip


def review_export(params_path: Path, output_dir: Path = paths.REVIEW_DIR) -> dict[str, Any]:
    """Write the stratified review sample (JSONL to annotate, HTML to read). The sample is
    anonymized text that may hold what the anonymizer missed: it stays a DVC output and
    is never logged to MLflow; only its counts are."""
    import pandas as pd

    config: cfg.RiskConfig = cfg.load_stage_config(params_path, "risk")
    threshold = cfg.load_stage_config(params_path, "gate").threshold
    with tracking.stage_run("review", _experiment(params_path)):
        table = pd.read_csv(paths.RISK_TABLE, dtype={"conversation_id": str, "context": str})
        metrics = _write_review_sample(
            load_corpus(paths.ANON_CORPUS), table, config, threshold, output_dir
        )
        write_json_atomic(paths.metrics_file("review"), metrics)
        tracking.log_numeric_metrics({"sampled": metrics["sampled"]})
    return metrics


def _write_review_sample(
    conversations: list[Conversation],
    table: Any,
    config: cfg.RiskConfig,
    threshold: float,
    output_dir: Path,
) -> dict[str, Any]:
    from components.review.sample import review_sample
    from components.risk.report import review_page_html

    scores = dict(zip(table["conversation_id"], table["score"].astype(int), strict=True))
    records = review_sample(
        conversations, scores, config.review_sample_size, threshold, config.review_seed
    )
    write_jsonl_atomic(output_dir / "review_sample.jsonl", records)
    write_text_atomic(output_dir / "review.html", review_page_html(records))
    bands: dict[str, int] = {}
    for record in records:
        bands[record["risk_band"]] = bands.get(record["risk_band"], 0) + 1
    contexts: dict[str, int] = {}
    for record in records:
        contexts[record["context"]] = contexts.get(record["context"], 0) + 1
    return {"sampled": len(records), "by_band": bands, "by_context": contexts}


def review_import(params_path: Path, input_path: Path, output: Path) -> dict[str, Any]:
    """Score reviewers' annotations; report them next to the automatic estimate."""
    import pandas as pd

    from components.review.sample import annotated_summary, count_by_type, read_annotations
    from components.risk.estimate import estimate_items
    from components.risk.scoring import RiskPolicy, summarize_scores

    check_paths([input_path], [output])
    config: cfg.RiskConfig = cfg.load_stage_config(params_path, "risk")
    policy = RiskPolicy(config.scores, config.default_score)
    salt = paths.SALT.read_text(encoding="utf-8").strip() if paths.SALT.is_file() else ""
    reviewed = read_annotations(input_path, policy, salt)
    estimated = {r.conversation.id: estimate_items(r.conversation, policy, salt) for r in reviewed}
    rows = annotated_summary(reviewed, estimated)
    frame = pd.DataFrame(rows)
    report = {
        "conversations": len(rows),
        "annotated": summarize_scores(frame["annotated_score"]),
        "estimated": summarize_scores(frame["estimated_score"]),
        "annotated_items_by_type": count_by_type(i for r in reviewed for i in r.items),
        "rows": rows,
    }
    write_json_atomic(output, report)
    return {k: v for k, v in report.items() if k != "rows"} | {"output": str(output)}


def gate(params_path: Path) -> dict[str, Any]:
    import mlflow
    import pandas as pd

    from components.gate.binding import gate_digests
    from components.gate.suite import validate_risk_table

    config: cfg.GateConfig = cfg.load_stage_config(params_path, "gate")
    risk_file = paths.metrics_file("risk")
    digests = gate_digests(
        _read_metrics("risk"), paths.ANON_CORPUS, paths.RISK_TABLE, str(risk_file)
    )
    with tracking.stage_run("gate", _experiment(params_path)):
        table = pd.read_csv(paths.RISK_TABLE, dtype={"conversation_id": str, "context": str})
        splits = json.loads(paths.SPLITS.read_text(encoding="utf-8"))
        expected_ids = [*splits["train"], *splits["heldout"]]
        result, validation = validate_risk_table(
            table,
            config.threshold,
            known_contexts=config.known_contexts,
            expected_ids=expected_ids,
            per_context=config.per_context,
            data_docs_dir=paths.GATE_DATA_DOCS,
        )
        write_json_atomic(paths.GATE_RESULT, validation)
        metrics = {**result.to_metrics(), **digests}
        write_json_atomic(paths.metrics_file("gate"), metrics)
        _log_stage("gate", config, metrics, [paths.metrics_file("gate"), paths.GATE_RESULT])
        mlflow.log_artifacts(str(paths.GATE_DATA_DOCS), artifact_path="data_docs")
    if not result.passed:
        raise GateFailed(f"gate refused the corpus: {result.failure_message()}")
    return metrics


def evaluate(params_path: Path) -> dict[str, Any]:
    """Utility of the trained adapter (and the base model zero-shot) on held-out raw text."""
    from components.evaluate.utility import evaluate_datasets
    from components.ingest.dialogsum import DATASET, MAIN, split_by_dataset
    from components.train.adapter import load_adapter, load_base
    from components.train.lora import read_label_options
    from components.train.tasks import label_options

    config: cfg.EvaluateConfig = cfg.load_stage_config(params_path, "evaluate")
    variant = cfg.load_stage_config(params_path, "train").corpus
    with tracking.stage_run("evaluate", _experiment(params_path)):
        raw = load_corpus(paths.RAW_CORPUS)
        datasets = split_by_dataset(_split(raw, "heldout"), config.max_conversations)
        if not any(datasets.values()):
            raise InputError(f"{paths.SPLITS}: the held-out split is empty; nothing to evaluate")
        # The options the adapter was trained to choose from (the base model gets the same).
        label_sets = read_label_options(paths.ADAPTER) or label_options(_split(raw, "train"))
        models = {"adapter": lambda: load_adapter(paths.BASE_MODEL, paths.ADAPTER)}
        if config.include_base:
            models["base"] = lambda: load_base(paths.BASE_MODEL)
        metrics: dict[str, Any] = {
            "variant": variant,
            "n_conversations": len(datasets[MAIN]),
            f"{DATASET}.n_conversations": len(datasets[DATASET]),
        }
        for name, load in models.items():
            model, tokenizer = load()
            metrics[name] = evaluate_datasets(
                model, tokenizer, datasets, label_sets, config.max_new_tokens,
                config.max_prompt_tokens,
            )  # fmt: skip
        write_json_atomic(paths.metrics_file("evaluate"), metrics)
        _log_stage("evaluate", config, metrics, [paths.metrics_file("evaluate")])
    return metrics


def utility_report(params_path: Path, output_dir: Path) -> dict[str, Any]:
    """Tabulate the variants' evaluations across DVC experiments; log the report to MLflow."""
    import subprocess

    import mlflow

    from components.evaluate.report import (
        collect_variants,
        comparison,
        report_chart_png,
        report_markdown,
    )

    run = subprocess.run(
        ["dvc", "exp", "show", "--json"], capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise InputError(f"dvc exp show failed: {run.stderr.strip()[-500:]}")
    variants = collect_variants(json.loads(run.stdout))
    if not variants:
        raise InputError(
            f"no run has {paths.metrics_file('evaluate')} yet: run the pipeline, then "
            "`dvc exp run -S train.corpus=raw` and `-S train.corpus=masked`"
        )
    verdict = comparison(variants)
    report = {"variants": variants, "comparison": verdict}
    write_json_atomic(output_dir / "utility.json", report)
    write_text_atomic(output_dir / "utility.md", report_markdown(variants, verdict))
    with atomic_path(output_dir / "utility.png") as tmp:
        tmp.write_bytes(report_chart_png(variants))
    experiment_id = tracking.configure_tracking(_experiment(params_path))
    with mlflow.start_run(experiment_id=experiment_id, run_name="utility-report"):
        mlflow.set_tag("veiltune.kind", "utility-report")
        for variant, entry in variants.items():
            tracking.log_numeric_metrics(entry["metrics"], prefix=variant)
        mlflow.log_artifacts(str(output_dir), artifact_path="utility_report")
    return {"variants": sorted(variants), "comparison": verdict, "output": str(output_dir)}


def _require_gate_passed() -> str:
    """Train never runs on a corpus that failed the gate, or on another corpus than the one
    the gate passed, whatever called it; returns that corpus's sha256."""
    from components.gate.binding import require_gate_passed

    gate_file = paths.metrics_file("gate")
    verdict = json.loads(gate_file.read_text(encoding="utf-8")) if gate_file.is_file() else None
    return require_gate_passed(verdict, gate_file, paths.ANON_CORPUS)


def _split(conversations: list[Conversation], split: str) -> list[Conversation]:
    ids = set(json.loads(paths.SPLITS.read_text(encoding="utf-8"))[split])
    return [c for c in conversations if c.id in ids]


def _training_corpus(corpus: str) -> Path:
    """The anonymized corpus; the raw one only for the oracle baseline of the report."""
    return paths.RAW_CORPUS if corpus == "raw" else paths.ANON_CORPUS


def train(params_path: Path) -> dict[str, Any]:
    import mlflow

    from components.train.lora import train_lora
    from components.train.tasks import mask_placeholders

    config: cfg.TrainConfig = cfg.load_stage_config(params_path, "train")
    gated_corpus = _require_gate_passed()
    mlflow.enable_system_metrics_logging()  # CPU, memory (and GPU) use while training
    with tracking.stage_run("train", _experiment(params_path)):
        conversations = _split(load_corpus(_training_corpus(config.corpus)), "train")
        if not conversations:
            raise InputError(f"{paths.SPLITS}: the train split is empty")
        if config.corpus == "masked":
            conversations = [mask_placeholders(c) for c in conversations]
        mlflow.set_tag("veiltune.train_corpus", config.corpus)
        with atomic_path(paths.ADAPTER, directory=True) as tmp:
            result = train_lora(paths.BASE_MODEL, conversations, config, tmp, paths.TRAIN_WORK)
        for step, loss in result.loss_history:
            mlflow.log_metric("loss", loss, step=step)
        for step, loss in result.eval_history:
            mlflow.log_metric("eval_loss", loss, step=step)
        metrics = {**result.to_metrics(), CORPUS_KEY: gated_corpus}
        write_json_atomic(paths.metrics_file("train"), metrics)
        _log_stage("train", config, metrics, [paths.metrics_file("train")])
    return metrics


def audit(params_path: Path) -> dict[str, Any]:
    """Attack the trained adapter; ``metrics/audit.json`` passes only if every audit did."""
    from audits.result import audit_summary
    from components.anonymize.factory import build_detector
    from components.audit.runner import AuditInputs, run_audits
    from components.core.jsonio import iter_jsonl
    from components.ingest.canaries import Canary
    from components.ingest.pi_inventory import read_inventory
    from components.train.adapter import load_adapter
    from components.train.tasks import training_examples

    config: cfg.AuditConfig = cfg.load_stage_config(params_path, "audit")
    train_config: cfg.TrainConfig = cfg.load_stage_config(params_path, "train")
    with tracking.stage_run("audit", _experiment(params_path)):
        raw = load_corpus(paths.RAW_CORPUS)
        train_raw = _split(raw, "train")
        # Members are what the model trained on: not the conversations train kept aside to
        # measure eval loss, nor those it skipped for want of labels for its tasks.
        members = training_examples(
            train_raw, train_config.tasks, train_config.eval_fraction, train_config.seed
        ).trained_ids
        inputs = AuditInputs(
            train_raw=[c for c in train_raw if c.id in members],
            heldout_raw=_split(raw, "heldout"),
            heldout_anonymized=_split(load_corpus(paths.ANON_CORPUS), "heldout"),
            canaries=[Canary.from_record(obj) for _, obj in iter_jsonl(paths.CANARIES)],
            inventory=read_inventory(paths.INVENTORY),
            salt=paths.SALT.read_text(encoding="utf-8").strip(),
        )
        model, tokenizer = load_adapter(paths.BASE_MODEL, paths.ADAPTER)
        detector = build_detector(cfg.load_stage_config(params_path, "anonymize"))
        results = run_audits(model, tokenizer, config, inputs, detector)
        metrics = audit_summary(results, train_config.corpus)
        write_json_atomic(paths.metrics_file("audit"), metrics)
        _log_stage("audit", config, _audit_figures(metrics), [paths.metrics_file("audit")])
    return metrics


def _audit_figures(metrics: dict[str, Any]) -> dict[str, Any]:
    """The audit's headline numbers, flat, for MLflow."""
    flat: dict[str, Any] = {"audit_passed": metrics["passed"]}
    for name, result in metrics["audits"].items():
        flat[f"{name}.passed"] = result["passed"]
        for key, value in result["figures"].items():
            if isinstance(value, dict) and key != "canaries":
                flat.update({f"{name}.{key}.{k}": v for k, v in value.items()})
            elif key != "canaries":
                flat[f"{name}.{key}"] = value
    return flat


def register(params_path: Path) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    from components.gate.binding import require_trained_on_gated_corpus
    from components.register import registry

    config: cfg.RegisterConfig = cfg.load_stage_config(params_path, "register")
    corpus = cfg.load_stage_config(params_path, "train").corpus
    sources = {stage: str(paths.metrics_file(stage)) for stage in ("gate", "audit", "evaluate")}
    require_trained_on_gated_corpus(
        _read_metrics("train"),
        _read_metrics("gate"),
        paths.metrics_file("train"),
        paths.ANON_CORPUS,
    )
    gate = registry.gate_result(_read_metrics("gate"), sources["gate"])
    audit = registry.audit_result(_read_metrics("audit"), sources["audit"])
    evaluation = registry.adapter_metrics(_read_metrics("evaluate"), sources["evaluate"])
    utility = registry.utility_of(evaluation, config.utility_metric, sources["evaluate"])
    lock_outs = {
        **lineage.dvc_lock_outs(paths.DVC_LOCK, "ingest"),
        **lineage.dvc_lock_outs(paths.DVC_LOCK, "anonymize"),
    }
    tags = registry.version_tags(gate, audit, evaluation, {
        "train_loss": str(_read_metrics("train")["train_loss"]),
        "git_commit": lineage.git_commit(Path.cwd()),
        "params_hash": lineage.params_hash(cfg.read_params(params_path)),
        "data_version": json.dumps(lock_outs, sort_keys=True),
    })  # fmt: skip
    # A baseline trained on the raw or masked corpus is for the utility report only: it
    # is registered as a candidate to compare against, never promoted.
    evidence = registry.Evidence(gate.passed, audit.passed, audit.failed, corpus, utility)
    rule = registry.UtilityRule(config.utility_metric, config.higher_is_better)
    tracking.configure_tracking(config.experiment)
    fingerprint = registry.registration_fingerprint(paths.ADAPTER, tags, evidence, rule)
    # Register runs on every `dvc repro` (DVC cannot restore the registry): an adapter
    # registered before with the same evidence is reported, not registered again.
    version = registry.find_registered(MlflowClient(), config.model_name, fingerprint)
    if version is None:
        with tracking.stage_run("register", config.experiment):
            version = registry.register_version(
                MlflowClient(), paths.ADAPTER, paths.BASE_MODEL, config.model_name,
                {**tags, registry.FINGERPRINT_TAG: fingerprint}, evidence, rule,
            )  # fmt: skip
            _log_stage("register", config, {"champion": registry.CHAMPION in version.aliases}, [])
    metrics = version.to_metrics()
    write_json_atomic(paths.metrics_file("register"), metrics)
    logger.info("%s v%s: %s", config.model_name, version.version, version.decision_reason)
    return metrics


def promote(params_path: Path, version: str, force: bool, reason: str) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    from components.register.champion import promote as promote_version

    config: cfg.RegisterConfig = cfg.load_stage_config(params_path, "register")
    tracking.configure_tracking(config.experiment)
    return promote_version(MlflowClient(), config.model_name, version, force, reason)


def demote(params_path: Path, version: str) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    from components.register.champion import demote as demote_version

    config: cfg.RegisterConfig = cfg.load_stage_config(params_path, "register")
    tracking.configure_tracking(config.experiment)
    return demote_version(MlflowClient(), config.model_name, version)


def _read_metrics(stage: str) -> dict[str, Any]:
    path = paths.metrics_file(stage)
    if not path.is_file():
        raise InputError(f"{path}: missing; run the {stage} stage first")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# Every metrics file the compliance report reads; all of metrics/*.json goes in the bundle.
EXPORT_METRICS = ("ingest", "base_model", "anonymize", "risk", "review", "gate", "train",
                  "evaluate", "audit", "register")  # fmt: skip


def export(params_path: Path) -> dict[str, Any]:
    """Write the compliance bundle (folder and zip), or nothing if its PI scan finds a value."""
    from components.anonymize.factory import anonymization_policy, build_detector
    from components.export.compliance import (
        ExportInputs,
        PiScanPolicy,
        bundle_contents,
        write_scanned_bundle,
    )
    from components.export.detector_scan import DetectorScanPolicy
    from components.export.sources import registry_status
    from components.ingest.pi_inventory import read_inventory

    config: cfg.ExportConfig = cfg.load_stage_config(params_path, "export")
    params = cfg.read_params(params_path)
    metrics = {stage: _read_metrics(stage) for stage in EXPORT_METRICS}
    for required in (paths.DVC_LOCK, paths.SALT, paths.RAW_CORPUS):
        if not required.is_file():
            raise InputError(f"{required}: missing; run the pipeline with `dvc repro` first")
    salt = paths.SALT.read_text(encoding="utf-8").strip()
    anonymize_config: cfg.AnonymizeConfig = cfg.load_stage_config(params_path, "anonymize")
    detector = DetectorScanPolicy(
        build_detector(anonymize_config),
        anonymization_policy(anonymize_config, params_path.parent),
        paths.RAW_CORPUS,
        config.pi_scan_min_chars,
        anonymize_config.batch_size,
    )
    pi = PiScanPolicy(read_inventory(paths.INVENTORY), salt, config.pi_scan_min_chars, detector)
    inputs = ExportInputs(
        params=params_path, dvc_lock=paths.DVC_LOCK, gate_result=paths.GATE_RESULT,
        data_docs=paths.GATE_DATA_DOCS, risk_dir=paths.RISK_DIR,
        risk_histogram=paths.RISK_HISTOGRAM, review_dir=paths.REVIEW_DIR,
        metrics_dir=paths.METRICS_DIR, adapter_dir=paths.ADAPTER, utility_dir=paths.UTILITY_REPORT,
    )  # fmt: skip
    with tracking.stage_run("export", _experiment(params_path)) as run:
        parent = run.data.tags.get("mlflow.parentRunId", "")
        lineage_info = {
            "git_commit": lineage.git_commit(Path.cwd()),
            "params": params,
            "params_hash": lineage.params_hash(params),
            "dvc_lock_sha256": lineage.sha256_file(paths.DVC_LOCK),
            "data_versions": {
                stage: lineage.dvc_lock_outs(paths.DVC_LOCK, stage)
                for stage in ("ingest", "anonymize", "train")
            },
            "mlflow": {"pipeline_run_id": parent, "export_run_id": run.info.run_id},
            "registered_model": registry_status(metrics["register"]),
            "tool_versions": lineage.tool_versions(),
        }
        contents = bundle_contents(inputs, params, metrics, lineage_info, pi)
        manifest, scan = write_scanned_bundle(
            contents, lineage_info, paths.BUNDLE, config.make_zip, pi
        )
        result = {
            "n_files": len(manifest["files"]),
            "manifest_sha256": manifest["manifest_sha256"],
            "pi_scan": {"n_scanned": len(scan.scanned), "n_skipped": len(scan.skipped)},
        }
        bundled = [paths.BUNDLE / "manifest.json", paths.BUNDLE / "report.html"]
        _log_stage("export", config, result, bundled)
    if parent:
        tracking.finish_pipeline_run(parent)
    return result


def export_verify(bundle: Path) -> dict[str, Any]:
    """Check a bundle folder or zip against its manifest; raise listing every problem."""
    from components.core.errors import BundleTampered
    from components.export.bundle import read_manifest, verify_bundle

    problems = verify_bundle(bundle)
    if problems:
        raise BundleTampered(
            f"{bundle}: {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return {"bundle": str(bundle), "intact": True, "n_files": len(read_manifest(bundle)["files"])}


def purge_raw(root: Path, confirmed: bool) -> dict[str, Any]:
    """Erase every raw copy under ``root`` (see ``components.core.purge``); list them unless
    ``confirmed``."""
    from components.core.purge import purge_raw as erase
    from components.core.purge import raw_copies

    if not confirmed:
        listed = [p.relative_to(root).as_posix() for p in raw_copies(root)]
        return {"would_remove": listed, "n": len(listed), "erase_with": "veiltune purge-raw --yes"}
    report = erase(root)
    corpus = (
        cfg.load_stage_config(paths.PARAMS, "ingest").corpus_path
        if paths.PARAMS.is_file()
        else None
    )
    if corpus:
        logger.warning("your source corpus %s was not touched: erase it yourself", corpus)
    return report.to_record()
