"""The train stage itself on a GPU: tokens/s, model-FLOPs utilization (MFU) and peak memory
of ``train_lora`` (LoRA SFT on generated calls, the stage's own function and collators) under
plain PyTorch and DeepSpeed ZeRO-2, and what moves MFU for a 135M-parameter model: micro-batch
and row length, packing, frozen weights in bf16, Liger's fused linear cross-entropy and
``torch.compile``.

Speed does not depend on the weights, so the model is SmolLM2-135M's shape (the bundled base
model's ``config.json`` and tokenizer, from ``--config DIR``) with random weights::

    python -m benchmarks.gpu_train --config models/base     # a CUDA machine
    python -m benchmarks.gpu_train --config models/base --smoke   # CPU: the code path only

Each setting runs in its own process (Liger patches transformers' classes for the process;
a crash stays in its row), timing optimizer steps after a warm-up with the device
synchronized. Tokens are the non-padding tokens of a mean step; MFU counts LoRA's model FLOPs
(``benchmarks.gpu_lora``: 4N + 6N_lora + attention over the mean row) against the GPU's dense
bf16 peak (``--peak-tflops``, 989 for an H100 SXM). ``--smoke`` writes no results file.

Three switches are the benchmark's, not params of the stage yet (``bf16_weights``, ``liger``,
``compile``): the stage trains frozen weights in float32 under bf16 autocast, with the
Trainer's loss and no compilation. A switch that pays off here is what would become one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ZERO2 = "infra/deepspeed/zero2.json"
STAGE_DEFAULT = {"batch_size": 2, "max_seq_length": 768}
BIG = {"batch_size": 16, "max_seq_length": 2048}
# In the order they run (a time budget may stop the list): a large step with and without
# ZeRO-2, one change at a time, then the stage's default size, padding, compilation.
SETTINGS: dict[str, dict[str, Any]] = {
    "b16_s2048": BIG,
    "b16_s2048_zero2": BIG | {"deepspeed": ZERO2},
    "b16_s2048_zero2_liger": BIG | {"deepspeed": ZERO2, "liger": True},
    "b16_s2048_zero2_bf16_weights": BIG | {"deepspeed": ZERO2, "bf16_weights": True},
    "b32_s2048_zero2_bf16_weights_liger": {"batch_size": 32, "max_seq_length": 2048}
    | {"deepspeed": ZERO2, "bf16_weights": True, "liger": True},
    "stage_default": STAGE_DEFAULT,
    "stage_default_zero2": STAGE_DEFAULT | {"deepspeed": ZERO2},
    "b16_s2048_zero2_padded": BIG | {"deepspeed": ZERO2, "packing": False},
    "b16_s2048_zero2_compile": BIG | {"deepspeed": ZERO2, "compile": True},
}
SWITCHES = ("bf16_weights", "liger", "compile")


def run_setting(
    name: str, config_dir: Path, *, corpus: Path, steps: int, warmup: int, smoke: bool
) -> dict[str, Any]:
    """One setting, in this process: ``train_lora`` on the corpus's calls, timed per step."""
    import torch

    import components.train.lora as lora
    from benchmarks.gpu_lora import step_clock
    from components.core.corpus import load_corpus
    from components.train.config import TrainConfig

    setting = dict(SETTINGS[name])
    switches = {key: setting.pop(key, False) for key in SWITCHES}
    cuda = torch.cuda.is_available()
    if smoke:
        setting |= {"batch_size": 2, "max_seq_length": 128}
    with tempfile.TemporaryDirectory() as tmp:
        base, shape = _random_model(config_dir, Path(tmp) / "base", smoke=smoke)
        _apply_switches(lora, switches)
        times: list[float] = []
        train = TrainConfig(
            max_steps=warmup + steps,
            save_steps=warmup + steps + 1,  # no checkpoint inside the timed steps
            eval_fraction=0.0,
            **setting,
        )
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        result = lora.train_lora(
            base, load_corpus(corpus), config=train,
            output_dir=Path(tmp) / "adapter", work_dir=Path(tmp) / "work",
            callbacks=[step_clock(times)],
        )  # fmt: skip
    row = {"setting": name, "batch_size": train.batch_size, "max_seq_length": train.max_seq_length}
    row |= {"packing": train.packing, "engine": result.engine, **switches}
    return row | _speed(
        result, sorted(times[warmup:]), shape=shape, batch_size=train.batch_size, cuda=cuda
    )


