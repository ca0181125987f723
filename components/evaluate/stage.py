"""The evaluate stage: utility of the trained adapter (and of the base model zero-shot) on
held-out raw text: ROUGE, accuracy/macro-F1, perplexity, per dataset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from components.core import paths, tracking
from components.core.corpus import load_corpus
from components.core.errors import InputError
from components.core.jsonio import write_json_atomic
from components.core.stage import Metrics, StageContext, log_stage, split
from components.evaluate.config import EvaluateConfig
from components.evaluate.utility import evaluate_datasets
from components.ingest import DATASET, MAIN, split_by_dataset
from components.train import label_options, load_adapter, load_base, read_label_options


def run(config: EvaluateConfig, context: StageContext) -> Metrics:
    variant: str = context.setting("train.corpus")
    with tracking.stage_run("evaluate", context.experiment):
        raw = load_corpus(paths.RAW_CORPUS)
        datasets = split_by_dataset(split(raw, "heldout"), config.max_conversations)
        if not any(datasets.values()):
            raise InputError(f"{paths.SPLITS}: the held-out split is empty; nothing to evaluate")
        # The options the adapter was trained to choose from (the base model gets the same).
        label_sets = read_label_options(paths.ADAPTER) or label_options(split(raw, "train"))
        models: dict[str, Callable[[], tuple[Any, Any]]] = {
            "adapter": lambda: load_adapter(paths.BASE_MODEL, paths.ADAPTER)
        }
        if config.include_base:
            models["base"] = lambda: load_base(paths.BASE_MODEL)
        metrics: Metrics = {
            "variant": variant,
            "n_conversations": len(datasets[MAIN]),
            f"{DATASET}.n_conversations": len(datasets[DATASET]),
        }
        for name, load in models.items():
            model, tokenizer = load()
            metrics[name] = evaluate_datasets(
                model,
                tokenizer,
                datasets,
                label_sets,
                config.max_new_tokens,
                config.max_prompt_tokens,
            )
        write_json_atomic(paths.metrics_file("evaluate"), metrics)
        log_stage("evaluate", config, metrics, [paths.metrics_file("evaluate")])
    return metrics
