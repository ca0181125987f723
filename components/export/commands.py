"""Checking a bundle an auditor received against its manifest, the producer's signature and,
in the producer's checkout, what the model registry recorded; fetching a registered
version's bundle from the artifact store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from components.core import tracking
from components.core.atomic import atomic_folder
from components.core.errors import BackendError, BundleTampered, InputError
from components.core.stage import Metrics
from components.export.bundle import read_manifest, verify_bundle
from components.export.registry_record import ARTIFACT_PATH, RUN_TAG, registry_problems
from components.export.signing import (
    KEY_ENV,
    configured_key_path,
    fingerprint,
    read_private_key,
    read_public_key,
)
from components.export.verify import BUNDLE_KIND, read_signature

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from mlflow.tracking import MlflowClient


def verify(
    bundle: Path,
    public_key: Path | None = None,
    *,
    configured_key: str | None = None,
    base_dir: Path = Path(),
    against_registry: bool = False,
) -> Metrics:
    """Check a bundle folder or zip: its files against its manifest, and the manifest's
    signature with the trusted key (``trusted_key``); raise listing every problem.

    Args:
        public_key: the producer's public key (PEM) an auditor was given.
        configured_key: ``export.signing_key`` of the checkout's params (None outside one).
        against_registry: also compare the manifest's sha256 and signature with the tags of
            the model version it names, in the MLflow registry (``MLFLOW_TRACKING_URI``).
    """
    key, key_source = trusted_key(public_key, configured_key, base_dir=base_dir)
    problems = verify_bundle(bundle, key)
    manifest = read_manifest(bundle)
    if against_registry:
        problems += registry_problems(
            _registry_client(), manifest, signature=read_signature(bundle)
        )
    if problems:
        raise BundleTampered(
            f"{bundle}: {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return {
        "bundle": str(bundle),
        "intact": True,
        "signed": True,
        "public_key_sha256": fingerprint(key),
        "public_key_from": key_source,
        "against_registry": against_registry,
        "n_files": len(manifest["files"]),
    }


def trusted_key(
    public_key: Path | None, configured_key: str | None, *, base_dir: Path
) -> tuple[Ed25519PublicKey, str]:
    """The key a bundle must be signed with, and where it came from: ``public_key`` when
    given, else the checkout's key pair (``$VEILTUNE_SIGNING_KEY`` or
    ``export.signing_key``). Never the bundle's own copy: a forger would replace that.

    Raises:
        InputError: no key was given and the checkout has none.
    """
    if public_key is not None:
        return read_public_key(public_key), str(public_key)
    path = configured_key_path(configured_key, base_dir)
    if path is None or not path.is_file():
        where = f" (none at {path})" if path is not None else ""
        raise InputError(
            f"no public key to check the bundle's signature with{where}: pass --public-key "
            "FILE, the producer's public key, or run in the checkout that made the bundle "
            f"(export.signing_key in params.yaml, or ${KEY_ENV})"
        )
    return read_private_key(path).public_key(), str(path)


def _registry_client() -> MlflowClient:
    """A client of the tracking store, refusing to create an empty one where none is."""
    from mlflow.tracking import MlflowClient

    uri = tracking.tracking_uri()
    database = uri.removeprefix("sqlite:///")
    if database != uri and not Path(database).is_file():
        raise InputError(
            f"{uri}: no MLflow store here; run --against-registry in the checkout that "
            "registered the model, or set MLFLOW_TRACKING_URI"
        )
    return MlflowClient(tracking_uri=uri)


def fetch(
    model_name: str,
    version: str,
    *,
    output: Path,
    public_key: Path | None = None,
    configured_key: str | None = None,
    base_dir: Path = Path(),
) -> Metrics:
    """Download the bundle of a registered version from the artifact store into ``output``
    and check it (``verify``, against the registry too); nothing is written unless it holds.

    Args:
        model_name: the registered model (``register.model_name``).
        version: its version number.
        output: the folder to write (replaced whole only when veiltune wrote it as a bundle).
        public_key, configured_key, base_dir: the key to check the signature with, as
            ``verify`` takes it.

    Raises:
        InputError: the version records no bundle in the artifact store.
        BackendError: the registry or the artifact store cannot be read.
        BundleTampered: the downloaded bundle does not verify.
    """
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException

    where = f"registry: {model_name} v{version}"
    client = _registry_client()
    try:
        tags = client.get_model_version(model_name, version).tags
    except MlflowException as exc:
        raise BackendError(f"{where}: {exc.message}") from exc
    run_id = tags.get(RUN_TAG)
    if not run_id:
        raise InputError(
            f"{where}: records no bundle in the artifact store (no tag {RUN_TAG}); run the "
            "export stage again for it"
        )
    with atomic_folder(output, BUNDLE_KIND) as tmp:
        try:
            mlflow.artifacts.download_artifacts(
                run_id=run_id,
                artifact_path=ARTIFACT_PATH,
                dst_path=str(tmp),
                tracking_uri=client.tracking_uri,
            )
        except (MlflowException, OSError) as exc:
            source = f"runs:/{run_id}/{ARTIFACT_PATH}"
            raise BackendError(f"{where}: cannot download {source}: {exc}") from exc
        for item in (tmp / ARTIFACT_PATH).iterdir():
            item.rename(tmp / item.name)
        (tmp / ARTIFACT_PATH).rmdir()
        result = verify(
            tmp, public_key, configured_key=configured_key, base_dir=base_dir, against_registry=True
        )
    return {**result, "bundle": str(output), "fetched_from": f"runs:/{run_id}/{ARTIFACT_PATH}"}
