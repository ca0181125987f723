"""Numbered placeholders within one conversation: every mention of one entity gets one number.

Numbers restart for each conversation (a fresh ``PlaceholderBook``), so no token links the
same person across conversations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# The placeholder grammar, the one place it is written: ``[PERSON_NAME_2]`` (what
# ``PlaceholderBook`` writes; group 1 is the info type) and ``[PERSON_NAME]`` (the ``type``
# replacement, numberless). Every reader of anonymized text parses placeholders with these.
NUMBERED_PLACEHOLDER = re.compile(r"\[([A-Z][A-Z0-9_]*?)_(\d+)\]")
ANY_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*\]")
# Types whose mentions are often partial: a first name after the full name is the same person.
_PARTIAL_MENTION_TYPES = frozenset({"PERSON_NAME", "ORGANIZATION_NAME"})


def entity_tokens(surface: str) -> tuple[str, ...]:
    """Case- and punctuation-free tokens of a mention; a spelled run (``M-A-R-K``) joins up."""
    tokens = tuple(t.lower() for t in _TOKEN.findall(surface))
    if len(tokens) > 1 and all(len(t) == 1 and t.isalpha() for t in tokens):
        return ("".join(tokens),)
    return tokens


@dataclass
class _Entity:
    info_type: str
    number: int
    tokens: set[str]


@dataclass
class PlaceholderBook:
    """Assigns ``[TYPE_N]`` to mentions of one conversation, in the order they are met."""

    _entities: list[_Entity] = field(default_factory=list)

    def placeholder(self, info_type: str, surface: str) -> str:
        """The placeholder of the entity this mention refers to (numbering it if new)."""
        tokens = set(entity_tokens(surface))
        entity = self._find(info_type, tokens)
        if entity is None:
            number = 1 + sum(e.info_type == info_type for e in self._entities)
            entity = _Entity(info_type, number, tokens)
            self._entities.append(entity)
        elif info_type in _PARTIAL_MENTION_TYPES:
            entity.tokens |= tokens
        return f"[{info_type}_{entity.number}]"

    def _find(self, info_type: str, tokens: set[str]) -> _Entity | None:
        if not tokens:
            return None
        for entity in self._entities:
            if entity.info_type != info_type:
                continue
            if tokens == entity.tokens:
                return entity
            # "Bob" then "Bob Stone", or "Mark Kowalski" then "mark": one person
            if info_type in _PARTIAL_MENTION_TYPES and (
                tokens <= entity.tokens or entity.tokens <= tokens
            ):
                return entity
        return None
