"""What binds the gate's verdict to the data it judged.

The risk stage records the sha256 of the anonymized corpus it scored; the gate refuses a
risk table computed on another corpus and records, beside its verdict, the sha256 of the
corpus and of the risk table it read. Train refuses a corpus that is not the one the gate
passed (anonymize re-run by hand with weaker params after the gate, say), and register
refuses an adapter whose training did not check the corpus the gate passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.core.errors import GateFailed
from components.core.lineage import CORPUS_KEY, sha256_file

RISK_TABLE_KEY = "risk_table_sha256"


def gate_digests(
    risk_metrics: Mapping[str, Any], corpus: Path, *, risk_table: Path, risk_source: str
) -> dict[str, str]:
    """The hashes the gate's verdict records: the corpus (which must be the one the risk
    table was computed on) and the risk table.

    Raises:
        GateFailed: the risk stage scored another corpus than the one on disk now.
    """
    digest = sha256_file(corpus)
    scored = risk_metrics.get(CORPUS_KEY)
    if scored != digest:
        raise GateFailed(
            f"{corpus} is not the corpus the risk table was computed on ({risk_source} "
            f"records {_short(scored)}, the file is {_short(digest)}): re-run risk, then the gate"
        )
    return {CORPUS_KEY: digest, RISK_TABLE_KEY: sha256_file(risk_table)}


def require_gate_passed(
    gate_metrics: Mapping[str, Any] | None, gate_file: Path, *, corpus: Path
) -> str:
    """The corpus's sha256, once the gate's verdict says it passed *this* corpus.

    Raises:
        GateFailed: no verdict, a failed one, one without the corpus's hash (made before
            verdicts were bound to their data), or one for a different corpus.
    """
    if gate_metrics is None:
        raise GateFailed(f"{gate_file}: no gate result; run the gate stage first")
    if not gate_metrics.get("passed"):
        raise GateFailed(f"{gate_file}: the corpus failed the gate; refusing to train on it")
    judged = gate_metrics.get(CORPUS_KEY)
    if not judged:
        raise GateFailed(f"{gate_file}: names no corpus hash; re-run the gate (dvc repro gate)")
    digest = sha256_file(corpus)
    if digest != judged:
        raise GateFailed(
            f"{corpus} changed after the gate passed it (the gate judged {_short(judged)}, the "
            f"file is {_short(digest)}): re-run anonymize, risk and the gate (dvc repro)"
        )
    return digest


def require_trained_on_gated_corpus(
    train_metrics: Mapping[str, Any],
    gate_metrics: Mapping[str, Any],
    *,
    train_file: Path,
    corpus: Path,
) -> None:
    """Register's check: the adapter's training verified the corpus the gate judged, and
    that corpus is still the one on disk.

    Raises:
        GateFailed: the training checked no corpus or another one than the gate judged, or
            the corpus changed since.
    """
    trained = train_metrics.get(CORPUS_KEY)
    judged = gate_metrics.get(CORPUS_KEY)
    if not trained or trained != judged:
        raise GateFailed(
            f"{train_file}: the adapter was not trained on the corpus the gate judged (train "
            f"checked {_short(trained)}, the gate judged {_short(judged)}): re-run train"
        )
    digest = sha256_file(corpus)
    if digest != judged:
        raise GateFailed(
            f"{corpus} changed after the gate and training ({_short(digest)}, the gate judged "
            f"{_short(judged)}): re-run the pipeline (dvc repro)"
        )


def _short(digest: object) -> str:
    return f"sha256 {str(digest)[:12]}…" if digest else "no hash"
