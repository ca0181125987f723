"""A token classifier run by PyTorch: any Hugging Face token-classification folder, loaded by
transformers with its fast tokenizer, on the CPU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from components.anonymize.ner.classifier import MODEL_INPUTS, TokenClassifier
from components.anonymize.ner.labels import LabelScheme


class TorchTokenClassifier(TokenClassifier):
    """A token classifier whose forward pass is a transformers model in eval mode.

    Args:
        model: an ``AutoModelForTokenClassification``.
        tokenizer: its fast tokenizer (a ``PreTrainedTokenizerFast``): its Rust tokenizer is
            copied, so the caller's keeps its own truncation and padding.
        windows: ``window_chars`` and ``window_overlap`` of ``TokenClassifier``.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        scheme: LabelScheme,
        max_tokens: int,
        batch_size: int,
        **windows: int,
    ) -> None:
        rust = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
        pad_id = tokenizer.pad_token_id or 0
        super().__init__(
            rust, scheme, max_tokens=max_tokens, batch_size=batch_size, pad_id=pad_id, **windows
        )
        self._model = model.eval()
        self._inputs = frozenset(tokenizer.model_input_names) & set(MODEL_INPUTS)

    @property
    def input_names(self) -> frozenset[str]:
        return self._inputs

    def _logits(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            output = self._model(**{k: torch.from_numpy(v) for k, v in inputs.items()})
        return np.asarray(output.logits.float().numpy())
