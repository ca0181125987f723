"""A token classifier as an ONNX file: what ``veiltune train-ner`` writes and what the
shipped NER's first use builds (``shipped.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ONNX_OPSET = 17


def export_onnx(model: Any, path: Path) -> None:
    """``model`` as an ONNX file at ``path``, batch and length dynamic, its weights as they
    are (32-bit floats). Not quantized: ONNX Runtime's dynamic 8-bit quantization scales
    each batch's activations together, so a text's spans would depend on the texts read
    beside it, and a Dask worker's output would differ from one process's; 4-bit weights
    gained no speed on this architecture (docs/detection.md)."""
    import warnings

    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic = {name: {0: "batch", 1: "tokens"} for name in [*names, "logits"]}
    example = torch.ones(1, 8, dtype=torch.long)
    with warnings.catch_warnings():
        # the tracer's notes on shapes it treats as constant: the axes above stay dynamic
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (example, example, torch.zeros_like(example)),
            str(path),
            input_names=names,
            output_names=["logits"],
            dynamic_axes=dynamic,
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
