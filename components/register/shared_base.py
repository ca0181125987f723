"""The base model of registered versions: named by its content hash, logged once and shared.

A version's adapter is small; its base model is not (hundreds of MB). The base is logged to
the artifact store once, in a run of its own tagged with its hash, and every version on the
same base points to that run (``runs:/<run>/base_model``) instead of carrying a copy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from components.core.errors import BackendError
from components.core.lineage import sha256_tree

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

    from components.train import BaseModelRef

logger = logging.getLogger(__name__)

BASE_SHA256_TAG = "veiltune.base_model.sha256"
KIND_TAG = "veiltune.kind"
BASE_MODEL_KIND = "base_model"


@dataclass(frozen=True)
class BaseModel:
    """A local base model folder and its portable identity (name, content hash)."""

    name: str
    folder: Path
    sha256: str

    def to_tags(self) -> dict[str, str]:
        """The version tags naming the base model (and making it part of the fingerprint)."""
        return {"base_model": self.name, "base_model_sha256": self.sha256}


def describe_base_model(folder: Path, source: str) -> BaseModel:
    """The base model in ``folder``, named after its ``source`` (base_model's metrics): the
    bundled model's name, or a source folder's own name (never a local path)."""
    name = source if source.startswith("bundled:") else Path(source).name
    return BaseModel(name or folder.name, folder, sha256_tree(folder))


def shared_base_model(client: MlflowClient, experiment_id: str, *, base: BaseModel) -> BaseModelRef:
    """The base model's reference in the artifact store, logged first if no finished run
    of ``experiment_id`` holds a base with its hash."""
    from mlflow.exceptions import MlflowException

    from components.train import BASE_ARTIFACT, BaseModelRef

    query = f"tags.`{BASE_SHA256_TAG}` = '{base.sha256}' and attributes.status = 'FINISHED'"
    try:
        found = client.search_runs([experiment_id], query, max_results=1)
        run_id = (
            found[0].info.run_id if found else _log_base_model(client, experiment_id, base=base)
        )
    except MlflowException as exc:
        raise BackendError(f"logging the base model {base.name}: {exc.message}") from exc
    return BaseModelRef(base.name, base.sha256, f"runs:/{run_id}/{BASE_ARTIFACT}")


def _log_base_model(client: MlflowClient, experiment_id: str, *, base: BaseModel) -> str:
    """A run of its own holding the base model's files; FAILED (so never reused) when the
    upload does not finish."""
    from components.train import BASE_ARTIFACT  # loads MLflow's pyfunc

    run = client.create_run(
        experiment_id,
        run_name=f"base_model {base.name}",
        tags={KIND_TAG: BASE_MODEL_KIND, BASE_SHA256_TAG: base.sha256, "base_model": base.name},
    )
    run_id = str(run.info.run_id)
    logger.info("logging base model %s (sha256 %s) once for every version", base.name, base.sha256)
    try:
        client.log_artifacts(run_id, str(base.folder), BASE_ARTIFACT)
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise
    client.set_terminated(run_id, "FINISHED")
    return run_id
