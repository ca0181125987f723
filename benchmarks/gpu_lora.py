"""LoRA training throughput and model-FLOPs utilization on a 1B-class Llama, ZeRO-2, bf16.

Speed does not depend on the weights, so the model is randomly initialised from a Llama 3.2
1B-shaped config: nothing is downloaded. It runs on any CUDA machine::

    python -m benchmarks.gpu_lora                # one GPU
    deepspeed --num_gpus 8 benchmarks/gpu_lora.py  # several

and prints tokens/s per GPU and MFU against the GPU's dense bf16 peak (``--peak-tflops``,
989 for an H100 SXM by default); rank 0 writes benchmarks/results/gpu_lora.json.
``--smoke`` runs a tiny config on CPU (gloo) to check the code path; its numbers mean
nothing, so it writes no results file.

Model FLOPs per token for LoRA: the frozen weights need the forward (2N) and the gradient
with respect to activations (2N), not their own weight gradient, so 4N, plus the adapters'
6 N_lora and attention's 12 · layers · hidden · sequence (forward and backward). Full
fine-tuning would be 6N; both figures are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ZERO2 = Path(__file__).resolve().parents[1] / "infra" / "deepspeed" / "zero2.json"
LLAMA_1B = {
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
}
TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
    "tie_word_embeddings": True,
}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def model_flops_per_token(
    n_frozen: int, n_lora: int, *, layers: int, hidden: int, seq: int
) -> dict[str, float]:
    attention = 12 * layers * hidden * seq
    return {
        "lora": 4 * n_frozen + 6 * n_lora + attention,
        "full": 6 * (n_frozen + n_lora) + attention,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer

    from components.core import native_ops
    from components.train.engine import ensure_distributed_environment

    ensure_distributed_environment()
    native_ops.prepare()
    cuda = torch.cuda.is_available()
    shape = TINY if args.smoke else LLAMA_1B
    config = LlamaConfig(**shape, use_cache=False)
    torch.manual_seed(0)
    # transformers types PreTrainedModel.to by @wraps(nn.Module.to), which hides the bound self.
    model = LlamaForCausalLM(config).to(torch.bfloat16 if cuda else torch.float32)  # type: ignore[arg-type]
    n_frozen = sum(p.numel() for p in model.parameters())
    lora = LoraConfig(
        r=args.lora_r, lora_alpha=2 * args.lora_r, target_modules=TARGETS, task_type="CAUSAL_LM"
    )
    model = get_peft_model(model, lora)
    n_lora = sum(p.numel() for p in model.parameters() if p.requires_grad)
    seq = args.seq_len
    world = int(os.environ.get("WORLD_SIZE", "1"))
    n_rows = args.micro_batch * (args.steps + args.warmup) * world
    tokens = torch.randint(0, config.vocab_size, (n_rows, seq)).tolist()
    rows = [{"input_ids": ids, "labels": ids} for ids in tokens]
    times: list[float] = []
    trainer = Trainer(
        model=model,
        args=_arguments(args, cuda),
        train_dataset=rows,
        callbacks=[step_clock(times)],
        data_collator=_collate,
    )
    trainer.train()
    measured = times[args.warmup :]
    tokens_per_s = args.micro_batch * seq / (sum(measured) / len(measured))  # per GPU
    flops = model_flops_per_token(
        n_frozen, n_lora, layers=config.num_hidden_layers, hidden=config.hidden_size, seq=seq
    )
    peak = args.peak_tflops * 1e12
    return {
        "device": torch.cuda.get_device_name() if cuda else "cpu (smoke)",
        "world_size": world,
        "frozen_parameters": n_frozen,
        "lora_parameters": n_lora,
        "seq_len": seq,
        "micro_batch": args.micro_batch,
        "steps_timed": len(measured),
        "tokens_per_s_per_gpu": round(tokens_per_s, 1),
        "mfu_lora": float(f"{tokens_per_s * flops['lora'] / peak:.4g}"),
        "mfu_full_finetune_convention": float(f"{tokens_per_s * flops['full'] / peak:.4g}"),
        "engine": type(trainer.model_wrapped).__name__,
    }


def _arguments(args: argparse.Namespace, cuda: bool) -> Any:
    """ZeRO-2 in bf16 on a GPU (gloo on a CPU), no saving or logging inside the timed steps."""
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=str(Path(args.work_dir)),
        max_steps=args.steps + args.warmup,
        per_device_train_batch_size=args.micro_batch,
        learning_rate=1e-4,
        bf16=cuda,
        deepspeed=str(ZERO2),
        ddp_backend=None if cuda else "gloo",
        report_to="none",
        save_strategy="no",
        logging_steps=10**6,
        disable_tqdm=True,
        remove_unused_columns=False,
        gradient_checkpointing=args.gradient_checkpointing,
        dataloader_num_workers=2 if cuda else 0,
    )


def step_clock(times: list[float]) -> Any:
    """A Trainer callback appending each optimizer step's wall time to ``times``, the GPU
    synchronized at both ends (its work is asynchronous)."""
    import torch
    from transformers import TrainerCallback

    cuda = torch.cuda.is_available()

    class StepClock(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            self.start = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - self.start)

    return StepClock()


def _collate(rows: list[dict[str, list[int]]]) -> dict[str, Any]:
    import torch

    ids = torch.tensor([row["input_ids"] for row in rows])
    return {"input_ids": ids, "labels": ids.clone()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--smoke", action="store_true", help="tiny model on CPU: check the code path"
    )
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--lora-r", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--peak-tflops", type=float, default=989.0, help="dense bf16 peak of one GPU"
    )
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--work-dir", default="/tmp/veiltune-gpu-bench")
    parser.add_argument("--local_rank", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.seq_len, args.micro_batch, args.steps, args.warmup = 64, 2, 2, 1
    result = run(args)
    print(json.dumps(result, indent=2), flush=True)
    if not args.smoke and int(os.environ.get("RANK", "0")) == 0:
        from benchmarks.results import write_result

        settings = {"gradient_checkpointing": args.gradient_checkpointing, "lora_r": args.lora_r}
        write_result("gpu_lora", result | settings | {"peak_tflops": args.peak_tflops})
    import torch

    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # a clean exit, not an abort in gloo
    return 0


if __name__ == "__main__":
    sys.exit(main())
