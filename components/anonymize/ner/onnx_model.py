"""A token classifier run by ONNX Runtime alone: an exported model, its ``tokenizer.json``
and the labels of its ``config.json``; no PyTorch, no transformers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from components.anonymize.ner.classifier import MODEL_INPUTS, TokenClassifier
from components.anonymize.ner.labels import LabelScheme


class OnnxTokenClassifier(TokenClassifier):
    """A token classifier whose forward pass is an ONNX Runtime session."""

    def __init__(
        self,
        session: Any,
        tokenizer: Tokenizer,
        *,
        scheme: LabelScheme,
        max_tokens: int,
        batch_size: int,
        pad_id: int = 0,
        **windows: int,
    ) -> None:
        super().__init__(
            tokenizer,
            scheme,
            max_tokens=max_tokens,
            batch_size=batch_size,
            pad_id=pad_id,
            **windows,
        )
        self._session = session
        self._inputs = frozenset(i.name for i in session.get_inputs()) & set(MODEL_INPUTS)
        self._output = session.get_outputs()[0].name

    @property
    def input_names(self) -> frozenset[str]:
        return self._inputs

    def _logits(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.asarray(self._session.run([self._output], dict(inputs))[0])


def onnx_session(path: str, threads: int) -> Any:
    """An ONNX Runtime session on the CPU computing on ``threads`` threads, one operator at
    a time (detection processes run side by side; each takes only the threads it is
    given)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: its warnings name graph nodes, not ours
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
