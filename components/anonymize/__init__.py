"""The anonymize stage: detect PI (Presidio and veiltune's recognizers) and replace it.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.anonymize.config import REPLACEMENTS, SURROGATE_METHODS, AnonymizeConfig
from components.anonymize.engine import (
    IDENTIFIER_DIGITS,
    AnonymizationPolicy,
    Detector,
    anonymize_conversation,
    detect_batch,
    placeholder_view,
    text_fields,
)
from components.anonymize.factory import anonymization_policy, build_detector
from components.anonymize.term_lists import TermLists

__all__ = [
    "IDENTIFIER_DIGITS",
    "REPLACEMENTS",
    "SURROGATE_METHODS",
    "AnonymizationPolicy",
    "AnonymizeConfig",
    "Detector",
    "TermLists",
    "anonymization_policy",
    "anonymize_conversation",
    "build_detector",
    "detect_batch",
    "placeholder_view",
    "text_fields",
]
