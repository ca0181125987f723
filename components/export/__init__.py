"""The export stage: the verifiable compliance bundle.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.export.config import ExportConfig

__all__ = ["ExportConfig"]
