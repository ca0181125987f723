"""The opening and the end every training method shares: the inputs checked, the seeded
tokenizer, the base model, LoRA, the Trainer run (resumed from its checkpoint), the adapter
saved with what evaluation and serving read beside it, and the run's figures."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.errors import InputError, ParamsError
from components.train.checkpoints import checkpoint_step, remove_checkpoints
from components.train.engine import deepspeed_config, end_own_world, engine_name
from components.train.generation import write_generation_settings
from components.train.params import GenerationSettings, TrainParams
from components.train.result import TrainResult, logged, mean_train_loss

logger = logging.getLogger(__name__)
LABEL_OPTIONS_FILE = "veiltune_label_options.json"


def check_inputs(base_model_dir: Path, config: TrainParams) -> dict[str, Any] | None:
    """The DeepSpeed config (None without one), once it and the base model folder are
    checked: everything that can be checked is, before any compute is spent.

    Raises:
        ParamsError: a bad ``train.deepspeed`` file.
        InputError: ``base_model_dir`` is not a Hugging Face model folder.
    """
    deepspeed = deepspeed_config(config.deepspeed) if config.deepspeed else None
    if not (base_model_dir / "config.json").is_file():
        raise InputError(f"{base_model_dir}: not a Hugging Face model folder (no config.json)")
    return deepspeed


def seeded_tokenizer(base_model_dir: Path, seed: int) -> Any:
    """Every random generator seeded with ``seed``, then the base model's tokenizer (its
    end-of-sequence token pads when it has no padding token)."""
    from transformers import AutoTokenizer, set_seed

    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def base_model(base_model_dir: Path, config: TrainParams) -> Any:
    """The base model in float32, without KV cache, once its LoRA target modules are found.

    No KV cache in training: with one, transformers skips the block-diagonal mask that keeps
    packed examples apart.
    """
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model.config.use_cache = False
    check_target_modules(model, config.target_modules)
    return model


def lora_config(config: TrainParams) -> Any:
    """The peft LoraConfig that params describe."""
    from peft import LoraConfig, TaskType

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.target_modules),
        task_type=TaskType.CAUSAL_LM,
    )


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


@dataclass(frozen=True)
class TrainerRun:
    """A Trainer's finished run: its output, the checkpoint it resumed from, and the
    adapter's trainable and total parameters."""

    output: Any  # transformers' TrainOutput
    resume: Path | None
    trainable: int
    total: int

    @property
    def resumed_from_step(self) -> int:
        return checkpoint_step(self.resume) if self.resume else 0


def run_trainer(trainer: Any, resume: Path | None) -> TrainerRun:
    """Train with the step bar on stderr, from ``resume`` when there is a checkpoint."""
    from components.train.live_metrics import use_step_bar

    use_step_bar(trainer)
    # Counted on the Trainer's model: TRL applies LoRA when it builds its trainer.
    trainable, total = trainer.model.get_nb_trainable_parameters()
    if resume:
        logger.info("resuming training from %s", resume)
    output = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    return TrainerRun(output, resume, int(trainable), int(total))


def finish(
    trainer: Any,
    tokenizer: Any,
    *,
    options: dict[str, list[str]],
    output_dir: Path,
    config: TrainParams,
    work_dir: Path,
    own_world: bool,
) -> None:
    """The adapter saved to ``output_dir``; the run's checkpoints removed (rank 0), and the
    process group it made for DeepSpeed ended."""
    save_adapter(
        trainer, tokenizer, options=options, output_dir=output_dir, generation=config.generation
    )
    if trainer.is_world_process_zero():
        remove_checkpoints(work_dir)
    end_own_world(own_world)


def trained(trainer: Any, run: TrainerRun, **figures: Any) -> TrainResult:
    """The run's result: the figures every method reports, from the Trainer, and the
    method's own ``figures`` (``n_examples``, ``n_sequences``...)."""
    history = trainer.state.log_history
    return TrainResult(
        steps=int(run.output.global_step),
        train_loss=mean_train_loss(history),
        trainable_parameters=run.trainable,
        total_parameters=run.total,
        runtime_s=float(run.output.metrics.get("train_runtime", 0.0)),
        loss_history=logged(history, "loss"),
        eval_history=logged(history, "eval_loss"),
        resumed_from_step=run.resumed_from_step,
        engine=engine_name(trainer),
        world_size=int(trainer.args.world_size),
        **figures,
    )


def save_adapter(
    trainer: Any,
    tokenizer: Any,
    *,
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
        save_beside_adapter(
            tokenizer, options=options, output_dir=output_dir, generation=generation
        )


def save_beside_adapter(
    tokenizer: Any,
    *,
    options: dict[str, list[str]],
    output_dir: Path,
    generation: GenerationSettings,
) -> None:
    """What evaluation and serving read beside a saved adapter: its tokenizer, its label
    options, its generation settings; its config's ``target_modules`` sorted."""
    tokenizer.save_pretrained(output_dir)
    # The prompts' label options belong to the adapter: evaluation and serving ask with them.
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


def read_label_options(adapter_dir: Path) -> dict[str, list[str]]:
    """The label options the adapter was trained with ({} for an adapter without them)."""
    path = adapter_dir / LABEL_OPTIONS_FILE
    if not path.is_file():
        return {}
    return {str(k): [str(v) for v in vs] for k, vs in json.loads(path.read_text("utf-8")).items()}
