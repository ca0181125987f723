"""The train stage: LoRA fine-tuning, the task prompts and examples, loading the adapter.

Other stages import from here only; the modules behind these names are this stage's own.
The adapter loaders import torch when they are called; MLflow's pyfunc (``BASE_ARTIFACT``,
``AdapterPyfunc``...) loads on first use of one of its names, so that importing the train
stage's config or tasks stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.train.adapter import generate, load_adapter, load_base
from components.train.config import FragmentsConfig, GenerationSettings, TrainConfig
from components.train.fragments import (
    Chunk,
    FragmentExample,
    build_fragments,
    chunk_conversations,
    examples_linking_values,
    load_chunker,
)
from components.train.generation import GENERATION_FILE, read_generation_settings
from components.train.lora import corpus_examples, train_lora
from components.train.session import read_label_options
from components.train.tasks import (
    CALL_TASKS,
    CLASSIFICATION_TASKS,
    CONTINUATION,
    DUAL_SUMMARY,
    PRIVATE_SUMMARY,
    SUMMARY_PRIVACY_TASKS,
    TASK_PROMPTS,
    TRAIN_TASKS,
    Example,
    TrainingExamples,
    continuation_cut,
    continuation_prompt,
    dual_parts,
    fit_prompt,
    label_options,
    mask_replaced,
    split_for_continuation,
    task_examples,
    task_prompt,
    task_target,
    training_examples,
    transcript,
)

if TYPE_CHECKING:
    from components.train.pyfunc import (
        BASE_ARTIFACT,
        AdapterPyfunc,
        BaseModelRef,
        pyfunc_config,
        pyfunc_input_example,
        pyfunc_signature,
    )

# MLflow's pyfunc and what registers it: imported only by who registers.
_PYFUNC_NAMES = (
    "BASE_ARTIFACT",
    "AdapterPyfunc",
    "BaseModelRef",
    "pyfunc_config",
    "pyfunc_input_example",
    "pyfunc_signature",
)


def __getattr__(name: str) -> Any:
    if name in _PYFUNC_NAMES:
        from components.train import pyfunc

        return getattr(pyfunc, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BASE_ARTIFACT",
    "CALL_TASKS",
    "CLASSIFICATION_TASKS",
    "CONTINUATION",
    "DUAL_SUMMARY",
    "GENERATION_FILE",
    "PRIVATE_SUMMARY",
    "SUMMARY_PRIVACY_TASKS",
    "TASK_PROMPTS",
    "TRAIN_TASKS",
    "AdapterPyfunc",
    "BaseModelRef",
    "Chunk",
    "Example",
    "FragmentExample",
    "FragmentsConfig",
    "GenerationSettings",
    "TrainConfig",
    "TrainingExamples",
    "build_fragments",
    "chunk_conversations",
    "continuation_cut",
    "continuation_prompt",
    "corpus_examples",
    "dual_parts",
    "examples_linking_values",
    "fit_prompt",
    "generate",
    "label_options",
    "load_adapter",
    "load_base",
    "load_chunker",
    "mask_replaced",
    "pyfunc_config",
    "pyfunc_input_example",
    "pyfunc_signature",
    "read_generation_settings",
    "read_label_options",
    "split_for_continuation",
    "task_examples",
    "task_prompt",
    "task_target",
    "train_lora",
    "training_examples",
    "transcript",
]
