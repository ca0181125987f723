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

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from components.core.config import require as _require
from components.core.corpus import Conversation
from components.core.errors import InputError, ParamsError
from components.train.checkpoints import fingerprint, world_checkpoint
from components.train.engine import own_world, schedule_arguments
from components.train.params import TrainParams
from components.train.result import TrainResult
from components.train.session import (
    base_model,
    check_inputs,
    finish,
    lora_config,
    run_trainer,
    seeded_tokenizer,
    trained,
)
from components.train.tasks import (
    PRIVATE_SUMMARY,
    eval_conversations,
    fit_prompt,
    label_options,
    task_prompt,
    transcript,
)
from components.train.training_method import TrainingJob

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

    def fitted(self, tokenizer: Any, room: int) -> PreferencePair:
        """The pair with its prompt cut to ``room`` tokens as training and evaluation cut
        it (:func:`fit_prompt`)."""
        return replace(self, prompt=fit_prompt(self.prompt, tokenizer, max_tokens=room))


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
    pairs: Sequence[PreferencePair], eval_fraction: float, *, seed: int
) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """Training and eval pairs, split by conversation as SFT's examples are."""
    held = eval_conversations([p.conversation_id for p in pairs], eval_fraction, seed=seed)
    return (
        [p for p in pairs if p.conversation_id not in held],
        [p for p in pairs if p.conversation_id in held],
    )


@dataclass(frozen=True)
class PreferenceMethod:
    """``train.method`` dpo or orpo: a TRL preference trainer, on the pairs of the
    conversations' privacy-preserving (chosen) and leaking (rejected) summaries."""

    name: str
    # The TRL trainer and its config class, imported when training (TRL is slow to import).
    trl_classes: Callable[[], tuple[Any, Any]]

    def check(self, config: TrainParams) -> None:
        """The pairs are the private_summary task's, of whole conversations, both kinds of
        summary trained on by design."""
        _require(
            list(config.tasks) == [PRIVATE_SUMMARY],
            "train.tasks",
            allowed=f"['{PRIVATE_SUMMARY}'] with train.method: {self.name} (its pairs are the "
            "privacy-preserving and the leaking summary)",
        )
        _require(
            config.corpus in ("anonymized", "raw"),
            "train.corpus",
            allowed=f"anonymized or raw with train.method: {self.name}",
        )
        _require(
            not config.only_good,
            "train.only_good",
            allowed=(
                f"false with train.method {self.name} (it trains on both "
                "kinds of summary by design)"
            ),
        )

    def train(self, job: TrainingJob) -> TrainResult:
        if job.canaries:
            raise ParamsError(
                f"params: ingest.audit_canaries: the one-run audit's canaries are trained as "
                f"supervised examples; train.method {self.name} trains on preference pairs: "
                "set ingest.audit_canaries to 0, or train.method to sft"
            )
        return train_preference(job, self)

    def arguments(
        self,
        config: TrainParams,
        work_dir: Path,
        *,
        deepspeed: dict[str, Any] | None,
        evaluating: bool,
    ) -> Any:
        """TRL's config for the method, with SFT's schedule, checkpoints and engine."""
        _, config_class = self.trl_classes()
        return config_class(
            **schedule_arguments(config, work_dir, deepspeed=deepspeed, evaluating=evaluating),
            beta=config.beta,
            max_length=config.max_seq_length,
            # TRL turns it on by default; SFT runs without it (LoRA on a small model fits).
            # Its current name: the deprecated gradient_checkpointing warned on every run.
            activation_checkpointing=False,
        )


def _dpo() -> tuple[Any, Any]:
    from trl import DPOConfig, DPOTrainer

    return DPOTrainer, DPOConfig


def _orpo() -> tuple[Any, Any]:
    # ORPO lives in TRL's experimental namespace since TRL 1.0.
    from trl.experimental.orpo import ORPOConfig, ORPOTrainer

    return ORPOTrainer, ORPOConfig


DPO = PreferenceMethod("dpo", _dpo)
ORPO = PreferenceMethod("orpo", _orpo)


def train_preference(job: TrainingJob, method: PreferenceMethod) -> TrainResult:
    """Preference-tune a LoRA adapter with ``method``; save it to ``job.output_dir``,
    checkpoints in ``job.work_dir`` as :func:`train_lora` keeps them."""
    config = job.config
    deepspeed = check_inputs(job.base_model_dir, config)
    pairs = preference_pairs(job.conversations, job.source)
    tokenizer = seeded_tokenizer(job.base_model_dir, config.seed)
    room = max(16, config.max_seq_length - ANSWER_ROOM)
    fitted = [p.fitted(tokenizer, room) for p in pairs]
    train, evaluation = split_pairs(fitted, config.eval_fraction, seed=config.seed)
    model = base_model(job.base_model_dir, config)
    own = own_world(deepspeed)
    args = method.arguments(config, job.work_dir, deepspeed=deepspeed, evaluating=bool(evaluation))
    resume = world_checkpoint(job.work_dir, _fingerprint(config, train))
    trainer = _trainer(
        method, model, args=args, pairs=(train, evaluation), tokenizer=tokenizer, job=job
    )
    run = run_trainer(trainer, resume)
    finish(
        trainer,
        tokenizer,
        options=label_options(job.conversations),
        output_dir=job.output_dir,
        config=config,
        work_dir=job.work_dir,
        own_world=own,
    )
    return trained(
        trainer,
        run,
        n_examples=len(pairs),
        n_sequences=len(train),
        n_eval_examples=len(evaluation),
        n_conversations=len(train),
        n_conversations_eval=len(evaluation),
        n_conversations_skipped=len(job.conversations) - len(pairs),
        preference=last_logged(trainer.state.log_history, PREFERENCE_LOGS),
    )


def _trainer(
    method: PreferenceMethod,
    model: Any,
    *,
    args: Any,
    pairs: tuple[list[PreferencePair], list[PreferencePair]],
    tokenizer: Any,
    job: TrainingJob,
) -> Any:
    """The method's TRL trainer on the training and eval pairs; LoRA through peft (with it,
    DPO's reference model is the base with the adapter switched off)."""
    from datasets import Dataset

    trainer_class, _ = method.trl_classes()
    train, evaluation = pairs
    return trainer_class(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([p.to_row() for p in train]),
        eval_dataset=Dataset.from_list([p.to_row() for p in evaluation]) if evaluation else None,
        processing_class=tokenizer,
        peft_config=lora_config(job.config),
        callbacks=list(job.callbacks),
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


def _fingerprint(config: TrainParams, pairs: Sequence[PreferencePair]) -> str:
    """The fingerprint the run's checkpoints are resumed by: the params and every pair."""
    return fingerprint(config, ([p.prompt, p.chosen, p.rejected] for p in pairs))
