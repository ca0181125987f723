"""Every recognizer veiltune adds to Presidio's, in one registry: the detector builds them
from here, in this order. A recognizer is a Presidio ``EntityRecognizer`` in a module of its
own (``base.ScannerRecognizer`` for a pure scanner); adding one is that module and one line
below (docs/extending/recognizers.md). Configuration picks from the result:
``anonymize.disabled_recognizers`` leaves any of them, or any of Presidio's own, out by name,
and ``anonymize.recognizers_file`` adds pattern and word-list recognizers written in
Presidio's YAML format (``from_file``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Recognizers:
    """One registry line: ``build`` makes its recognizers from the English dictionary (the
    spaCy model's lemmas; empty when the model has none)."""

    name: str
    build: Callable[[Dictionary], list[Any]]


def registry(*lines: Recognizers) -> tuple[Recognizers, ...]:
    """The registry's lines; two of one name is a mistake in the code, caught at import."""
    names = [line.name for line in lines]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"two registry lines named {twice}")
    return lines


def _north_american(_: Dictionary) -> list[Any]:
    """Presidio's US and Canada recognizers that its default English registry leaves out."""
    from presidio_analyzer.predefined_recognizers import (
        AbaRoutingRecognizer,
        CaPostalCodeRecognizer,
        CaSinRecognizer,
    )

    return [AbaRoutingRecognizer(), CaSinRecognizer(), CaPostalCodeRecognizer()]


RECOGNIZERS = registry(
    Recognizers("spoken_characters", lambda _: [SpokenCharactersRecognizer()]),
    Recognizers("age", lambda _: [AgeRecognizer()]),
    Recognizers("address_block", lambda _: [AddressBlockRecognizer()]),
    Recognizers("name_gazetteer", lambda d: [NameGazetteerRecognizer(dictionary=d)]),
    Recognizers("username_hotword", lambda _: [UsernameHotwordRecognizer()]),
    Recognizers("organization_cues", lambda _: [OrganizationCueRecognizer()]),
    Recognizers("place_gazetteer", lambda _: [PlaceGazetteerRecognizer()]),
    Recognizers("unfamiliar_words", lambda d: [UnfamiliarWordRecognizer(d)] if d else []),
    Recognizers("transcript_patterns", lambda _: transcript_pattern_recognizers()),
    Recognizers("north_american", _north_american),
)
# The detector cannot work without these: the name gazetteer completes every name found
# over its surname (``PresidioDetector.finish``).
REQUIRED = frozenset({"NameGazetteerRecognizer"})


def build_recognizers(dictionary: Dictionary) -> list[Any]:
    """Every registered recognizer, in registry order."""
    return [recognizer for line in RECOGNIZERS for recognizer in line.build(dictionary)]
