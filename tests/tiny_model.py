"""Models built in the test run, once, and shared by every pytest-xdist worker.

The plumbing (training loop, packing, resume, DeepSpeed ranks, DPO/ORPO, the pyfunc, serving,
the audits' mechanics, the pipeline's stages) runs on a *tiny* model: SmolLM2's own
architecture (Llama) and tokenizer, randomly initialised with two layers of width 64. It
goes through exactly the code the real model does, in milliseconds. The real SmolLM2 is
converted from its bundled GGUF only for the claims that depend on a pretrained model (the
base_model stage's own conversion, what a context does to a word's probability, fluent text's
perplexity). The end-to-end `dvc repro` runs on the tiny model too: its claims are the
pipeline's, and `make run` runs it on the real one.

Each model is built by the first worker that asks, under a file lock in the run's shared
temporary root, and read by the others.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

# SmolLM2-135M's shape is 30 layers of width 576 (9 heads, 3 of them key/value heads).
TINY_SHAPE: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
}
TINY_SEED = 0


def shared_folder(root: Path, name: str, *, build: Callable[[Path], None]) -> Path:
    """``root / name``, built by ``build`` once across the run's worker processes."""
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not folder.is_dir():  # it appears whole, renamed from its staging folder
            staging = root / f"{name}.partial"
            shutil.rmtree(staging, ignore_errors=True)  # a failed build's leftovers
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


def tiny_memorizer(texts: Sequence[str], chat_template: str, *, seed: int = 0) -> tuple[Any, Any]:
    """A tiny Llama with a byte-level BPE tokenizer (600 tokens) trained on ``texts``, and
    that tokenizer with ``chat_template``: it memorizes a dozen calls in seconds, where
    SmolLM2's 49,152-token head would spend nearly all the time (the audits' controls)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=specials[1], eos_token=specials[2], pad_token=specials[2]
    )
    tokenizer.chat_template = chat_template
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        **TINY_SHAPE,
    )
    import torch

    torch.manual_seed(seed)
    return LlamaForCausalLM(config), tokenizer


def memorize(model: Any, rows: Sequence[dict[str, list[int]]], *, pad_id: int, steps: int) -> Any:
    """Train every weight of ``model`` on ``rows`` (input ids with their labels) until it has
    learnt them by heart: batches of four, AdamW at 3e-3; the model, in eval mode."""
    import random

    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    draw = random.Random(0)
    model.train()
    for _ in range(steps):
        batch = draw.sample(list(rows), min(4, len(rows)))
        length = max(len(row["input_ids"]) for row in batch)
        pad = [length - len(row["input_ids"]) for row in batch]
        ids = torch.tensor([r["input_ids"] + [pad_id] * n for r, n in zip(batch, pad, strict=True)])
        labels = torch.tensor([r["labels"] + [-100] * n for r, n in zip(batch, pad, strict=True)])
        mask = torch.tensor(
            [[1] * len(r["input_ids"]) + [0] * n for r, n in zip(batch, pad, strict=True)]
        )
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.eval()
