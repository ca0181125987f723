"""What register refuses before it signs anything: an adapter other than the one evaluated
and audited, and a corpus other than the one train read.

The hostile review of 2026-11-27 set ``train.corpus: raw``, ran ``veiltune train``, restored
params.yaml and ran ``veiltune register``: the new version became champion, tagged as trained
on the anonymized corpus and as having passed audits that were of the previous adapter. Now
train records what it read and wrote (``lineage.TRAIN_CORPUS_KEY``, ``TRAINED_CORPUS_KEY``,
``ADAPTER_KEY``), evaluate and audit the adapter they scored, and register takes the corpus
from train's record, never from params, and signs the one adapter they all name into the
version's evidence (:mod:`components.register.evidence` checks it again at promotion).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.core.errors import GateFailed, InputError
from components.core.lineage import (
    ADAPTER_KEY,
    CORPUS_KEY,
    TRAIN_CORPUS_KEY,
    TRAINED_CORPUS_KEY,
    adapter_sha256,
)
from components.register.registry import PRODUCT_CORPUS

logger = logging.getLogger(__name__)


def bound_adapter(adapter_dir: Path, records: Mapping[Path, Mapping[str, Any]]) -> str:
    """The sha256 of ``adapter_dir``, once every stage record (metrics file → its contents:
    train's, evaluate's, audit's) names that same adapter.

    Raises:
        InputError: a record names no adapter or another one, naming the stage to re-run.
    """
    digest = adapter_sha256(adapter_dir)
    for source, record in records.items():
        named = record.get(ADAPTER_KEY)
        if named != digest:
            what = f"is of adapter {short(named)}" if named else "names no adapter"
            raise InputError(
                f"{source}: {what}, but {adapter_dir} is {short(digest)}: its figures are not "
                f"this adapter's; re-run the {source.stem} stage (dvc repro)"
            )
    return digest


def trained_corpus(
    train: Mapping[str, Any], gate: Mapping[str, Any], *, train_file: Path, configured: str
) -> str:
    """What the adapter learnt from, by train's own record (``train.corpus`` of its run);
    ``configured`` (params.yaml's, now) only for a warning when it differs.

    Raises:
        InputError: train recorded no corpus (a train.json from before this check).
        GateFailed: it learnt from the product corpus, but not the file the gate passed.
    """
    corpus = train.get(TRAIN_CORPUS_KEY)
    if not corpus:
        raise InputError(
            f"{train_file}: names no corpus it read (made before train recorded it); re-run "
            "the train stage (dvc repro)"
        )
    if corpus != configured:
        logger.warning(
            "params.yaml says train.corpus: %s, but the adapter learnt from the %s corpus "
            "(%s): it is registered as what it is",
            configured,
            corpus,
            train_file,
        )
    if corpus == PRODUCT_CORPUS and train.get(TRAINED_CORPUS_KEY) != gate.get(CORPUS_KEY):
        raise GateFailed(
            f"{train_file}: the adapter learnt from {short(train.get(TRAINED_CORPUS_KEY))}, "
            f"not the corpus the gate passed ({short(gate.get(CORPUS_KEY))}): re-run train"
        )
    return str(corpus)


def short(digest: object) -> str:
    return f"sha256 {str(digest)[:12]}…" if digest else "no hash"
