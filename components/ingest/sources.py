"""The ingest stage: a validated corpus (a user's JSONL or the embedded generated one) and a
deterministic train / held-out split."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.core import paths
from components.core.corpus import Conversation, load_corpus
from components.core.errors import InputError
from components.ingest.config import IngestConfig
from components.ingest.datasets import public_datasets
from components.ingest.dialogsum import check_main_ids, dataset_of, load_dialogsum
from components.ingest.generate import generate_corpus, generate_sensitive_corpus
from components.ingest.sensitivity import load_taxonomy


def ingest_corpus(config: IngestConfig, base_dir: Path) -> list[Conversation]:
    """The main corpus, then DialogSum's dialogues when they are appended to it."""
    main, dialogsum = ingest_sources(config, base_dir)
    return [*main, *dialogsum]


def ingest_sources(
    config: IngestConfig, base_dir: Path
) -> tuple[list[Conversation], list[Conversation]]:
    """The main corpus (the user's, or the embedded one) and DialogSum's dialogues (none
    unless ``dialogsum.appended_to`` the corpus), validated: no main id uses DialogSum's
    prefix (reserved whether or not DialogSum is in)."""
    main = _main_corpus(config, base_dir)
    dialogsum = (
        load_dialogsum(config.dialogsum, base_dir)
        if config.dialogsum.appended_to(config.corpus_path)
        else []
    )
    check_main_ids(main, config.corpus_path or "the embedded corpus")
    return main, dialogsum


def _main_corpus(config: IngestConfig, base_dir: Path) -> list[Conversation]:
    """The user's corpus when ``corpus_path`` is set (relative to ``base_dir``; its
    ``sensitive`` paths checked against the taxonomy), else the embedded corpus generated
    from ``n_conversations`` and ``seed`` and the ``sensitive_conversations`` after it."""
    taxonomy = load_taxonomy(taxonomy_file(config.taxonomy, base_dir))
    if config.corpus_path:
        return load_corpus(_resolved(config.corpus_path, base_dir), taxonomy.paths)

    generated = generate_corpus(config.n_conversations, config.seed)
    sensitive = generate_sensitive_corpus(config.sensitive_conversations, config.seed)
    unknown = sorted({s.path for c in sensitive for s in c.sensitive} - taxonomy.paths)
    if unknown:
        raise InputError(
            f"{config.taxonomy}: the generated calls use paths it lacks: {', '.join(unknown)}"
            " (ingest.taxonomy)"
        )
    return generated + sensitive


def taxonomy_file(name: str, base_dir: Path) -> Path:
    """``ingest.taxonomy`` from ``base_dir``; the default name, absent there (a project folder
    holding a params file and a corpus, no copy of the policy), is the copy veiltune ships."""
    path = _resolved(name, base_dir)
    if not path.exists() and name == IngestConfig.taxonomy:
        return paths.PACKAGED_POLICY / Path(name).name
    return path


def _resolved(name: str, base_dir: Path) -> Path:
    path = Path(name)
    return path if path.is_absolute() else base_dir / path


def split_ids(ids: Sequence[str], heldout_fraction: float, *, seed: int) -> dict[str, list[str]]:
    """Assign each id to ``train`` or ``heldout`` by a seeded hash: stable as the corpus grows."""
    splits: dict[str, list[str]] = {"train": [], "heldout": []}
    for conv_id in ids:
        digest = hashlib.sha256(f"{seed}:{conv_id}".encode()).digest()
        fraction = int.from_bytes(digest[:8], "big") / 2**64
        splits["heldout" if fraction < heldout_fraction else "train"].append(conv_id)
    if not splits["train"] and splits["heldout"]:  # a tiny corpus still trains on something
        splits["train"].append(splits["heldout"].pop())
    return splits


def corpus_metrics(
    conversations: Sequence[Conversation], splits: dict[str, list[str]]
) -> dict[str, Any]:
    """The corpus's counts for ``metrics/ingest.json``, with the public datasets mixed into
    it and their licences (``public_datasets``, empty when none was)."""
    by_dataset = dict(sorted(Counter(dataset_of(c) for c in conversations).items()))
    return {
        "n_conversations": len(conversations),
        "n_turns": sum(len(c.turns) for c in conversations),
        "n_characters": sum(len(t.text) for c in conversations for t in c.turns),
        "n_pi_mentions": sum(len(c.pi) for c in conversations),
        "by_context": dict(sorted(Counter(c.context for c in conversations).items())),
        "by_dataset": by_dataset,
        "public_datasets": public_datasets(by_dataset),
        "n_train": len(splits["train"]),
        "n_heldout": len(splits["heldout"]),
    }
