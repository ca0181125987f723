"""Recognizers that call transcripts need beyond Presidio's defaults (ASR-written PI): one
module each, registered in ``registry``."""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from components.anonymize.recognizers.registry import build_recognizers
from components.core.lexicon import Dictionary


def transcript_recognizers(vocabulary: Set[str]) -> list[Any]:
    """Every registered recognizer, ready to add to a Presidio registry. ``vocabulary`` is
    the English dictionary that tells unfamiliar words; empty leaves that recognizer out."""
    return build_recognizers(Dictionary(vocabulary))
