"""The shape every veiltune recognizer shares: a pure scanner over the text, no model."""

from __future__ import annotations

from presidio_analyzer import EntityRecognizer


class ScannerRecognizer(EntityRecognizer):
    """A Presidio recognizer named after its class, finding the entities in ``ENTITIES``."""

    ENTITIES: tuple[str, ...] = ()

    def __init__(self) -> None:
        super().__init__(supported_entities=list(self.ENTITIES), name=type(self).__name__)

    def load(self) -> None:  # nothing to load: the scanner is code and word lists
        return None
