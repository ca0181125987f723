"""Realistic surrogates in place of placeholders (``anonymize.replacement: surrogate``).

Three methods choose a surrogate (``anonymize.surrogate.method``):

- ``realistic``: drawn from the locale's lists (Faker) with the original's shape kept;
- ``lm``: the base model proposes what could stand in the span in its context; the most
  likely (``top1``) or one of the ``k`` most likely, kept only if the detector tags it with
  the same type, else ``realistic`` (counted);
- ``embedding``: ``k`` realistic candidates ranked by sentence-embedding similarity to the
  original in its context, one chosen at random among those within cosine radius
  ``radius`` of the best.

Numbers and identifiers always take the ``realistic`` shape-kept value, and a street address
is built part by part in its original's shape (``address``), its city the one the
conversation gives that place elsewhere. Every conversation
draws from its own generator, seeded by an HMAC of its id under the run's secret salt
(``data/raw/salt``): the same person gets unrelated surrogates in two conversations, the
run is reproducible where the raw data is, and the original→surrogate table is never
written anywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Callable
from dataclasses import dataclass

from components.anonymize.surrogates.book import Context, Drawn, SurrogateBook, SurrogateSource
from components.anonymize.surrogates.realistic import RealisticValues
from components.ingest import salted_digest

METHODS = ("realistic", "lm", "embedding")


@dataclass(frozen=True)
class SurrogateKey:
    """The run's secret (the corpus salt) and the PI inventory's salted digests: what
    seeds each conversation's draws and what no surrogate may be."""

    salt: str
    digests: frozenset[str] = frozenset()

    def rng(self, conversation_id: str) -> random.Random:
        seed = hmac.digest(
            self.salt.encode(), f"veiltune/surrogates/{conversation_id}".encode(), hashlib.sha256
        )
        return random.Random(seed)

    def forbidden(self, value_normalized: str) -> bool:
        return bool(self.digests) and salted_digest(value_normalized, self.salt) in self.digests


class RealisticSource:
    """``realistic``: the locale's lists, context unused."""

    def __init__(self, values: RealisticValues) -> None:
        self.values = values

    def first_name(
        self, rng: random.Random, gender: str | None, *, original: str, context: Context
    ) -> Drawn:
        return self.values.first_name(rng, gender), "realistic"

    def last_name(self, rng: random.Random, original: str, *, context: Context) -> Drawn:
        return self.values.last_name(rng), "realistic"

    def whole_value(
        self, info_type: str, surface: str, *, rng: random.Random, context: Context
    ) -> Drawn | None:
        value = self.values.whole_value(info_type, surface, rng=rng)
        return None if value is None else (value, "realistic")


class Surrogates:
    """Makes each conversation's :class:`SurrogateBook`."""

    def __init__(
        self, key: SurrogateKey, values: RealisticValues, *, source: SurrogateSource | None = None
    ) -> None:
        self.key = key
        self.values = values
        self.source = source or RealisticSource(values)

    def book(self, conversation_id: str, originals: frozenset[str]) -> SurrogateBook:
        forbidden: Callable[[str], bool] = self.key.forbidden
        return SurrogateBook(
            self.values, self.source, self.key.rng(conversation_id), forbidden, originals
        )


__all__ = [
    "METHODS",
    "Context",
    "Drawn",
    "RealisticSource",
    "SurrogateBook",
    "SurrogateKey",
    "SurrogateSource",
    "Surrogates",
]
