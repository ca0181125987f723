"""The MLflow model registry: every trained adapter becomes a version; aliases mark status.

A version always gets ``candidate``; it gets ``champion`` only when the corpus passed the
gate and the model passed its leakage audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

CANDIDATE, CHAMPION = "candidate", "champion"
_MODEL_REQUIREMENTS = ("torch", "transformers", "peft", "accelerate", "mlflow")


@dataclass(frozen=True)
class RegisteredVersion:
    name: str
    version: str
    aliases: tuple[str, ...]
    model_uri: str

    def to_metrics(self) -> dict[str, Any]:
        return {
            "model_name": self.name,
            "model_version": self.version,
            "aliases": list(self.aliases),
            "champion": CHAMPION in self.aliases,
        }


def promotion_decision(gate_passed: bool, audit_passed: bool) -> bool:
    """Whether a new version earns ``champion``."""
    return gate_passed and audit_passed


def register_adapter(
    adapter_dir: Path,
    base_model_dir: Path,
    model_name: str,
    tags: dict[str, str],
    champion: bool,
) -> RegisteredVersion:
    """Log the adapter as a pyfunc model in the active run, register it and set aliases."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from components.adapter_model import AdapterPyfunc

    info = mlflow.pyfunc.log_model(
        name="adapter",
        python_model=AdapterPyfunc(),
        artifacts={"adapter": str(adapter_dir)},
        model_config={"base_model": str(base_model_dir.resolve()), "max_new_tokens": 64},
        pip_requirements=[f"{p}=={metadata.version(p)}" for p in _MODEL_REQUIREMENTS],
    )
    version = mlflow.register_model(info.model_uri, model_name, tags=tags)
    client = MlflowClient()
    aliases = [CANDIDATE, CHAMPION] if champion else [CANDIDATE]
    for alias in aliases:
        client.set_registered_model_alias(model_name, alias, version.version)
    return RegisteredVersion(model_name, str(version.version), tuple(aliases), info.model_uri)
