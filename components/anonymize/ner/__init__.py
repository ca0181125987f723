"""Transformer token classifiers (NER) for detection: ONNX Runtime or PyTorch behind one
interface, batched and windowed over texts of any length, their labels mapped to info types
by a policy file (anonymize.ner)."""

from __future__ import annotations

from components.anonymize.ner.aggregation import ClassifiedSpan
from components.anonymize.ner.classifier import TokenClassifier
from components.anonymize.ner.evidence import NerEvidence
from components.anonymize.ner.labels import LabelScheme, info_types_of, read_label_policy
from components.anonymize.ner.models import RAMPART, load_token_classifier, rampart_model_file
from components.anonymize.ner.onnx_model import OnnxTokenClassifier
from components.anonymize.ner.torch_model import TorchTokenClassifier

__all__ = [
    "RAMPART",
    "ClassifiedSpan",
    "LabelScheme",
    "NerEvidence",
    "OnnxTokenClassifier",
    "TokenClassifier",
    "TorchTokenClassifier",
    "info_types_of",
    "load_token_classifier",
    "rampart_model_file",
    "read_label_policy",
]
