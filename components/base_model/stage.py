"""The base_model stage: the bundled SmolLM2 GGUF (or a named folder) as a Hugging Face
model folder in ``models/base``."""

from __future__ import annotations

from dataclasses import asdict

from components.base_model.config import BaseModelConfig
from components.base_model.materialize import materialize_base_model
from components.core import paths
from components.core.atomic import atomic_folder
from components.core.stage import Metrics, StageContext


def run(config: BaseModelConfig, context: StageContext) -> Metrics:
    with context.mlflow_run():
        with atomic_folder(context.output(paths.BASE_MODEL), "base-model") as tmp:
            info = materialize_base_model(config.source, tmp, root=context.base_dir)
        metrics = asdict(info)
        context.record(metrics)
    return metrics


def summary(metrics: Metrics) -> str:
    """The line ``veiltune base-model`` prints: the model written to models/base."""
    millions = metrics["n_parameters"] / 1e6
    return f"{metrics['model_type']}, {millions:.0f}M parameters, in {paths.BASE_MODEL}"
