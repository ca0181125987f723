"""Supervised fine-tuning (``train.method: sft``) of a LoRA adapter on the anonymized
conversations' task examples, with the Hugging Face Trainer: examples tokenized with the
loss on the answer alone, packed several to a row (or padded), checkpointed and resumable."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.corpus import Conversation
from components.train.chat_tokens import tokenize_example
from components.train.checkpoints import fingerprint, world_checkpoint
from components.train.engine import own_world, schedule_arguments
from components.train.fragments import build_fragments
from components.train.packing import PackedCollator, pack_examples, padding_share
from components.train.params import TrainParams
from components.train.private import train_private
from components.train.result import TrainResult
from components.train.session import (
    TrainerRun,
    base_model,
    check_inputs,
    finish,
    lora_config,
    run_trainer,
    seeded_tokenizer,
    trained,
)
from components.train.tasks import Example, TrainingExamples, label_options, training_examples
from components.train.training_method import TrainingJob

logger = logging.getLogger(__name__)

Rows = list[dict[str, list[int]]]  # token ids and labels of each training row


class SupervisedFineTuning:
    """``train.method: sft``: the loss on the answers of the selected tasks' examples (or
    of the fragments' continuations, with ``train.corpus: fragmented``)."""

    name = "sft"

    def check(self, config: TrainParams) -> None:
        """SFT trains with any params :class:`TrainParams` accepts."""

    def train(self, job: TrainingJob) -> TrainResult:
        if job.config.privacy.enabled:
            return train_private(job)
        return train_lora(
            job.base_model_dir,
            job.conversations,
            config=job.config,
            output_dir=job.output_dir,
            work_dir=job.work_dir,
            callbacks=job.callbacks,
            examples=job.examples,
            canaries=job.canaries,
        )


SFT = SupervisedFineTuning()


def train_lora(
    base_model_dir: Path,
    conversations: Sequence[Conversation],
    *,
    config: TrainParams,
    output_dir: Path,
    work_dir: Path,
    callbacks: Sequence[Any] = (),
    examples: TrainingExamples | None = None,
    canaries: Sequence[Example] = (),
) -> TrainResult:
    """Fine-tune a LoRA adapter on the conversations' task examples; save it to output_dir.

    ``examples``, when given, are trained on instead of those built from the conversations
    (the train stage passes the fragmented corpus's it has built, see
    :func:`corpus_examples`). ``canaries`` (the one-run audit's inserted ones) are trained
    on beside them.

    Checkpoints go to ``work_dir`` every ``config.save_steps`` steps. A run that finds a
    checkpoint there made from the same config and examples resumes from it (a killed
    stage picks up where it stopped); a checkpoint from anything else, or from a run that
    had finished, is discarded (see :func:`resumable_checkpoint`). Once the adapter is
    saved, the run's checkpoints are removed. A conversation without a label for
    ``config.tasks`` is skipped and counted (``n_conversations_skipped``).
    """
    deepspeed = check_inputs(base_model_dir, config)
    tokenizer = seeded_tokenizer(base_model_dir, config.seed)
    options = label_options(conversations)
    split = (
        examples
        if examples is not None
        else corpus_examples(conversations, config, options=options)
    )
    _log_skipped(split, len(conversations), config=config)
    tokenized = _tokenized([*split.train, *canaries], tokenizer, config=config)
    evaluation = _tokenized(split.evaluation, tokenizer, config=config)
    model = _lora_model(base_model_dir, config)
    batches = SftBatches.of(tokenized, evaluation, tokenizer=tokenizer, config=config)
    own = own_world(deepspeed)
    args = _arguments(config, work_dir, deepspeed=deepspeed, evaluating=bool(batches.evaluation))
    # The arguments start the launcher's process group: every rank now resumes as rank 0 says.
    resume = world_checkpoint(work_dir, training_fingerprint(config, tokenized))
    counted = CountingRows(batches.train)
    trainer = _trainer(
        model, args, rows=counted, batches=batches, config=config, callbacks=callbacks
    )
    run = run_trainer(trainer, resume)
    finish(
        trainer,
        tokenizer,
        options=options,
        output_dir=output_dir,
        config=config,
        work_dir=work_dir,
        own_world=own,
    )
    _log_fetched(args, counted)
    figures = _sft_figures(split, batches, counted=counted, config=config, run=run)
    return trained(trainer, run, **figures, n_audit_canaries=len(canaries))


def corpus_examples(
    conversations: Sequence[Conversation],
    config: TrainParams,
    *,
    options: dict[str, list[str]] | None = None,
) -> TrainingExamples:
    """The training and eval examples ``config`` makes of the conversations: the task
    examples, or with ``train.corpus: fragmented`` the fragments of their chunks."""
    if config.corpus == "fragmented":
        fragments = build_fragments(
            conversations, config.fragments, eval_fraction=config.eval_fraction, seed=config.seed
        )
        return fragments.training_examples()
    return training_examples(
        conversations,
        config.tasks,
        eval_fraction=config.eval_fraction,
        seed=config.seed,
        options=options,
        only_good=config.only_good,
    )


def _log_skipped(split: TrainingExamples, n_conversations: int, *, config: TrainParams) -> None:
    if split.skipped:
        logger.info(
            "%d of %d conversations have no example (%s): skipped",
            len(split.skipped),
            n_conversations,
            "no chunk in a fragment"
            if config.corpus == "fragmented"
            else f"no label for train.tasks {config.tasks}",
        )


