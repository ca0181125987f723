"""The evidence a registration stakes its promotion on, as the stages write it, and a
registry version that carries it without logging a model (fast: no pyfunc to load)."""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.register.evidence import EvidenceFiles, log_evidence

PRODUCER = Ed25519PrivateKey.generate()  # the checkout's key in the tests that need no file


def metrics_files(
    utility: float = 0.3,
    gate: bool = True,
    failed_audits: tuple[str, ...] = (),
    corpus: str = "anonymized",
) -> EvidenceFiles:
    """gate.json, audit.json, train.json and evaluate.json as the stages write them."""
    audits = {
        name: {"passed": name not in failed_audits, "figures": {}, "thresholds": {}}
        for name in ("pii_output", "canary", "extraction", "membership")
    }
    metrics: dict[str, Any] = {
        "gate.json": {"passed": gate, "mu_plus_sigma": 0.7 if gate else 7.2, "threshold": 5.0},
        "audit.json": {"passed": not failed_audits, "train_corpus": corpus, "audits": audits},
        "train.json": {"train_loss": 1.9},
        "evaluate.json": {"adapter": {"summary.rouge1": utility, "perplexity_raw": 21.0}},
    }
    return EvidenceFiles(
        {name: json.dumps(body, indent=2).encode() for name, body in metrics.items()}, corpus
    )


def add_version(
    client: Any,
    model_name: str,
    files: EvidenceFiles | None,
    key: Ed25519PrivateKey = PRODUCER,
    experiment: str = "0",
) -> tuple[str, str]:
    """A registered version whose run holds ``files`` as signed evidence (none when None);
    returns (version, run id)."""
    from mlflow.exceptions import MlflowException

    run = client.create_run(experiment)
    run_id = run.info.run_id
    if files is not None:
        log_evidence(client, run_id, files, key)
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
