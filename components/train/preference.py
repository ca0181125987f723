"""Preference tuning (DPO, ORPO) of a LoRA adapter with TRL, on the privacy-preserving and
the leaking summary of each conversation.

A pair's prompt is the ``private_summary`` task's (the instruction and the transcript, cut
by :func:`fit_prompt` as training and evaluation cut it), its chosen answer
``labels.summary_private`` and its rejected one ``labels.summary_leaking``. LoRA goes
through peft (TRL's ``peft_config``; with it DPO's reference model is the base with the
adapter switched off, so no second copy is loaded), DeepSpeed through the same config
file as SFT, and a killed run resumes from its checkpoint like SFT's.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from components.core.corpus import Conversation
from components.core.errors import InputError
from components.train.config import TrainConfig
from components.train.lora import (
    TrainResult,
    check_target_modules,
    checkpoint_step,
    deepspeed_config,
    engine_name,
    ensure_distributed_environment,
    lora_config,
    mean_train_loss,
    remove_checkpoints,
    save_adapter,
    schedule_arguments,
    world_checkpoint,
)
from components.train.tasks import (
    PRIVATE_SUMMARY,
    eval_conversations,
    fit_prompt,
    label_options,
    task_prompt,
    transcript,
)

logger = logging.getLogger(__name__)
# Tokens kept for a pair's answers when its prompt is cut to max_seq_length.
ANSWER_ROOM = 160
# TRL's logged figures kept in the train metrics (the last logged value of each).
PREFERENCE_LOGS = ("rewards/accuracies", "rewards/margins", "rewards/chosen", "rewards/rejected")


@dataclass(frozen=True)
class PreferencePair:
    """One conversation's privacy-preserving (chosen) and leaking (rejected) summary."""

    conversation_id: str
    prompt: str
    chosen: str
    rejected: str

    def to_row(self) -> dict[str, list[dict[str, str]]]:
        """The pair in TRL's conversational form: TRL applies the tokenizer's chat template
        as SFT's examples are formatted."""
        return {
            "prompt": [{"role": "user", "content": self.prompt}],
            "chosen": [{"role": "assistant", "content": self.chosen}],
            "rejected": [{"role": "assistant", "content": self.rejected}],
        }


def preference_pairs(conversations: Sequence[Conversation], where: str) -> list[PreferencePair]:
    """The pair of each conversation that has both summaries.

    Raises:
        InputError: none has both (``where`` names the corpus file).
    """
    pairs = []
    for conversation in conversations:
        chosen = conversation.labels.get("summary_private")
        rejected = conversation.labels.get("summary_leaking")
        if isinstance(chosen, str) and chosen and isinstance(rejected, str) and rejected:
            prompt = task_prompt(PRIVATE_SUMMARY, transcript(conversation))
            pairs.append(PreferencePair(conversation.id, prompt, chosen, rejected))
    if not pairs:
        raise InputError(
            f"{where}: train.method needs preference pairs, and none of the "
            f"{len(conversations)} training conversations has both labels.summary_private "
            "and labels.summary_leaking (ingest.sensitive_conversations generates them)"
        )
    return pairs


def split_pairs(
    pairs: Sequence[PreferencePair], eval_fraction: float, seed: int
) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """Training and eval pairs, split by conversation as SFT's examples are."""
    held = eval_conversations([p.conversation_id for p in pairs], eval_fraction, seed)
    return (
        [p for p in pairs if p.conversation_id not in held],
        [p for p in pairs if p.conversation_id in held],
    )


