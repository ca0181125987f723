"""The evaluate stage: utility of the trained adapter (and of the base model zero-shot) on
held-out raw text: ROUGE, accuracy/macro-F1, perplexity, per dataset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.core import paths, tracking
from components.core.corpus import load_corpus
from components.core.errors import InputError
from components.core.jsonio import write_json_atomic, write_jsonl_atomic, write_text_atomic
from components.core.lineage import ADAPTER_KEY, adapter_sha256
from components.core.stage import Metrics, StageContext, split
from components.evaluate.config import EvaluateConfig
from components.evaluate.intervals import headline_intervals, intervals_record, utility_intervals
from components.evaluate.judge import SummaryJudge
from components.evaluate.private_summary import build_judge
from components.evaluate.runs import samples
from components.evaluate.utility import evaluate_models
from components.evaluate.variants import SURROGATE, variant_name
from components.ingest import DATASET, MAIN, SENSITIVE, split_by_dataset
from components.train import (
    SUMMARY_PRIVACY_TASKS,
    label_options,
    load_adapter,
    load_base,
    read_generation_settings,
    read_label_options,
)


def run(config: EvaluateConfig, context: StageContext) -> Metrics:
    raw_file, splits = context.input(paths.RAW_CORPUS), context.input(paths.SPLITS)
    base, adapter = context.input(paths.BASE_MODEL), context.input(paths.ADAPTER)
    with context.mlflow_run():
        raw = load_corpus(raw_file)
        datasets = split_by_dataset(split(raw, "heldout", splits=splits), config.max_conversations)
        if not any(datasets.values()):
            raise InputError(f"{splits}: the held-out split is empty; nothing to evaluate")
        tracking.log_corpus_input(
            raw_file,
            [c.id for conversations in datasets.values() for c in conversations],
            name="raw corpus: held-out split",
            context="evaluation",
        )
        # The options the adapter was trained to choose from (the base model gets the same).
        label_sets = read_label_options(adapter) or label_options(
            split(raw, "train", splits=splits)
        )
        models: dict[str, Callable[[], tuple[Any, Any]]] = {
            "adapter": lambda: load_adapter(base, adapter)
        }
        if config.include_base:
            # The base model answers as the adapter does: a difference is the training's.
            settings = read_generation_settings(adapter)
            models["base"] = lambda: load_base(base, settings)
        metrics: Metrics = {
            ADAPTER_KEY: adapter_sha256(adapter),  # the adapter scored: register checks
            "variant": run_variant(context),
            "train_seed": context.setting("train.seed"),
            "train_steps": context.setting("train.max_steps"),
            "n_conversations": len(datasets[MAIN]),
            f"{DATASET}.n_conversations": len(datasets[DATASET]),
            f"{SENSITIVE}.n_conversations": len(datasets[SENSITIVE]),
        }
        judge = _summary_judge(config, context.base_dir)
        scores, records = evaluate_models(
            models,
            datasets,
            label_sets=label_sets,
            max_new_tokens=config.max_new_tokens,
            max_prompt_tokens=config.max_prompt_tokens,
            tasks=config.tasks,
            judge=judge,
        )
        if judge is not None:
            metrics["judge"] = config.judge.model or "offline"
            metrics["judge_unparsed"] = getattr(judge, "unparsed", 0)
        metrics.update(scores)
        # 95% bootstrap intervals over held-out conversations: every score's in the detail
        # file, the headline scores' in the metrics file too
        every = utility_intervals({model: samples(records, model) for model in models})
        metrics["intervals"] = headline_intervals(every)
        context.record(
            metrics, artifacts=_write(context, metrics, records=records, intervals=every)
        )
    return metrics


def _write(
    context: StageContext,
    metrics: Metrics,
    *,
    records: list[dict[str, Any]],
    intervals: dict[str, Any],
) -> list[Path]:
    """Write the stage's outputs besides its metrics file and return them."""
    out = context.output
    write_jsonl_atomic(out(paths.PER_CONVERSATION), records)
    write_json_atomic(out(paths.UTILITY_INTERVALS), intervals_record(intervals))
    write_text_atomic(out(paths.UTILITY_SCORES), utility_csv(metrics))
    return [
        out(paths.PER_CONVERSATION),
        out(paths.UTILITY_INTERVALS),
        out(paths.UTILITY_SCORES),
    ]


def _summary_judge(config: EvaluateConfig, base_dir: Path) -> SummaryJudge | None:
    """The judge of the privacy-preserving summaries, built before any model is scored (a
    bad ``evaluate.judge.model`` stops here); None when no such task is scored."""
    if not set(config.tasks) & set(SUMMARY_PRIVACY_TASKS):
        return None
    judge, model = config.judge, config.judge.model
    if model is not None and not model.startswith(("http://", "https://")):
        model = str(base_dir / model)  # a folder, named as every path in params: from its folder
    return build_judge(
        model, judge.allow_remote, max_new_tokens=judge.max_new_tokens, proxy=judge.proxy
    )


def utility_csv(metrics: Metrics) -> str:
    """The adapter's scores (0 to 1: ROUGE, accuracy, macro-F1) with the base model's beside
    them, one metric a row, as dvc.yaml's utility plot reads them (``metric,adapter,base``).
    Perplexity, on another scale, and the example counts stay in evaluate.json."""
    adapter, base = metrics.get("adapter") or {}, metrics.get("base") or {}
    rows = ["metric,adapter,base"]
    for key, value in adapter.items():
        if _is_score(value) and not key.endswith("perplexity_raw"):
            rows.append(f"{key},{value:.6g},{_cell(base.get(key))}")
    return "\n".join(rows) + "\n"


def _is_score(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value: Any) -> str:
    return f"{value:.6g}" if _is_score(value) else ""


def run_variant(context: StageContext) -> str:
    """The variant this run's adapter is (``components.evaluate.variants``): its training
    corpus and, for text from the anonymize stage, its detectors and replacement method;
    with DP, its epsilon."""
    replacement = str(context.setting("anonymize.replacement"))
    surrogate = replacement == SURROGATE
    method = str(context.setting("anonymize.surrogate.method")) if surrogate else None
    private = bool(context.setting("train.privacy.enabled"))
    return variant_name(
        str(context.setting("train.corpus")),
        replacement,
        surrogate_method=method,
        detectors=list(context.setting("anonymize.detectors")),
        mask_loss_weight=float(context.setting("train.mask_loss_weight")),
        fragments_source=str(context.setting("train.fragments.source")),
        dp_epsilon=float(context.setting("train.privacy.epsilon")) if private else None,
    )


# The scores the summary line names, when the run measured them.
HEADLINE_SCORES = {"perplexity_raw": "perplexity", "summary.rouge1": "summary ROUGE-1"}


def summary(metrics: Metrics) -> str:
    """The line ``veiltune evaluate`` prints: the adapter's headline scores on held-out raw
    conversations, and the base model's beside them."""
    line = f"adapter {_headline(metrics['adapter'])}"
    if "base" in metrics:
        line += f" (base: {_headline(metrics['base'])})"
    return f"{line} on {metrics['n_conversations']} held-out conversations"


def _headline(scores: Metrics) -> str:
    return ", ".join(
        f"{name} {scores[key]:g}" for key, name in HEADLINE_SCORES.items() if key in scores
    )
