"""The ingest stage: the raw corpus (a user's, or the embedded one plus DialogSum), its
canaries, splits and PI inventory.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.ingest.audit_canaries import (
    AUDIT_CANARY_PROMPT,
    AuditCanary,
    draw_audit_canaries,
    inserted_canaries,
)
from components.ingest.canaries import CANARY_FORMATS, Canary
from components.ingest.config import IngestConfig
from components.ingest.datasets import DatasetSource, corpus_datasets, mixed_in_statement
from components.ingest.dialogsum import CONTEXT, DATASET, MAIN, split_by_dataset
from components.ingest.generate import generate_corpus, generate_sensitive_corpus
from components.ingest.generate.sensitive import SENSITIVE
from components.ingest.generate.vocabulary import CONTEXT_WEIGHTS, OUTCOMES, PURPOSES
from components.ingest.pi_inventory import (
    InventoryEntry,
    find_leaks,
    is_specific,
    normalized,
    read_inventory,
    salted_digest,
)
from components.ingest.pseudonyms import id_inventory_entries, read_id_pseudonyms
from components.ingest.sensitivity import (
    LEVEL_RANK,
    LEVELS,
    SETTINGS,
    SensitiveCategory,
    Taxonomy,
    load_taxonomy,
)

__all__ = [
    "AUDIT_CANARY_PROMPT",
    "CANARY_FORMATS",
    "CONTEXT",
    "CONTEXT_WEIGHTS",
    "DATASET",
    "LEVELS",
    "LEVEL_RANK",
    "MAIN",
    "OUTCOMES",
    "PURPOSES",
    "SENSITIVE",
    "SETTINGS",
    "AuditCanary",
    "Canary",
    "DatasetSource",
    "IngestConfig",
    "InventoryEntry",
    "SensitiveCategory",
    "Taxonomy",
    "corpus_datasets",
    "draw_audit_canaries",
    "find_leaks",
    "generate_corpus",
    "generate_sensitive_corpus",
    "id_inventory_entries",
    "inserted_canaries",
    "is_specific",
    "load_taxonomy",
    "mixed_in_statement",
    "normalized",
    "read_id_pseudonyms",
    "read_inventory",
    "salted_digest",
    "split_by_dataset",
]
