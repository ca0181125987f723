"""The register stage: the MLflow model registry and the champion rule.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.register.config import RegisterConfig

__all__ = ["RegisterConfig"]
