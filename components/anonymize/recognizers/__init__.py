"""Recognizers that call transcripts need beyond Presidio's defaults (ASR-written PI)."""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from components.anonymize.recognizers.address_block import AddressBlockRecognizer
from components.anonymize.recognizers.age import AgeRecognizer
from components.anonymize.recognizers.name_gazetteer import NameGazetteerRecognizer
from components.anonymize.recognizers.organization_cues import OrganizationCueRecognizer
from components.anonymize.recognizers.place_gazetteer import PlaceGazetteerRecognizer
from components.anonymize.recognizers.spoken_characters import SpokenCharactersRecognizer
from components.anonymize.recognizers.transcript_patterns import transcript_pattern_recognizers
from components.anonymize.recognizers.unfamiliar_words import UnfamiliarWordRecognizer
from components.anonymize.recognizers.username_hotword import UsernameHotwordRecognizer
from components.core.lexicon import Dictionary


def transcript_recognizers(vocabulary: Set[str]) -> list[Any]:
    """Every transcript recognizer, ready to add to a Presidio registry. ``vocabulary`` is
    the English dictionary that tells unfamiliar words; empty leaves that recognizer out."""
    dictionary = Dictionary(vocabulary)
    unfamiliar = [UnfamiliarWordRecognizer(dictionary)] if dictionary else []
    return [
        SpokenCharactersRecognizer(),
        AgeRecognizer(),
        AddressBlockRecognizer(),
        NameGazetteerRecognizer(dictionary=dictionary),
        UsernameHotwordRecognizer(),
        OrganizationCueRecognizer(),
        PlaceGazetteerRecognizer(),
        *unfamiliar,
        *transcript_pattern_recognizers(),
    ]
