"""Recognizers that call transcripts need beyond Presidio's defaults (ASR-written PI)."""

from __future__ import annotations

from typing import Any

from components.anonymize.recognizers.address_block import AddressBlockRecognizer
from components.anonymize.recognizers.name_gazetteer import NameGazetteerRecognizer
from components.anonymize.recognizers.organization_cues import OrganizationCueRecognizer
from components.anonymize.recognizers.spoken_characters import SpokenCharactersRecognizer
from components.anonymize.recognizers.transcript_patterns import transcript_pattern_recognizers
from components.anonymize.recognizers.username_hotword import UsernameHotwordRecognizer


def transcript_recognizers() -> list[Any]:
    """Every transcript recognizer, ready to add to a Presidio registry."""
    return [
        SpokenCharactersRecognizer(),
        AddressBlockRecognizer(),
        NameGazetteerRecognizer(),
        UsernameHotwordRecognizer(),
        OrganizationCueRecognizer(),
        *transcript_pattern_recognizers(),
    ]
