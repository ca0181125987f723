"""The evidence a registration stakes its promotion on, as the stages write it, and a
registry version that carries it without logging a model (fast: no pyfunc to load)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.core.lineage import (
    ADAPTER_KEY,
    CORPUS_KEY,
    TRAIN_CORPUS_KEY,
    TRAINED_CORPUS_KEY,
    adapter_sha256,
)
from components.register.evidence import EvidenceFiles, log_evidence
from components.register.registry import ADAPTER_ARTIFACT

PRODUCER = Ed25519PrivateKey.generate()  # the checkout's key in the tests that need no file
GATED = "c" * 64  # the sha256 of the corpus the gate passed
# A version's adapter as the registry holds it (a stand-in: promotion hashes its files).
ADAPTER = {"adapter_config.json": b'{"r": 2}', "adapter_model.safetensors": b"weights"}


def write_adapter(folder: Path, files: dict[str, bytes] = ADAPTER) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def digest_of(files: dict[str, bytes]) -> str:
    with tempfile.TemporaryDirectory() as work:
        return adapter_sha256(write_adapter(Path(work) / "adapter", files))


ADAPTER_SHA256 = digest_of(ADAPTER)


def metrics_files(
    utility: float = 0.3,
    gate: bool = True,
    *,
    failed_audits: tuple[str, ...] = (),
    corpus: str = "anonymized",
    adapter: str = ADAPTER_SHA256,
) -> EvidenceFiles:
    """gate.json, audit.json, train.json and evaluate.json as the stages write them, each
    naming ``adapter``; train read ``corpus``, the gated one for the product corpus."""
    audits: dict[str, Any] = {
        name: {"passed": name not in failed_audits, "figures": {}, "thresholds": {"max": 1}}
        for name in ("pii_output", "canary", "extraction", "membership")
    }
    # reports and never fails: counted in no "n/n passed"
    audits["plain_sight"] = {"passed": True, "figures": {}, "thresholds": {}}
    trained = GATED if corpus == "anonymized" else "r" * 64
    metrics: dict[str, Any] = {
        "gate.json": {
            "passed": gate,
            "mu_plus_sigma": 0.7 if gate else 7.2,
            "threshold": 5.0,
            CORPUS_KEY: GATED,
        },
        "audit.json": {
            "passed": not failed_audits,
            "train_corpus": corpus,
            "audits": audits,
            ADAPTER_KEY: adapter,
        },
        "train.json": {
            "train_loss": 1.9,
            CORPUS_KEY: GATED,
            TRAIN_CORPUS_KEY: corpus,
            TRAINED_CORPUS_KEY: trained,
            ADAPTER_KEY: adapter,
        },
        "evaluate.json": {
            "adapter": {"summary.rouge1": utility, "perplexity_raw": 21.0},
            ADAPTER_KEY: adapter,
        },
    }
    encoded = {name: json.dumps(body, indent=2).encode() for name, body in metrics.items()}
    return EvidenceFiles(encoded, corpus, adapter)


def add_version(
    client: Any,
    model_name: str,
    *,
    files: EvidenceFiles | None,
    key: Ed25519PrivateKey = PRODUCER,
    experiment: str = "0",
    adapter: dict[str, bytes] = ADAPTER,
) -> tuple[str, str]:
    """A registered version whose run holds ``files`` as signed evidence (none when None)
    and whose model holds the ``adapter`` files; returns (version, run id)."""
    from mlflow.exceptions import MlflowException

    run = client.create_run(experiment)
    run_id = run.info.run_id
    if files is not None:
        log_evidence(client, run_id, files=files, key=key)
    with tempfile.TemporaryDirectory() as work:
        folder = write_adapter(Path(work) / ADAPTER_ARTIFACT, adapter)
        client.log_artifacts(run_id, str(folder), f"model/artifacts/{ADAPTER_ARTIFACT}")
    client.set_terminated(run_id)
    try:
        client.create_registered_model(model_name)
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
    version = client.create_model_version(
        model_name, f"{run.info.artifact_uri}/model", run_id=run_id
    )
    return str(version.version), run_id
