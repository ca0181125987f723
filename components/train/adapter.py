"""Load a LoRA adapter on its base model (or the base alone) and generate from it.

Models go to the GPU when torch sees one, else stay on the CPU; inputs follow the model
(``model.device``), so the same code serves a laptop and a GPU node. Nothing here needs
MLflow (the registered pyfunc wrapper is :mod:`components.train.pyfunc`): a machine with
only torch, transformers and peft can load and score an adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.core.progress import progress_bar
from components.train.generation import (
    PLAIN,
    answer_processors,
    end_of_answer_ids,
    read_generation_settings,
)
from components.train.params import GenerationSettings

# The attribute of a loaded model holding the settings it answers with (as a transformers
# model holds its generation_config): whoever calls generate() with it generates alike.
_SETTINGS = "veiltune_generation"


def load_adapter(base_model_dir: Path, adapter_dir: Path, *, merge: bool = True) -> tuple[Any, Any]:
    """The base model with the adapter applied, in eval mode, and its tokenizer; the model
    answers with the generation settings saved beside the adapter.

    ``merge`` folds the LoRA weights into the base weights (W + BA): the same function,
    without the adapter's extra matmuls in every forward pass, so inference is faster.
    """
    settings = read_generation_settings(adapter_dir)
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(adapter_dir)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    base = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model = PeftModel.from_pretrained(base, adapter_dir)
    if merge:
        model = model.merge_and_unload()
    model.eval()
    return with_generation_settings(on_device(model), settings), tokenizer


def load_base(base_model_dir: Path, settings: GenerationSettings = PLAIN) -> tuple[Any, Any]:
    """The base model alone (zero-shot baseline), in eval mode, and its tokenizer; it
    answers with ``settings`` (an adapter's, to compare the two alike; else plain greedy,
    as a judge or an attacker's reference model)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model.eval()
    return with_generation_settings(on_device(model), settings), tokenizer


def with_generation_settings(model: Any, settings: GenerationSettings) -> Any:
    """``model``, answering with ``settings`` from now on in :func:`generate`."""
    setattr(model, _SETTINGS, settings)
    return model


def generation_settings(model: Any) -> GenerationSettings:
    """The settings ``model`` answers with: those it was loaded with, else plain greedy."""
    settings = getattr(model, _SETTINGS, None)
    return settings if isinstance(settings, GenerationSettings) else PLAIN


def on_device(model: Any) -> Any:
    """``model`` on the GPU when torch sees one, else unchanged (on the CPU)."""
    import torch

    return model.to("cuda") if torch.cuda.is_available() else model


def generate(
    model: Any,
    tokenizer: Any,
    *,
    prompts: Sequence[str],
    max_new_tokens: int,
    batch_size: int = 8,
    progress: str | None = None,
    settings: GenerationSettings | None = None,
) -> list[str]:
    """Greedy chat completions of ``prompts`` (deterministic, so audits are repeatable),
    each ending at the chat's end-of-turn token.

    Args:
        progress: the name of a bar on stderr counting the prompts answered (evaluate, the
            audit); None for none (a served model answers quietly).
        settings: the repetition controls; None: those the model was loaded with
            (:func:`load_adapter`: the adapter's own).
    """
    import torch

    chosen = settings or generation_settings(model)
    end_ids = end_of_answer_ids(model, tokenizer)
    outputs: list[str] = []
    bar = progress_bar(progress or "", len(prompts), unit="prompts", shown=bool(progress))
    for i in range(0, len(prompts), batch_size):
        chats = [
            tokenizer.apply_chat_template(
                [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
            )
            for p in prompts[i : i + batch_size]
        ]
        batch = tokenizer(chats, return_tensors="pt", padding=True, add_special_tokens=False).to(
            model.device
        )
        prompt_length = batch["input_ids"].shape[1]
        with torch.no_grad():
            generated = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=end_ids,
                logits_processor=answer_processors(chosen, prompt_length),
            )
        new_tokens = generated[:, prompt_length:]
        outputs.extend(tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
        bar.update(len(chats))
    bar.close()
    return outputs
