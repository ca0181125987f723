"""LoRA fine-tuning of a causal LM on anonymized conversations with the Hugging Face Trainer."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from components.core.corpus import Conversation
from components.core.errors import InputError, ParamsError
from components.train.chat_tokens import tokenize_example
from components.train.config import GenerationSettings, TrainConfig
from components.train.generation import write_generation_settings
from components.train.packing import PackedCollator, pack_examples, padding_share
from components.train.tasks import TrainingExamples, label_options, training_examples

logger = logging.getLogger(__name__)
LABEL_OPTIONS_FILE = "veiltune_label_options.json"


@dataclass(frozen=True)
class TrainResult:
    n_examples: int
    steps: int
    train_loss: float
    trainable_parameters: int
    total_parameters: int
    runtime_s: float
    loss_history: list[tuple[int, float]]
    n_sequences: int = 0  # training rows: examples, or packed rows of several
    padding_share: float = 0.0
    resumed_from_step: int = 0
    tokens_per_step: float = 0.0  # non-padding tokens in a mean optimizer step
    tokens_trained: int = 0  # non-padding tokens of the rows this run trained on
    engine: str = "torch"  # or "deepspeed-zero<stage>"
    world_size: int = 1  # processes that trained, each on its share of every batch
    eval_history: list[tuple[int, float]] = field(default_factory=list)
    n_eval_examples: int = 0
    n_conversations: int = 0  # conversations whose examples were trained on
    n_conversations_eval: int = 0  # conversations held out to measure eval loss
    n_conversations_skipped: int = 0  # no example for the selected train.tasks
    # preference tuning: TRL's last logged rewards (``preference.rewards_margins`` ...)
    preference: dict[str, float] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        """Non-padding tokens trained on per second: the rows the run fetched, counted (the
        dataset's mean batch times the steps, when no count was made)."""
        if not self.runtime_s:
            return 0.0
        if self.tokens_trained:
            return self.tokens_trained / self.runtime_s
        return self.tokens_per_step * (self.steps - self.resumed_from_step) / self.runtime_s

    def to_metrics(self) -> dict[str, float | str]:
        return {
            "n_examples": self.n_examples,
            "steps": self.steps,
            "train_loss": round(self.train_loss, 4),
            "trainable_parameters": self.trainable_parameters,
            "total_parameters": self.total_parameters,
            "runtime_s": round(self.runtime_s, 2),
            "n_sequences": self.n_sequences,
            "padding_share": self.padding_share,
            "resumed_from_step": self.resumed_from_step,
            "tokens_per_second": round(self.tokens_per_second, 1),
            "engine": self.engine,
            "world_size": self.world_size,
            "n_eval_examples": self.n_eval_examples,
            "n_conversations": self.n_conversations,
            "n_conversations_eval": self.n_conversations_eval,
            "n_conversations_skipped": self.n_conversations_skipped,
            **self.preference,
            **(
                {"best_eval_loss": round(min(loss for _, loss in self.eval_history), 4)}
                if self.eval_history
                else {}
            ),
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


def train_lora(
    base_model_dir: Path,
    conversations: Sequence[Conversation],
    config: TrainConfig,
    output_dir: Path,
    work_dir: Path,
    callbacks: Sequence[Any] = (),
    examples: TrainingExamples | None = None,
) -> TrainResult:
    """Fine-tune a LoRA adapter on the conversations' task examples; save it to output_dir.

    ``examples``, when given, are trained on instead of those built from the conversations
    (the train stage passes the fragmented corpus's it has built, see
    :func:`corpus_examples`).

    Checkpoints go to ``work_dir`` every ``config.save_steps`` steps. A run that finds a
    checkpoint there made from the same config and examples resumes from it (a killed
    stage picks up where it stopped); a checkpoint from anything else, or from a run that
    had finished, is discarded (see :func:`resumable_checkpoint`). Once the adapter is
    saved, the run's checkpoints are removed. A conversation without a label for
    ``config.tasks`` is skipped and counted (``n_conversations_skipped``).
    """
    import torch
    from peft import get_peft_model
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        DataCollatorForSeq2Seq,
        EarlyStoppingCallback,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    from components.train.live_metrics import use_step_bar

    # Everything that can be checked is checked before any compute is spent.
    deepspeed = deepspeed_config(config.deepspeed) if config.deepspeed else None
    if not (base_model_dir / "config.json").is_file():
        raise InputError(f"{base_model_dir}: not a Hugging Face model folder (no config.json)")
    set_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    options = label_options(conversations)
    split = examples if examples is not None else corpus_examples(conversations, config, options)
    if split.skipped:
        logger.info(
            "%d of %d conversations have no example (%s): skipped",
            len(split.skipped),
            len(conversations),
            "no chunk in a fragment"
            if config.corpus == "fragmented"
            else f"no label for train.tasks {config.tasks}",
        )
    tokenized = [
        tokenize_example(e, tokenizer, config.max_seq_length, config.mask_loss_weight)
        for e in split.train
    ]
    evaluation = [
        tokenize_example(e, tokenizer, config.max_seq_length, config.mask_loss_weight)
        for e in split.evaluation
    ]
    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    # No KV cache in training: with one, transformers skips the block-diagonal mask that
    # keeps packed examples apart.
    model.config.use_cache = False
    check_target_modules(model, config.target_modules)
    model = get_peft_model(model, lora_config(config))
    trainable, total = model.get_nb_trainable_parameters()
    if config.packing:
        dataset: list[dict[str, list[int]]] = pack_examples(tokenized, config.max_seq_length)
        eval_dataset = pack_examples(evaluation, config.max_seq_length)
        collator: Any = PackedCollator(int(tokenizer.pad_token_id))
    else:
        dataset, eval_dataset = tokenized, evaluation
        collator = DataCollatorForSeq2Seq(
            tokenizer,
            padding=config.padding,
            max_length=config.max_seq_length,
            label_pad_token_id=-100,
        )
    # Evaluate at every checkpoint; stop when the eval loss has not improved for
    # `early_stopping_patience` evaluations, and keep the best checkpoint's weights.
    evaluating = bool(eval_dataset)
    stopping = (
        [EarlyStoppingCallback(early_stopping_patience=config.early_stopping_patience)]
        if evaluating and config.early_stopping_patience
        else []
    )
    own_world = deepspeed is not None and ensure_distributed_environment()
    args = TrainingArguments(
        **schedule_arguments(config, work_dir, deepspeed, evaluating, torch),
        load_best_model_at_end=evaluating,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
        disable_tqdm=False,  # the step bar on stderr (total: max_steps)
    )
    # The arguments start the launcher's process group: every rank now resumes as rank 0 says.
    resume = world_checkpoint(work_dir, training_fingerprint(config, tokenized))
    counted = CountingRows(dataset)
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=counted,
        eval_dataset=eval_dataset or None,
        data_collator=collator,
        callbacks=[*stopping, *callbacks],
    )
    use_step_bar(trainer)
    if resume:
        logger.info("resuming training from %s", resume)
    output = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    save_adapter(trainer, tokenizer, options, output_dir, config.generation)
    if trainer.is_world_process_zero():
        remove_checkpoints(work_dir)
    logger.info(
        "rank %d of %d fetched %d of the %d training rows",
        args.process_index,
        args.world_size,
        len(counted.fetched),
        len(dataset),
    )
    logger.debug("rank %d fetched rows %s", args.process_index, counted.indices())
    if own_world and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # a clean exit, not an abort in gloo
    width = config.max_seq_length if not config.packing and config.padding == "max_length" else None
    history = [(int(h["step"]), float(h["loss"])) for h in trainer.state.log_history if "loss" in h]
    evals = [
        (int(h["step"]), float(h["eval_loss"]))
        for h in trainer.state.log_history
        if "eval_loss" in h
    ]
    return TrainResult(
        n_examples=len(split.train) + len(split.evaluation),
        steps=int(output.global_step),
        train_loss=mean_train_loss(trainer.state.log_history),
        trainable_parameters=int(trainable),
        total_parameters=int(total),
        runtime_s=float(output.metrics.get("train_runtime", 0.0)),
        loss_history=history,
        n_sequences=len(dataset),
        padding_share=round(padding_share(dataset, config.batch_size, config.seed, width), 4),
        resumed_from_step=checkpoint_step(resume) if resume else 0,
        tokens_trained=counted.tokens(
            (int(output.global_step) - (checkpoint_step(resume) if resume else 0))
            * config.batch_size
            * config.gradient_accumulation_steps
        ),
        tokens_per_step=sum(len(row["input_ids"]) for row in dataset)
        / len(dataset)
        * config.batch_size
        * config.gradient_accumulation_steps,
        engine=engine_name(trainer),
        world_size=int(args.world_size),
        eval_history=evals,
        n_eval_examples=len(evaluation),
        n_conversations=len(split.trained_ids),
        n_conversations_eval=len(split.eval_ids),
        n_conversations_skipped=len(split.skipped),
    )


def schedule_arguments(
    config: TrainConfig,
    work_dir: Path,
    deepspeed: dict[str, Any] | None,
    evaluating: bool,
    torch: Any,
) -> dict[str, Any]:
    """The Trainer arguments every training method shares: schedule, checkpoints (and eval)
    every ``save_steps``, the engine, no reporting."""
    return {
        "output_dir": str(work_dir),
        "max_steps": config.max_steps,
        "per_device_train_batch_size": config.batch_size,
        "per_device_eval_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "learning_rate": config.learning_rate,
        "seed": config.seed,
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": config.save_steps,
        "eval_strategy": "steps" if evaluating else "no",
        "eval_steps": config.save_steps,
        "save_total_limit": 2,
        "report_to": "none",
        "dataloader_num_workers": 0,
        "remove_unused_columns": False,
        "deepspeed": deepspeed,
        # DeepSpeed (or a launcher's world) on CPU talks over gloo; a plain run is no world.
        "ddp_backend": "gloo"
        if is_distributed(deepspeed) and not torch.cuda.is_available()
        else None,
        "bf16": bf16_supported(torch),
        **deepspeed_world_on_cpu(deepspeed, torch),
    }


def deepspeed_world_on_cpu(deepspeed: dict[str, Any] | None, torch: Any) -> dict[str, Any]:
    """The launcher's world made known to the Trainer for DeepSpeed on CPU; the Trainer
    arguments that tell it to use it.

    Accelerate names no process-group backend for DeepSpeed without a GPU, and counts a
    state without a backend as one process: each rank of a two-process launch then took
    itself for rank 0 of 1, trained on every batch and wrote every output (seen with
    accelerate 1.15, transformers 5.23). So on CPU the state is made here, with gloo, before
    the arguments are; it replaces any earlier state of the process, as the Trainer's own
    set-up does.
    """
    if deepspeed is None or torch.cuda.is_available():
        return {}
    import os

    from accelerate import PartialState
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    os.environ["ACCELERATE_USE_DEEPSPEED"] = "true"  # what the Trainer sets for its own
    try:
        PartialState(backend="gloo")
    finally:
        del os.environ["ACCELERATE_USE_DEEPSPEED"]
    return {"accelerator_config": {"use_configured_state": True}}


def corpus_examples(
    conversations: Sequence[Conversation],
    config: TrainConfig,
    options: dict[str, list[str]] | None = None,
) -> TrainingExamples:
    """The training and eval examples ``config`` makes of the conversations: the task
    examples, or with ``train.corpus: fragmented`` the fragments of their chunks."""
    if config.corpus == "fragmented":
        from components.train.fragments import build_fragments

        fragments = build_fragments(
            conversations, config.fragments, config.eval_fraction, config.seed
        )
        return fragments.training_examples()
    return training_examples(
        conversations, config.tasks, config.eval_fraction, config.seed, options, config.only_good
    )


def mean_train_loss(log_history: Sequence[dict[str, Any]]) -> float:
    """The mean training loss over every step of the run, from the Trainer's log history.

    Each ``loss`` entry is the mean over the steps since the one logged before it, so it
    weighs that many steps. A resumed Trainer restores the history up to its checkpoint
    (``trainer_state.json``), so a killed and resumed run reports what an uninterrupted one
    does; ``TrainOutput.training_loss`` covers only the steps of this process.
    """
    total, last = 0.0, 0
    for entry in log_history:
        step = int(entry.get("step", 0))
        if "loss" in entry and step > last:
            total += float(entry["loss"]) * (step - last)
            last = step
    return total / last if last else 0.0


def save_adapter(
    trainer: Any,
    tokenizer: Any,
    options: dict[str, list[str]],
    output_dir: Path,
    generation: GenerationSettings,
) -> None:
    """The trained adapter, its tokenizer, its label options and its generation settings,
    saved to ``output_dir``.

    ``target_modules`` is written sorted: peft keeps it as a set, whose order varies with
    PYTHONHASHSEED, and a config that differs between identical runs makes DVC re-run
    everything downstream.
    """
    # The Trainer gathers ZeRO-3 partitioned weights before saving (every rank takes part,
    # rank 0 writes); the model alone cannot.
    trainer.save_model(str(output_dir))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(output_dir)
        # The prompts' label options belong to the adapter: evaluation and serving ask
        # with them.
        (output_dir / LABEL_OPTIONS_FILE).write_text(json.dumps(options, indent=2), "utf-8")
        write_generation_settings(output_dir, generation)
        sort_target_modules(output_dir / "adapter_config.json")


def sort_target_modules(adapter_config: Path) -> None:
    """Rewrite a saved ``adapter_config.json`` with its ``target_modules`` list sorted, in
    peft's own layout (sorted keys, two-space indent)."""
    config = json.loads(adapter_config.read_text(encoding="utf-8"))
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    adapter_config.write_text(json.dumps(config, indent=2, sort_keys=True), encoding="utf-8")


def remove_checkpoints(work_dir: Path) -> None:
    """Remove a finished run's checkpoints: they exist to recover from a kill, not to cache
    results (DVC caches the adapter), and a re-run must not resume from them."""
    for checkpoint in work_dir.glob("checkpoint-*"):
        shutil.rmtree(checkpoint)


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


def read_label_options(adapter_dir: Path) -> dict[str, list[str]]:
    """The label options the adapter was trained with ({} for an adapter without them)."""
    path = adapter_dir / LABEL_OPTIONS_FILE
    if not path.is_file():
        return {}
    return {str(k): [str(v) for v in vs] for k, vs in json.loads(path.read_text("utf-8")).items()}


def deepspeed_config(path: str) -> dict[str, Any]:
    """A DeepSpeed config read and checked before any compute is spent.

    Raises:
        ParamsError: the file is missing, not JSON, or has no ``zero_optimization.stage``.
    """
    where = Path(path)
    try:
        config = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ParamsError(f"params: train.deepspeed: no such file {where}") from exc
    except json.JSONDecodeError as exc:
        raise ParamsError(f"params: train.deepspeed: {where} is not JSON: {exc}") from exc
    stage = config.get("zero_optimization", {}).get("stage") if isinstance(config, dict) else None
    if stage not in (0, 1, 2, 3):
        raise ParamsError(f"params: train.deepspeed: {where} has no zero_optimization.stage 0-3")
    return dict(config)


def ensure_distributed_environment() -> bool:
    """Single-process defaults for what the ``deepspeed`` launcher sets (rank, world size,
    master address and port), so one CPU or GPU runs the same code as a cluster. True when
    it set them (the world is this process's own to tear down)."""
    import os
    import socket

    if all(key in os.environ for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        return False
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for key, value in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }.items():
        os.environ.setdefault(key, value)
    return True


def is_distributed(deepspeed: dict[str, Any] | None) -> bool:
    import os

    return deepspeed is not None or int(os.environ.get("WORLD_SIZE", "1")) > 1


def engine_name(trainer: Any) -> str:
    """``deepspeed-zero<stage>`` when the model trained wrapped in a DeepSpeed engine."""
    wrapped = getattr(trainer, "model_wrapped", None)
    stage = getattr(wrapped, "zero_optimization_stage", None)
    return f"deepspeed-zero{stage()}" if callable(stage) else "torch"


def bf16_supported(torch: Any) -> bool:
    return bool(torch.cuda.is_available() and torch.cuda.isbf16_supported())


def check_target_modules(model: Any, target_modules: Sequence[str]) -> None:
    """Refuse LoRA target modules the model does not have, before any training."""
    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    missing = [m for m in target_modules if m not in names]
    if missing:
        import torch

        linear = sorted(
            {
                n.rsplit(".", 1)[-1]
                for n, m in model.named_modules()
                if isinstance(m, torch.nn.Linear)
            }
        )
        raise ParamsError(
            f"params: train.target_modules {missing} are not modules of the base model; "
            f"its linear layers are {linear}"
        )


def world_checkpoint(work_dir: Path, fingerprint: str) -> Path | None:
    """:func:`resumable_checkpoint`, decided by rank 0 alone and sent to every rank.

    The ranks share ``work_dir``: were each to decide, one could clear the folder while
    another read it. Without a process group (a plain run) this process decides.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return resumable_checkpoint(work_dir, fingerprint)
    decision: list[str | None] = [None]
    if dist.get_rank() == 0:
        found = resumable_checkpoint(work_dir, fingerprint)
        decision = [str(found) if found else None]
    dist.broadcast_object_list(decision, src=0)
    return Path(decision[0]) if decision[0] else None


def world_rank() -> int:
    """This process's rank under a launcher (``RANK``, which every launcher sets before
    the process starts); 0 in a plain run."""
    import os

    return int(os.environ.get("RANK", "0"))


def resumable_checkpoint(work_dir: Path, fingerprint: str) -> Path | None:
    """The newest checkpoint in ``work_dir`` if it was made for ``fingerprint`` and its run
    had not finished; otherwise the work dir is cleared for a fresh run and None is returned.

    A finished run's checkpoint (at ``max_steps``, or stopped early) is left by a stage
    killed between its last checkpoint and saving the adapter (a finished run removes its
    checkpoints). Resuming it would train a step past the end; loading its weights instead
    would have to redo what the Trainer does at the end (load the best checkpoint, gather
    ZeRO-3 shards) and report figures of a run this process did not make. So the run is
    trained afresh: seeded, it gives the same adapter and metrics on CPU, and the case is
    rare (the window is the seconds it takes to save an adapter).
    """
    stamp = work_dir / "fingerprint"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == fingerprint:
        checkpoints = sorted(work_dir.glob("checkpoint-*"), key=checkpoint_step)
        complete = [c for c in checkpoints if (c / "trainer_state.json").is_file()]
        if not complete or not _finished(complete[-1]):
            return complete[-1] if complete else None
        logger.info("%s is the end of a finished run: training afresh", complete[-1])
    if work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)
    stamp.write_text(fingerprint, encoding="utf-8")
    return None


def _finished(checkpoint: Path) -> bool:
    """Whether the checkpoint's run had ended: at its ``max_steps``, or told to stop (early
    stopping saves the checkpoint of the evaluation that stopped it)."""
    state = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
    control = state.get("stateful_callbacks", {}).get("TrainerControl", {}).get("args", {})
    return bool(
        state.get("global_step", 0) >= state.get("max_steps", 0) > 0
        or control.get("should_training_stop")
    )


def checkpoint_step(path: Path) -> int:
    return int(path.name.rsplit("-", 1)[-1])


def training_fingerprint(config: TrainConfig, tokenized: Sequence[dict[str, list[int]]]) -> str:
    digest = hashlib.sha256(json.dumps(asdict(config), sort_keys=True).encode())
    for example in tokenized:
        digest.update(json.dumps(example["input_ids"]).encode())
        digest.update(json.dumps(example["labels"]).encode())
    return digest.hexdigest()
