"""The base_model stage: the base LM as a Hugging Face model folder.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.base_model.config import BaseModelConfig
from components.base_model.materialize import convert_gguf

__all__ = ["BaseModelConfig", "convert_gguf"]
