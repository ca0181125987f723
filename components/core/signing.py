"""The producer's Ed25519 key: where it lies, made on first use, and signatures over bytes.

Two records are signed with it: the compliance bundle's manifest (export) and each registered
version's promotion evidence (register). A hash alone only shows that nobody edited a file
*without* re-hashing it, and anyone can re-hash; a signature made with a key only the
producer holds is what vouches for a record. It is checked with a key the checker trusts
(the checkout's, or one given apart), never a copy travelling with the record: a forger
would replace that too.

The private key is an unencrypted PKCS#8 PEM file named by ``$VEILTUNE_SIGNING_KEY`` or,
when that is unset, by ``export.signing_key`` (from params.yaml's folder; register reads the
same param). At the params path a missing key is generated on first use, readable by its
owner only (0600); the default is ``.veiltune/keys/signing_key.pem`` (``paths.SIGNING_KEY``,
a 0700 folder), outside ``data/raw``: erasing the raw data (``purge-raw``, ``make clean``)
must not take the key that vouches for every bundle and version signed before. A key left
in ``data/raw`` by earlier releases is moved there on first use. It never enters the bundle,
MLflow or any other output.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import stat
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from components.core import paths
from components.core.atomic import private_folder
from components.core.errors import InputError, ParamsError
from components.core.workspace import KEY_ENV

logger = logging.getLogger(__name__)

ALGORITHM = "Ed25519"
KEY_PARAM = "export.signing_key"  # the one param naming the key; register reads it too
# Where a private key would be copied on (a bundle, a model, a report), replaced (the
# export rebuilds exports/ whole) or erased with the raw data (purge-raw): refused as its
# place.
_OUTPUT_FOLDERS = ("exports", "metrics", "models", "reports", "mlartifacts", "mlruns", "data")
_SIGNATURE_BYTES = 64


def configured_key_path(configured: str | None, base_dir: Path) -> Path | None:
    """The private key's path: ``$VEILTUNE_SIGNING_KEY`` when set, else ``configured``
    (``export.signing_key``) from ``base_dir``; None when neither names one.

    Raises:
        ParamsError: the path lies in a folder the pipeline writes outputs into.
    """
    named = os.environ.get(KEY_ENV) or None
    if named is not None:
        return _outside_outputs(Path(named), f"${KEY_ENV}", base_dir=base_dir)
    if configured is None:
        return None
    return _outside_outputs(base_dir / configured, f"params: {KEY_PARAM}", base_dir=base_dir)


def _outside_outputs(path: Path, where: str, *, base_dir: Path) -> Path:
    resolved = path.resolve()
    for folder in _OUTPUT_FOLDERS:
        if resolved.is_relative_to((base_dir / folder).resolve()):
            raise ParamsError(
                f"{where}: {path} lies in {folder}/, a pipeline output; keep the "
                f"private key outside every output (default: {paths.SIGNING_KEY})"
            )
    return path


def signing_key(configured: str, base_dir: Path) -> Ed25519PrivateKey:
    """The producer's private key, generated at ``export.signing_key`` on first use.

    A key named by ``$VEILTUNE_SIGNING_KEY`` must exist: a missing one is a mistake, not
    a first use.

    Raises:
        InputError: the key cannot be read, is not Ed25519, or is encrypted.
        ParamsError: the key's path lies in a pipeline output folder.
    """
    if os.environ.get(KEY_ENV):
        return read_private_key(
            _outside_outputs(Path(os.environ[KEY_ENV]), f"${KEY_ENV}", base_dir=base_dir)
        )
    path = _outside_outputs(base_dir / configured, f"params: {KEY_PARAM}", base_dir=base_dir)
    move_legacy_key(path, base_dir)
    if not path.exists():
        _generate(path)
    return read_private_key(path)


def checkout_public_key(configured: str | None, base_dir: Path) -> Ed25519PublicKey | None:
    """The public half of the checkout's key, or None when it has none (never made here).

    Raises:
        InputError: the key file exists but cannot be read as an Ed25519 key.
    """
    path = configured_key_path(configured, base_dir)
    if path is not None and not os.environ.get(KEY_ENV):
        move_legacy_key(path, base_dir)
    if path is None or not path.is_file():
        return None
    return read_private_key(path).public_key()


def move_legacy_key(path: Path, base_dir: Path) -> None:
    """Move the key earlier releases kept in ``data/raw`` to ``path`` (where none is yet),
    owner-only, before anything erases the raw data with it."""
    legacy = base_dir / paths.LEGACY_SIGNING_KEY
    if path.exists() or not legacy.is_file():
        return
    if not path.parent.is_dir():
        private_folder(path.parent)
    os.replace(legacy, path)
    path.chmod(0o600)
    logger.warning(
        "moved the signing key from %s to %s: outside the raw data, which purge-raw erases",
        legacy,
        path,
    )


def _generate(path: Path) -> None:
    """Write a new key at ``path`` (0600 from its creation), never replacing one that
    another process wrote meanwhile."""
    if not path.parent.is_dir():
        private_folder(path.parent)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    staged = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
    try:
        os.link(staged, path)
    except FileExistsError:
        # Another stage made the key between our check and now: theirs is the key.
        logger.info("%s: made meanwhile by another process; using it", path)
    else:
        logger.info("generated the signing key %s (keep it; share its public key)", path)
    finally:
        staged.unlink()


def read_private_key(path: Path) -> Ed25519PrivateKey:
    """An unencrypted PEM Ed25519 private key.

    Raises:
        InputError: missing, unreadable, encrypted, or not an Ed25519 key.
    """
    data = _read_key_file(path, "signing key")
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        logger.warning("%s: readable by others; chmod 600 it", path)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:  # cryptography's word for "encrypted, and no password"
        raise InputError(f"{path}: the signing key is encrypted; give an unencrypted one") from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InputError(f"{path}: not a PEM private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError(f"{path}: a {type(key).__name__}, not an {ALGORITHM} private key")
    return key


def read_public_key(path: Path) -> Ed25519PublicKey:
    """A PEM Ed25519 public key (what an auditor is given).

    Raises:
        InputError: missing, unreadable, a private key, or not an Ed25519 public key.
    """
    data = _read_key_file(path, "public key")
    if b"PRIVATE KEY-----" in data:
        raise InputError(
            f"{path}: a private key; --public-key takes the producer's public key "
            "(signing/public_key.pem beside a bundle they verified)"
        )
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InputError(f"{path}: not a PEM public key ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise InputError(f"{path}: a {type(key).__name__}, not an {ALGORITHM} public key")
    return key


def _read_key_file(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what}: {exc.strerror}") from exc


def public_key_pem(key: Ed25519PublicKey) -> bytes:
    """The public key as PEM (SubjectPublicKeyInfo), as the bundle ships it."""
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def fingerprint(key: Ed25519PublicKey) -> str:
    """sha256 (hex) of the 32 raw public key bytes: ``openssl pkey -pubin -in KEY.pem
    -outform DER | tail -c 32 | sha256sum`` prints the same."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(data: bytes, key: Ed25519PrivateKey) -> str:
    """The signature over ``data``'s exact bytes, base64 (what a ``.sig`` file holds)."""
    return base64.b64encode(key.sign(data)).decode("ascii")


