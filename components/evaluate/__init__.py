"""The evaluate stage: utility on held-out raw text, and the report across variants.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.evaluate.config import EvaluateConfig

__all__ = ["EvaluateConfig"]