def _random_model(config_dir: Path, folder: Path, *, smoke: bool) -> tuple[Path, Any]:
    """``config_dir``'s model with random weights, and its tokenizer, saved in ``folder``
    (two narrow layers with ``smoke``); returns the folder and the model's config."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(config_dir)
    if smoke:
        config.num_hidden_layers, config.hidden_size, config.intermediate_size = 2, 64, 128
        config.num_attention_heads, config.num_key_value_heads, config.head_dim = 4, 2, 16
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(config_dir).save_pretrained(folder)
    return folder, config


def _speed(
    result: Any, timed: list[float], *, shape: Any, batch_size: int, cuda: bool
) -> dict[str, Any]:
    """Tokens/s over the median timed step, LoRA model TFLOP/s (attention over the mean
    row) and peak memory."""
    import torch

    from benchmarks.gpu_lora import model_flops_per_token

    step_s = timed[len(timed) // 2]
    tokens_per_s = result.tokens_per_step / step_s
    flops = model_flops_per_token(
        result.total_parameters - result.trainable_parameters,
        result.trainable_parameters,
        layers=shape.num_hidden_layers,
        hidden=shape.hidden_size,
        seq=round(result.tokens_per_step / batch_size),
    )
    memory = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
    return {
        "steps_timed": len(timed),
        "median_step_s": round(step_s, 4),
        "tokens_per_step": round(result.tokens_per_step, 1),
        "padding_share": result.padding_share,
        "tokens_per_s": round(tokens_per_s, 1),
        "lora_model_tflops_per_s": round(tokens_per_s * flops["lora"] / 1e12, 2),
        "peak_memory_gib": round(memory, 2) if memory is not None else None,
    }


def _apply_switches(lora: Any, switches: dict[str, bool]) -> None:
    """The benchmark's switches, patched into the stage's module for this process."""
    import torch

    if switches["bf16_weights"]:
        load = lora.base_model

        def bf16_base_model(base_model_dir: Path, config: Any) -> Any:
            return load(base_model_dir, config).to(torch.bfloat16)

        lora.base_model = bf16_base_model
    extra = {}
    if switches["liger"]:
        extra["use_liger_kernel"] = True
    if switches["compile"]:
        extra["torch_compile"] = True
    if extra:
        arguments = lora.schedule_arguments
        lora.schedule_arguments = lambda *a, **k: arguments(*a, **k) | extra


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--config", type=Path, required=True, help="model folder: config + tokenizer"
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        required=True,
        help="a corpus JSONL: data/raw/corpus.jsonl after `make run`",
    )
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--steps", type=int, default=15, help="timed steps per setting")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak")
    parser.add_argument(
        "--budget-s", type=float, default=float("inf"), help="start no setting after"
    )
    parser.add_argument("--output", type=Path, help="also write each row here (JSON lines)")
    parser.add_argument("--results-dir", type=Path, help="write gpu_train.json here instead")
    parser.add_argument("--smoke", action="store_true", help="tiny model on CPU: the code path")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one setting
    args = parser.parse_args(argv)
    if args.smoke:
        args.steps, args.warmup = 2, 1
    if args.one:
        row = run_setting(
            args.one,
            args.config,
            corpus=args.corpus,
            steps=args.steps,
            warmup=args.warmup,
            smoke=args.smoke,
        )
        print("ROW " + json.dumps(row), flush=True)
        return 0
    started = time.monotonic()
    rows = [
        _child(name, args)
        if time.monotonic() - started < args.budget_s
        else {"setting": name, "error": "not run: out of --budget-s"}
        for name in args.settings
    ]
    figures = _figures(rows, args.peak_tflops)
    print(json.dumps(figures, indent=2), flush=True)
    if not args.smoke:
        from benchmarks.results import write_result

        elsewhere = {"folder": args.results_dir} if args.results_dir else {}
        write_result("gpu_train", figures, **elsewhere)
    return 0 if all("error" not in row for row in rows) else 1


def _child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "benchmarks.gpu_train",
        "--one",
        name,
        "--config",
        str(args.config),
        "--corpus",
        str(args.corpus),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
    ] + (["--smoke"] if args.smoke else [])
    done = subprocess.run(
        command,
        cwd=REPO,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    found = [line[4:] for line in done.stdout.splitlines() if line.startswith("ROW ")]
    row = json.loads(found[-1]) if found else {"setting": name, "error": done.stderr[-600:]}
    print(json.dumps(row), flush=True)
    if args.output:
        with args.output.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
        with args.output.with_suffix(".log").open("a", encoding="utf-8") as log:
            log.write(f"==== {name}\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}\n")
    return row


def _figures(rows: list[dict[str, Any]], peak_tflops: float) -> dict[str, Any]:
    import torch

    for row in rows:
        if "lora_model_tflops_per_s" in row:
            row["mfu_lora"] = round(row["lora_model_tflops_per_s"] / peak_tflops, 4)
    return {
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (smoke)",
        "peak_tflops": peak_tflops,
        "model": "SmolLM2-135M shape, random weights",
        "settings": rows,
    }


if __name__ == "__main__":
    sys.exit(main())
