"""LoRA fine-tuning of a causal LM on anonymized conversations with the Hugging Face Trainer."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config import TrainConfig
from components.corpus import Conversation
from components.tasks import Example, task_examples

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainResult:
    n_examples: int
    steps: int
    train_loss: float
    trainable_parameters: int
    total_parameters: int
    runtime_s: float
    loss_history: list[tuple[int, float]]

    def to_metrics(self) -> dict[str, float]:
        return {
            "n_examples": self.n_examples,
            "steps": self.steps,
            "train_loss": round(self.train_loss, 4),
            "trainable_parameters": self.trainable_parameters,
            "total_parameters": self.total_parameters,
            "runtime_s": round(self.runtime_s, 2),
        }


def lora_config(config: TrainConfig) -> Any:
    """The peft LoraConfig that params describe."""
    from peft import LoraConfig, TaskType

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.target_modules),
        task_type=TaskType.CAUSAL_LM,
    )


def tokenize_example(example: Example, tokenizer: Any, max_length: int) -> dict[str, list[int]]:
    """Chat-formatted token ids; the loss is computed on the assistant's answer only."""
    prompt = [{"role": "user", "content": example.prompt}]
    full = [*prompt, {"role": "assistant", "content": example.target}]
    prompt_ids = _chat_ids(tokenizer, prompt, add_generation_prompt=True)
    full_ids = _chat_ids(tokenizer, full, add_generation_prompt=False)
    answer = full_ids[len(prompt_ids) :]
    # Keep the whole answer and as much of the prompt's end as fits.
    keep_prompt = max(0, max_length - len(answer))
    prompt_part = prompt_ids[-keep_prompt:] if keep_prompt else []
    input_ids = (prompt_part + answer)[:max_length]
    labels = ([-100] * len(prompt_part) + answer)[:max_length]
    return {"input_ids": input_ids, "attention_mask": [1] * len(input_ids), "labels": labels}


def _chat_ids(
    tokenizer: Any, messages: list[dict[str, str]], add_generation_prompt: bool
) -> list[int]:
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def train_lora(
    base_model_dir: Path,
    conversations: Sequence[Conversation],
    config: TrainConfig,
    output_dir: Path,
    work_dir: Path,
) -> TrainResult:
    """Fine-tune a LoRA adapter on the conversations' task examples; save it to output_dir."""
    import torch
    from peft import get_peft_model
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        DataCollatorForSeq2Seq,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    set_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    examples = [e for c in conversations for e in task_examples(c)]
    dataset = [tokenize_example(e, tokenizer, config.max_seq_length) for e in examples]
    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model = get_peft_model(model, lora_config(config))
    trainable, total = model.get_nb_trainable_parameters()
    args = TrainingArguments(
        output_dir=str(work_dir),
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        learning_rate=config.learning_rate,
        seed=config.seed,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=dataset,
        data_collator=DataCollatorForSeq2Seq(tokenizer, padding=True, label_pad_token_id=-100),
    )
    output = trainer.train()
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    history = [(int(h["step"]), float(h["loss"])) for h in trainer.state.log_history if "loss" in h]
    return TrainResult(
        n_examples=len(examples),
        steps=int(output.global_step),
        train_loss=float(output.training_loss),
        trainable_parameters=int(trainable),
        total_parameters=int(total),
        runtime_s=float(output.metrics.get("train_runtime", 0.0)),
        loss_history=history,
    )
