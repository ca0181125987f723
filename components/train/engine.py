"""Where training runs: plain PyTorch or DeepSpeed, on one process or a launcher's world, and
the Trainer arguments every training method shares."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from components.core import native_ops
from components.core.errors import ParamsError
from components.train.params import TrainParams


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


def schedule_arguments(
    config: TrainParams,
    work_dir: Path,
    *,
    deepspeed: dict[str, Any] | None,
    evaluating: bool,
) -> dict[str, Any]:
    """The Trainer arguments every training method shares: schedule, checkpoints (and eval)
    every ``save_steps``, the engine, no reporting."""
    import torch

    if deepspeed is not None:
        native_ops.prepare()

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
        "bf16": bf16_supported(),
        **deepspeed_world_on_cpu(deepspeed),
    }


def deepspeed_world_on_cpu(deepspeed: dict[str, Any] | None) -> dict[str, Any]:
    """The launcher's world made known to the Trainer for DeepSpeed on CPU; the Trainer
    arguments that tell it to use it.

    Accelerate names no process-group backend for DeepSpeed without a GPU, and counts a
    state without a backend as one process: each rank of a two-process launch then took
    itself for rank 0 of 1, trained on every batch and wrote every output (seen with
    accelerate 1.15, transformers 5.23). So on CPU the state is made here, with gloo, before
    the arguments are; it replaces any earlier state of the process, as the Trainer's own
    set-up does.
    """
    import torch

    if deepspeed is None or torch.cuda.is_available():
        return {}
    from accelerate import PartialState
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    os.environ["ACCELERATE_USE_DEEPSPEED"] = "true"  # what the Trainer sets for its own
    try:
        PartialState(backend="gloo")
    finally:
        del os.environ["ACCELERATE_USE_DEEPSPEED"]
    return {"accelerator_config": {"use_configured_state": True}}


def ensure_distributed_environment() -> bool:
    """Single-process defaults for what the ``deepspeed`` launcher sets (rank, world size,
    master address and port), so one CPU or GPU runs the same code as a cluster. True when
    it set them (the world is this process's own to tear down)."""
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


def own_world(deepspeed: dict[str, Any] | None) -> bool:
    """Whether this run makes its own (single-process) world for DeepSpeed, and so must end
    it: see :func:`ensure_distributed_environment`."""
    return deepspeed is not None and ensure_distributed_environment()


def end_own_world(own: bool) -> None:
    """End the process group this run made: a clean exit, not an abort in gloo."""
    import torch

    if own and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def is_distributed(deepspeed: dict[str, Any] | None) -> bool:
    return deepspeed is not None or int(os.environ.get("WORLD_SIZE", "1")) > 1


def world_rank() -> int:
    """This process's rank under a launcher (``RANK``, which every launcher sets before
    the process starts); 0 in a plain run."""
    return int(os.environ.get("RANK", "0"))


def engine_name(trainer: Any) -> str:
    """``deepspeed-zero<stage>`` when the model trained wrapped in a DeepSpeed engine."""
    wrapped = getattr(trainer, "model_wrapped", None)
    stage = getattr(wrapped, "zero_optimization_stage", None)
    return f"deepspeed-zero{stage()}" if callable(stage) else "torch"


def bf16_supported() -> bool:
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
