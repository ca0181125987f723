"""The PI inventory: keyed hashes (HMAC-SHA256, the salt as key) of every known
personal-information value, never the values.

Audits hash what a model generates the same way and look the hashes up, so they can tell
a leak without anyone storing the raw value outside the raw data folder.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from components.core.corpus import Conversation
from components.core.jsonio import iter_jsonl
from components.core.lexicon import zipf
from components.core.placeholders import entity_tokens


@dataclass(frozen=True)
class InventoryEntry:
    conversation_id: str
    entity_type: str
    digest: str
    n_tokens: int
    n_chars: int
    # False for a lone common word ("shelby", "smith"): a model can write it by chance, so
    # finding it in an output proves nothing. Computed from the value at ingest; no PI.
    specific: bool = True

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def normalized(value: str) -> str:
    """The form values are compared in: lowercase word tokens joined by single spaces."""
    return " ".join(entity_tokens(value))


def salted_digest(value_normalized: str, salt: str) -> str:
    """HMAC-SHA256 of a normalized value keyed with the corpus's salt (``data/raw/salt``).

    Without the key nobody can test a guess against a digest. With it, anyone can: a phone
    number has about 10^10 values, so the key protects the values exactly as well as the
    raw data it sits beside is protected, and must never leave ``data/raw``.
    """
    # hmac.digest is the one-shot C path: the same HMAC, without an object per value (a
    # bundle scan hashes millions of windows).
    return hmac.digest(salt.encode(), value_normalized.encode(), hashlib.sha256).hex()


def inventory_entries(conversations: Iterable[Conversation], salt: str) -> Iterator[InventoryEntry]:
    """One entry per distinct (conversation, type, normalized value) in the ground truth."""
    for conversation in conversations:
        seen: set[tuple[str, str]] = set()
        for span in conversation.pi:
            turn = conversation.turns[span.turn]
            source = turn.text if span.field == "text" else turn.speaker or ""
            value = normalized(source[span.start : span.end])
            if not value or (span.entity_type, value) in seen:
                continue
            seen.add((span.entity_type, value))
            yield InventoryEntry(
                conversation_id=conversation.id,
                entity_type=span.entity_type,
                digest=salted_digest(value, salt),
                n_tokens=len(value.split()),
                n_chars=len(value.replace(" ", "")),
                specific=is_specific(value),
            )


COMMON_WORD_ZIPF = 3.0  # wordfreq Zipf frequency from which a single word is "common"


def is_specific(value_normalized: str) -> bool:
    """Whether a value identifies someone on its own: several words, digits, or a rare word."""
    if " " in value_normalized or any(c.isdigit() for c in value_normalized):
        return True
    return zipf(value_normalized) < COMMON_WORD_ZIPF


def read_inventory(path: Path) -> list[InventoryEntry]:
    return [InventoryEntry(**obj) for _, obj in iter_jsonl(path)]


def find_leaks(
    text: str, entries: Iterable[InventoryEntry], *, salt: str, min_chars: int
) -> list[InventoryEntry]:
    """Specific inventory entries (of at least ``min_chars`` characters) found in ``text``."""
    by_digest = {e.digest: e for e in entries if e.specific and e.n_chars >= min_chars}
    if not by_digest:
        return []
    # A window equal to a value has its word and character counts: hash only such windows.
    shapes = {(e.n_tokens, e.n_chars) for e in by_digest.values()}
    tokens = normalized(text).split()
    found: dict[str, InventoryEntry] = {}
    for n in sorted({n_tokens for n_tokens, _ in shapes}):
        for i in range(len(tokens) - n + 1):
            window = tokens[i : i + n]
            if (n, sum(map(len, window))) not in shapes:
                continue
            digest = salted_digest(" ".join(window), salt)
            if digest in by_digest:
                found[digest] = by_digest[digest]
    return list(found.values())
