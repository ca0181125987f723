"""The risk stage: residual risk per conversation, by ground truth and by the automatic estimate.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.risk.config import RiskConfig
from components.risk.estimate import estimate_items, scored_items
from components.risk.report import risk_sources_statement
from components.risk.scoring import (
    CONTEXT_COLUMN,
    FULL,
    PARTIAL,
    PARTIAL_SUFFIX,
    RISK_COLUMNS,
    SCORE_COLUMN,
    SPEAKER_OWNABLE,
    ResidualItem,
    RiskPolicy,
    read_risk_table,
    summarize_scores,
)

__all__ = [
    "CONTEXT_COLUMN",
    "FULL",
    "PARTIAL",
    "PARTIAL_SUFFIX",
    "RISK_COLUMNS",
    "SCORE_COLUMN",
    "SPEAKER_OWNABLE",
    "ResidualItem",
    "RiskConfig",
    "RiskPolicy",
    "estimate_items",
    "read_risk_table",
    "risk_sources_statement",
    "scored_items",
    "summarize_scores",
]