def _tokenized(examples: Sequence[Any], tokenizer: Any, *, config: TrainParams) -> Rows:
    return [
        tokenize_example(
            e, tokenizer, max_length=config.max_seq_length, mask_loss_weight=config.mask_loss_weight
        )
        for e in examples
    ]


def _lora_model(base_model_dir: Path, config: TrainParams) -> Any:
    """The base model with the LoRA adapter params describe, its only trainable weights."""
    from peft import get_peft_model

    return get_peft_model(base_model(base_model_dir, config), lora_config(config))


@dataclass(frozen=True)
class SftBatches:
    """The training and eval rows (packed, or one example each) and the collator that
    batches them."""

    train: Rows
    evaluation: Rows
    collator: Any

    @classmethod
    def of(
        cls, tokenized: Rows, evaluation: Rows, *, tokenizer: Any, config: TrainParams
    ) -> SftBatches:
        if config.packing:
            return cls(
                pack_examples(tokenized, config.max_seq_length),
                pack_examples(evaluation, config.max_seq_length),
                PackedCollator(int(tokenizer.pad_token_id)),
            )
        from transformers import DataCollatorForSeq2Seq

        collator = DataCollatorForSeq2Seq(
            tokenizer,
            padding=config.padding,
            max_length=config.max_seq_length,
            label_pad_token_id=-100,
        )
        return cls(tokenized, evaluation, collator)


def _arguments(
    config: TrainParams, work_dir: Path, *, deepspeed: dict[str, Any] | None, evaluating: bool
) -> Any:
    """The Trainer's arguments: the shared schedule, and the best checkpoint's weights kept
    at the end when there is an eval loss to choose it by."""
    from transformers import TrainingArguments

    return TrainingArguments(
        **schedule_arguments(config, work_dir, deepspeed=deepspeed, evaluating=evaluating),
        load_best_model_at_end=evaluating,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
        disable_tqdm=False,  # the step bar on stderr (total: max_steps)
    )


def _trainer(
    model: Any,
    args: Any,
    *,
    rows: CountingRows,
    batches: SftBatches,
    config: TrainParams,
    callbacks: Sequence[Any],
) -> Any:
    """The Trainer; it evaluates at every checkpoint and stops when the eval loss has not
    improved for ``early_stopping_patience`` evaluations."""
    from transformers import EarlyStoppingCallback, Trainer

    stopping = (
        [EarlyStoppingCallback(early_stopping_patience=config.early_stopping_patience)]
        if batches.evaluation and config.early_stopping_patience
        else []
    )
    return Trainer(
        model=model,
        args=args,
        train_dataset=rows,
        eval_dataset=batches.evaluation or None,
        data_collator=batches.collator,
        callbacks=[*stopping, *callbacks],
    )


def _log_fetched(args: Any, counted: CountingRows) -> None:
    logger.info(
        "rank %d of %d fetched %d of the %d training rows",
        args.process_index,
        args.world_size,
        len(counted.fetched),
        len(counted),
    )
    logger.debug("rank %d fetched rows %s", args.process_index, counted.indices())


def _sft_figures(
    split: TrainingExamples,
    batches: SftBatches,
    *,
    counted: CountingRows,
    config: TrainParams,
    run: TrainerRun,
) -> dict[str, Any]:
    """SFT's own figures: examples and rows, padding, and the tokens trained on."""
    dataset = batches.train
    rows_per_step = config.batch_size * config.gradient_accumulation_steps
    steps_run = int(run.output.global_step) - run.resumed_from_step
    width = config.max_seq_length if not config.packing and config.padding == "max_length" else None
    return {
        "n_examples": len(split.train) + len(split.evaluation),
        "n_sequences": len(dataset),
        "padding_share": round(
            padding_share(dataset, config.batch_size, seed=config.seed, width=width), 4
        ),
        "tokens_trained": counted.tokens(steps_run * rows_per_step),
        "tokens_per_step": sum(len(row["input_ids"]) for row in dataset)
        / len(dataset)
        * config.batch_size
        * config.gradient_accumulation_steps,
        "n_eval_examples": len(split.evaluation),
        "n_conversations": len(split.trained_ids),
        "n_conversations_eval": len(split.eval_ids),
        "n_conversations_skipped": len(split.skipped),
    }


class CountingRows:
    """Training rows that note the index and non-padding tokens of each row the Trainer
    fetches, in fetch order: the first ``steps × rows per step`` of them are what a run
    trained on (the data loader fetches a batch ahead, so the last fetched are not). Under a
    launcher, each rank fetches only its share of every batch."""

    def __init__(self, rows: Sequence[dict[str, list[int]]]) -> None:
        self.rows = rows
        self.fetched: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        row = self.rows[index]
        self.fetched.append((index, len(row["input_ids"])))
        return row

    def tokens(self, n_rows: int) -> int:
        return sum(tokens for _, tokens in self.fetched[:n_rows])

    def indices(self) -> list[int]:
        return [index for index, _ in self.fetched]


def training_fingerprint(config: TrainParams, tokenized: Sequence[dict[str, list[int]]]) -> str:
    """The fingerprint SFT's checkpoints are resumed by: the params and every example's
    token ids and labels."""
    return fingerprint(
        config,
        (part for example in tokenized for part in (example["input_ids"], example["labels"])),
    )
