"""Conversations anonymized with realistic surrogates, from spans given by hand: the real
surrogate maker and engine without the detector, so a test says exactly what was replaced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.anonymize.config import AnonymizeConfig
from components.anonymize.factory import build_surrogates
from components.anonymize.fields import text_fields
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.replace import anonymize_conversation
from components.anonymize.spans import Span
from components.anonymize.surrogates import SurrogateKey
from components.core.corpus import Conversation

SURROGATE_POLICY = AnonymizationPolicy(
    mode="surrogate",
    surrogates=build_surrogates(
        AnonymizeConfig(replacement="surrogate"), Path(), key=SurrogateKey("any-salt")
    ),
)


def surrogate_anonymized(
    conversation: Conversation, replaced: dict[int, list[tuple[str, str]]]
) -> tuple[Conversation, list[dict[str, Any]]]:
    """The conversation with each (surface, type) of ``replaced[turn]`` in that turn's text
    replaced by a surrogate (every occurrence), and its spans records."""
    fields = text_fields(conversation)
    spans = [
        _spans(text, replaced.get(where.turn, [])) if where.kind == "text" else []
        for where, text in fields
    ]
    anonymized, replacements = anonymize_conversation(
        conversation, fields, spans=spans, policy=SURROGATE_POLICY
    )
    return anonymized, [r.to_record() for r in replacements]


def _spans(text: str, surfaces: list[tuple[str, str]]) -> list[Span]:
    found = []
    for surface, entity_type in surfaces:
        start = text.find(surface)
        while start >= 0:
            found.append(Span(start, start + len(surface), entity_type, 0.9, "test"))
            start = text.find(surface, start + 1)
    return sorted(found, key=lambda s: s.start)
