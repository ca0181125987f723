"""The gate stage: the Great Expectations residual-risk gate and what binds its verdict to the data.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.gate.binding import require_gate_passed, require_trained_on_gated_corpus
from components.gate.config import GateConfig
from components.gate.result import GateResult

__all__ = ["GateConfig", "GateResult", "require_gate_passed", "require_trained_on_gated_corpus"]