def signature_problem(
    data: bytes,
    signature: bytes,
    *,
    named_key: str | None,
    trusted: Ed25519PublicKey,
    names: tuple[str, str, str],
) -> str | None:
    """Why ``data`` is not vouched for by ``trusted``; None when its signature is good.

    Args:
        data: the signed record exactly as read, what the signature covers.
        signature: the content of its signature file (a missing one is the caller's to
            word: what it leaves unvouched differs).
        named_key: the key fingerprint the record names (``public_key_sha256``).
        trusted: the producer's public key, never a copy found beside the record.
        names: the signature file's and the record's names and what the record is, for
            the message (``("manifest.sig", "manifest.json", "the manifest")``).
    """
    signature_name, record_name, record = names
    expected = fingerprint(trusted)
    if named_key != expected:
        return (
            f"{signature_name}: the key fingerprint does not match: {record_name} names key "
            f"sha256 {named_key or 'none'}, the trusted public key is sha256 {expected} "
            "(signed by another key)"
        )
    try:
        raw = base64.b64decode(signature.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != _SIGNATURE_BYTES:
        return f"{signature_name}: not a base64 {ALGORITHM} signature (corrupt)"
    try:
        trusted.verify(raw, data)
    except InvalidSignature:
        return (
            f"{signature_name}: the signature does not match {record_name}: {record} was "
            "changed after it was signed (a forged re-hash?)"
        )
    return None
