"""Stand-in values for an attacker's reference: what a membership attack compares a real
value's likelihood with (``audits/membership.py``)."""

from __future__ import annotations

import functools
import hmac
import random
from collections.abc import Sequence

from components.anonymize.surrogates import RealisticSource
from components.anonymize.surrogates.book import SurrogateBook
from components.anonymize.surrogates.realistic import RealisticValues
from components.anonymize.surrogates.shapes import random_like


class StandIns:
    """Values of the same kinds and shapes as a text's PI, drawn by the realistic surrogate
    generator from a seed of the audit's own (an HMAC of the text's key under the corpus
    salt, never the seed the anonymize stage drew that conversation's surrogates from)."""

    def __init__(self, salt: str, locale: str) -> None:
        self.salt = salt
        self.locale = locale

    @functools.cached_property
    def values(self) -> RealisticValues:
        return RealisticValues(self.locale)

    def replace(
        self, key: str, text: str, *, spans: Sequence[tuple[int, int, str, str]]
    ) -> tuple[str, list[tuple[int, int]]]:
        """``text`` with each span (start, end, info type, entity; sorted, not overlapping)
        replaced by a stand-in, the same one for every mention of an entity and never the
        original, and where the stand-ins sit."""
        seed = hmac.digest(self.salt.encode(), f"veiltune/audit/stand-ins/{key}".encode(), "sha256")
        rng = random.Random(seed)
        originals = frozenset(w for s, e, *_ in spans for w in text[s:e].lower().split())
        book = SurrogateBook(
            self.values, RealisticSource(self.values), rng, lambda _: False, originals
        )
        pieces: list[str] = []
        placed: list[tuple[int, int]] = []
        cursor = length = 0
        for start, end, info_type, entity in spans:
            surface = text[start:end]
            value = book.render(
                info_type, surface, entity=entity, context=(text[:start], text[end:])
            )
            if not value or value == surface:
                value = random_like(surface, rng)
            pieces += [text[cursor:start], value]
            length += start - cursor
            placed.append((length, length + len(value)))
            length += len(value)
            cursor = end
        pieces.append(text[cursor:])
        return "".join(pieces), placed
