"""Keyed pseudonyms for the record ids of a user's corpus.

A user's ids are often personal information themselves (a customer's e-mail address or
phone number as a CRM key), and an id travels with every output: splits, spans, risk
tables, the review sample, MLflow artifacts, the compliance bundle. So ingest replaces each
id of a user corpus (``ingest.corpus_path``) by ``c-`` and 16 hex digits of its
HMAC-SHA256 keyed with the run's salt, before anything is written; nothing downstream of
ingest sees an original id. The same corpus and salt give the same pseudonyms. The mapping
back lies only in ``data/raw/id_pseudonyms.jsonl`` (owner-only, erased by ``veiltune
purge-raw`` with the rest of ``data/raw``), for the owner to find a conversation the review
or the evaluation names.

The embedded corpus's ids (``conv-00001``, ``sens-00001``) and DialogSum's
(``dialogsum-<fname>``) are veiltune's own, not personal information: they stay.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from components.core.corpus import Conversation
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl
from components.ingest.canaries import Canary
from components.ingest.pi_inventory import InventoryEntry, is_specific, normalized, salted_digest

PREFIX = "c-"
# 64 bits: two ids of a million-record corpus share a pseudonym with a chance of about
# 3e-8 (refused, not merged, when they do); 16 hex digits are also what the bundle's detector
# scan reads as a machine token (a hash), never as a number to flag.
HEX_DIGITS = 16
# Keeps a pseudonym apart from every other HMAC keyed with the same salt (the inventory's
# digests of PI values): an id equal to a PI value does not give that value's digest away.
_DOMAIN = b"veiltune conversation id\x00"
ID_ENTITY_TYPE = "CONVERSATION_ID"  # an original id, as the bundle's PI scan names it
# An all-digit id shorter than this is a record number (1042): a count or a float's decimals
# in a metrics file write it by chance, so finding it proves nothing (a phone or account
# number used as an id is longer).
RECORD_NUMBER_DIGITS = 6


def pseudonym(conversation_id: str, salt: str) -> str:
    """``c-`` and the first 16 hex digits of HMAC-SHA256(salt, id)."""
    digest = hmac.digest(salt.encode(), _DOMAIN + conversation_id.encode(), hashlib.sha256)
    return PREFIX + digest.hex()[:HEX_DIGITS]


@dataclass(frozen=True)
class IdPseudonyms:
    """Original id → pseudonym for a user corpus's records; ids it does not hold (veiltune's
    own) are kept."""

    mapping: Mapping[str, str]

    @classmethod
    def of(cls, ids: Sequence[str], salt: str, *, corpus_name: str) -> IdPseudonyms:
        """The pseudonyms of ``ids`` (a corpus's, unique, in order).

        Raises:
            InputError: two ids share a pseudonym (naming their records by position, not by
                id, and saying that a new ingest, a new salt, parts them).
        """
        mapping: dict[str, str] = {}
        owner: dict[str, int] = {}
        for position, conversation_id in enumerate(ids, start=1):
            alias = pseudonym(conversation_id, salt)
            if alias in owner:
                raise InputError(
                    f"{corpus_name}: records {owner[alias]} and {position} got the same id "
                    "pseudonym (a 64-bit collision); run ingest again: a new salt parts them"
                )
            owner[alias] = position
            mapping[conversation_id] = alias
        return cls(mapping)

    def renamed(self, conversation_id: str) -> str:
        return self.mapping.get(conversation_id, conversation_id)

    def conversations(self, conversations: Iterable[Conversation]) -> list[Conversation]:
        return [replace(c, id=self.renamed(c.id)) for c in conversations]

    def splits(self, splits: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        return {name: [self.renamed(i) for i in ids] for name, ids in splits.items()}

    def canaries(self, canaries: Iterable[Canary]) -> list[Canary]:
        return [
            replace(c, conversation_ids=tuple(map(self.renamed, c.conversation_ids)))
            for c in canaries
        ]

    def records(self) -> Iterable[dict[str, Any]]:
        """``{"id", "pseudonym"}`` per record, in corpus order: the mapping file's lines."""
        return ({"id": original, "pseudonym": alias} for original, alias in self.mapping.items())


def read_id_pseudonyms(path: Path) -> dict[str, str]:
    """Original id → pseudonym from the mapping file ingest wrote; empty when there is none
    (the embedded corpus, or a ``data/raw`` from before pseudonyms)."""
    if not path.is_file():
        return {}
    return {str(obj["id"]): str(obj["pseudonym"]) for _, obj in iter_jsonl(path)}


def id_inventory_entries(mapping: Mapping[str, str], salt: str) -> list[InventoryEntry]:
    """The original ids as PI inventory entries (``CONVERSATION_ID``, under their pseudonym,
    keyed hashes only) for the bundle's PI scan: an original id found in a bundle file is a
    leak as any labelled PI value is, whether or not a detector would flag it. A lone common
    word or a short record number is not specific (found in its own review record only)."""
    entries = []
    for original, alias in mapping.items():
        value = normalized(original)
        record_number = value.isdigit() and len(value) < RECORD_NUMBER_DIGITS
        if value:
            entries.append(
                InventoryEntry(
                    conversation_id=alias,
                    entity_type=ID_ENTITY_TYPE,
                    digest=salted_digest(value, salt),
                    n_tokens=len(value.split()),
                    n_chars=len(value.replace(" ", "")),
                    specific=is_specific(value) and not record_number,
                )
            )
    return entries
