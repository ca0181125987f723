"""The bundle on its model version: the manifest's sha256 and signature as tags of the
registered version the bundle describes, and the check of a bundle against them.

The export stage, not the register stage, writes these tags: export runs after register, and
the manifest it signs holds what register produced (``metrics/register.json``, the version's
aliases at export time), so no manifest exists while register runs. Each export tags the
version it bundles again: the registry names the latest bundle of that version, and
``veiltune export --verify BUNDLE --against-registry`` fails on any other.

The bundle itself is in the artifact store, under ``bundle/`` of the export stage's run,
which the version's ``bundle.run_id`` names: ``veiltune export --fetch VERSION`` downloads it
from there and checks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from components.core.errors import BackendError, InputError

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

MANIFEST_TAG = "bundle.manifest_sha256"
SIGNATURE_TAG = "bundle.signature"  # base64, as manifest.sig holds it
KEY_TAG = "bundle.public_key_sha256"
RUN_TAG = "bundle.run_id"  # the run whose artifacts hold the bundle
ARTIFACT_PATH = "bundle"  # where in that run's artifacts


def bundle_tags(manifest: Mapping[str, Any], signature: str, *, run_id: str) -> dict[str, str]:
    """The tags that name a signed bundle: its manifest's sha256, signature and key, and the
    run whose artifacts hold it."""
    return {
        MANIFEST_TAG: str(manifest["manifest_sha256"]),
        SIGNATURE_TAG: signature,
        KEY_TAG: str(manifest["signing"]["public_key_sha256"]),
        RUN_TAG: run_id,
    }


def record_bundle(
    client: MlflowClient, manifest: Mapping[str, Any], *, signature: str, run_id: str
) -> None:
    """Tag the model version the manifest's ``registered_model`` names with the bundle,
    whose files run ``run_id`` holds under ``ARTIFACT_PATH``.

    Raises:
        BackendError: the registry has no such version, or cannot be written.
    """
    from mlflow.exceptions import MlflowException

    name, version = _registered(manifest)
    try:
        for key, value in bundle_tags(manifest, signature, run_id=run_id).items():
            client.set_model_version_tag(name, version, key, value)
    except MlflowException as exc:
        raise BackendError(
            f"model registry: cannot record the bundle on {name} v{version}: {exc.message}"
        ) from exc


def registry_problems(
    client: MlflowClient, manifest: Mapping[str, Any], *, signature: str | None
) -> list[str]:
    """Where the bundle differs from what the registry recorded for its version; empty
    when the manifest's sha256 and the signature are the ones recorded.

    Raises:
        BackendError: the registry cannot be read, or has no such version.
        InputError: the manifest names no registered version.
    """
    from mlflow.exceptions import MlflowException

    name, version = _registered(manifest)
    where = f"registry: {name} v{version}"
    try:
        tags = client.get_model_version(name, version).tags
    except MlflowException as exc:
        raise BackendError(f"{where}: {exc.message}") from exc
    if MANIFEST_TAG not in tags:
        return [
            f"{where}: records no bundle (no tag {MANIFEST_TAG}): it was never exported "
            "with a signature"
        ]
    problems = []
    claimed = manifest.get("manifest_sha256")
    if tags[MANIFEST_TAG] != claimed:
        problems.append(
            f"{where}: records manifest sha256 {tags[MANIFEST_TAG]}, this bundle's is "
            f"{claimed}: not the bundle exported for this version"
        )
    if tags.get(SIGNATURE_TAG) != signature:
        problems.append(
            f"{where}: records another signature than this bundle's "
            f"({'it has none' if signature is None else 'they differ'})"
        )
    return problems


def _registered(manifest: Mapping[str, Any]) -> tuple[str, str]:
    registered = manifest.get("registered_model") or {}
    name, version = registered.get("model_name"), registered.get("model_version")
    if not name or not version:
        raise InputError("manifest.json names no registered model version to compare with")
    return str(name), str(version)
