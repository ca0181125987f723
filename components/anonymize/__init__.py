"""The anonymize stage: detect PI (Presidio and veiltune's recognizers) and replace it.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.anonymize.compose import UnionDetector
from components.anonymize.config import (
    DETECTORS,
    REPLACEMENTS,
    SURROGATE_METHODS,
    AnonymizeConfig,
    LmProbabilityConfig,
)
from components.anonymize.detection_models import DetectionModel, detection_models
from components.anonymize.engine import Detector, detect_batch
from components.anonymize.factory import anonymization_policy, build_detector, entity_detector
from components.anonymize.fields import IDENTIFIER_DIGITS, text_fields
from components.anonymize.lm_probability import (
    LmProbabilityDetector,
    WordProbability,
    WordProbabilityScorer,
    spans_below,
)
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.replace import anonymize_conversation, placeholder_view
from components.anonymize.surrogates.embedding import SentenceEncoder, minilm_dir
from components.anonymize.surrogates.stand_ins import StandIns
from components.anonymize.term_lists import TermLists

__all__ = [
    "DETECTORS",
    "IDENTIFIER_DIGITS",
    "REPLACEMENTS",
    "SURROGATE_METHODS",
    "AnonymizationPolicy",
    "AnonymizeConfig",
    "DetectionModel",
    "Detector",
    "LmProbabilityConfig",
    "LmProbabilityDetector",
    "SentenceEncoder",
    "StandIns",
    "TermLists",
    "UnionDetector",
    "WordProbability",
    "WordProbabilityScorer",
    "anonymization_policy",
    "anonymize_conversation",
    "build_detector",
    "detect_batch",
    "detection_models",
    "entity_detector",
    "minilm_dir",
    "placeholder_view",
    "spans_below",
    "text_fields",
]
