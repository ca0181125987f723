"""Models built in the test run, once, and shared by every pytest-xdist worker.

The plumbing (training loop, packing, resume, DeepSpeed ranks, DPO/ORPO, the pyfunc, serving,
the audits' mechanics, the pipeline's stages) runs on a *tiny* model: SmolLM2's own
architecture (Llama) and tokenizer, randomly initialised with two layers of width 64. It
goes through exactly the code the real model does, in milliseconds. The real SmolLM2 is
converted from its bundled GGUF only for the claims that depend on a pretrained model (one
end-to-end `dvc repro` and one `dvc exp run`, the base_model stage's own conversion).

Each model is built by the first worker that asks, under a file lock in the run's shared
temporary root, and read by the others.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

# SmolLM2-135M's shape is 30 layers of width 576 (9 heads, 3 of them key/value heads).
TINY_SHAPE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
}
TINY_SEED = 0


def shared_folder(root: Path, name: str, build: Callable[[Path], None]) -> Path:
    """``root / name``, built by ``build`` once across the run's worker processes."""
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (folder / "config.json").is_file():
            staging = root / f"{name}.partial"
            build(staging)
            staging.rename(folder)
    return folder


def build_tiny_smollm2(folder: Path) -> None:
    """A random-init model of SmolLM2's architecture and tokenizer, ``TINY_SHAPE`` in size."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from components.base_model.materialize import bundled_gguf_path

    gguf = bundled_gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    real = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    shape = {k: v for k, v in real.to_dict().items() if k != "quantization_config"}
    config = type(real).from_dict({**shape, **TINY_SHAPE})
    torch.manual_seed(TINY_SEED)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_real_smollm2(folder: Path) -> None:
    """The bundled SmolLM2-135M-Instruct, de-quantized as the base_model stage does."""
    from components.base_model.materialize import BUNDLED_SMOLLM2, materialize_base_model

    folder.mkdir(parents=True)
    materialize_base_model(BUNDLED_SMOLLM2, folder)