def train_preference(
    base_model_dir: Path,
    conversations: Sequence[Conversation],
    config: TrainConfig,
    output_dir: Path,
    work_dir: Path,
    callbacks: Sequence[Any] = (),
    where: str = "the training corpus",
) -> TrainResult:
    """Preference-tune a LoRA adapter (``config.method``: dpo | orpo); save it to
    ``output_dir``, checkpoints in ``work_dir`` as :func:`train_lora` keeps them."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

    from components.train.live_metrics import use_step_bar

    deepspeed = deepspeed_config(config.deepspeed) if config.deepspeed else None
    if not (base_model_dir / "config.json").is_file():
        raise InputError(f"{base_model_dir}: not a Hugging Face model folder (no config.json)")
    pairs = preference_pairs(conversations, where)
    set_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    room = max(16, config.max_seq_length - ANSWER_ROOM)
    fitted = [
        PreferencePair(
            p.conversation_id, fit_prompt(p.prompt, tokenizer, room), p.chosen, p.rejected
        )
        for p in pairs
    ]
    train, evaluation = split_pairs(fitted, config.eval_fraction, config.seed)
    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model.config.use_cache = False
    check_target_modules(model, config.target_modules)
    own_world = deepspeed is not None and ensure_distributed_environment()
    args = _trl_args(config, work_dir, deepspeed, bool(evaluation), torch)
    resume = world_checkpoint(work_dir, _fingerprint(config, train))
    trainer = _trainer_class(config.method)(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([p.to_row() for p in train]),
        eval_dataset=Dataset.from_list([p.to_row() for p in evaluation]) if evaluation else None,
        processing_class=tokenizer,
        peft_config=lora_config(config),
        callbacks=list(callbacks),
    )
    use_step_bar(trainer)
    trainable, total = trainer.model.get_nb_trainable_parameters()
    output = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    save_adapter(trainer, tokenizer, label_options(conversations), output_dir, config.generation)
    if trainer.is_world_process_zero():
        remove_checkpoints(work_dir)
    if own_world and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    history = trainer.state.log_history
    return TrainResult(
        n_examples=len(pairs),
        steps=int(output.global_step),
        train_loss=mean_train_loss(history),
        trainable_parameters=int(trainable),
        total_parameters=int(total),
        runtime_s=float(output.metrics.get("train_runtime", 0.0)),
        loss_history=[(int(h["step"]), float(h["loss"])) for h in history if "loss" in h],
        n_sequences=len(train),
        resumed_from_step=checkpoint_step(resume) if resume else 0,
        engine=engine_name(trainer),
        world_size=int(args.world_size),
        eval_history=[(int(h["step"]), float(h["eval_loss"])) for h in history if "eval_loss" in h],
        n_eval_examples=len(evaluation),
        n_conversations=len(train),
        n_conversations_eval=len(evaluation),
        n_conversations_skipped=len(conversations) - len(pairs),
        preference=last_logged(history, PREFERENCE_LOGS),
    )


def last_logged(history: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, float]:
    """The last training value logged for each name (``rewards/margins`` →
    ``preference.rewards_margins``); eval entries (``eval_``-prefixed) are not these."""
    found: dict[str, float] = {}
    for entry in history:
        for name in names:
            if name in entry:
                found[f"preference.{name.replace('/', '_')}"] = round(float(entry[name]), 4)
    return found


def _trainer_class(method: str) -> Any:
    if method == "dpo":
        from trl import DPOTrainer

        return DPOTrainer
    # ORPO lives in TRL's experimental namespace since TRL 1.0.
    from trl.experimental.orpo import ORPOTrainer

    return ORPOTrainer


def _trl_args(
    config: TrainConfig,
    work_dir: Path,
    deepspeed: dict[str, Any] | None,
    evaluating: bool,
    torch: Any,
) -> Any:
    """TRL's config for the method, with SFT's schedule, checkpoints and engine."""
    method_config: Any
    if config.method == "dpo":
        from trl import DPOConfig

        method_config = DPOConfig
    else:
        from trl.experimental.orpo import ORPOConfig

        method_config = ORPOConfig
    return method_config(
        **schedule_arguments(config, work_dir, deepspeed, evaluating, torch),
        beta=config.beta,
        max_length=config.max_seq_length,
        # TRL turns it on by default; SFT runs without it (LoRA on a small model fits). Its
        # current name: the deprecated gradient_checkpointing warned on every run.
        activation_checkpointing=False,
    )


def _fingerprint(config: TrainConfig, pairs: Sequence[PreferencePair]) -> str:
    digest = hashlib.sha256(json.dumps(asdict(config), sort_keys=True).encode())
    for pair in pairs:
        digest.update(json.dumps([pair.prompt, pair.chosen, pair.rejected]).encode())
    return digest.hexdigest()
