"""Load a LoRA adapter on its base model, generate, and wrap both as an MLflow pyfunc model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlflow.pyfunc import PythonModel


def load_adapter(base_model_dir: Path, adapter_dir: Path, merge: bool = True) -> tuple[Any, Any]:
    """The base model with the adapter applied, in eval mode, and its tokenizer.

    ``merge`` folds the LoRA weights into the base weights (W + BA): the same function,
    without the adapter's extra matmuls in every forward pass, so inference is faster.
    """
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
    return model, tokenizer


def load_base(base_model_dir: Path) -> tuple[Any, Any]:
    """The base model alone (zero-shot baseline), in eval mode, and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model.eval()
    return model, tokenizer


def generate(
    model: Any, tokenizer: Any, prompts: Sequence[str], max_new_tokens: int, batch_size: int = 8
) -> list[str]:
    """Greedy chat completions of ``prompts`` (deterministic, so audits are repeatable)."""
    import torch

    outputs: list[str] = []
    for i in range(0, len(prompts), batch_size):
        chats = [
            tokenizer.apply_chat_template(
                [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
            )
            for p in prompts[i : i + batch_size]
        ]
        batch = tokenizer(chats, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            generated = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
        new_tokens = generated[:, batch["input_ids"].shape[1] :]
        outputs.extend(tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
    return outputs


class AdapterPyfunc(PythonModel):
    """MLflow pyfunc: the adapter is an artifact, the base model a folder named in its config."""

    def load_context(self, context: Any) -> None:
        config = context.model_config or {}
        self.max_new_tokens = int(config.get("max_new_tokens", 64))
        self.model, self.tokenizer = load_adapter(
            Path(config["base_model"]), Path(context.artifacts["adapter"])
        )

    def predict(self, context: Any, model_input: Any, params: dict[str, Any] | None = None) -> Any:
        prompts = _prompts_from(model_input)
        max_new = int((params or {}).get("max_new_tokens", self.max_new_tokens))
        return generate(self.model, self.tokenizer, prompts, max_new)


def _prompts_from(model_input: Any) -> list[str]:
    if isinstance(model_input, str):
        return [model_input]
    if hasattr(model_input, "iloc"):  # a pandas DataFrame: its first column
        return [str(v) for v in model_input.iloc[:, 0]]
    return [str(v) for v in model_input]
