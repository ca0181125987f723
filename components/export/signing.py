"""The signature over the bundle's manifest, made with the producer's Ed25519 key.

File hashes and the manifest's own hash only show that nobody edited a file *without*
re-hashing it, and anyone can re-hash. The signature over ``manifest.json``'s exact bytes,
made with a key only the producer holds, is what vouches for the bundle. An auditor checks
it with the producer's public key obtained apart from the bundle: the copy the bundle ships
(``signing/public_key.pem``) is for reference only, since a forger would replace it too.

The key itself (where it lies, made on first use, reading and fingerprinting it, signing
bytes) is ``components.core.signing``, shared with register, which signs each version's
promotion evidence with the same key; its names are re-exported here for export's callers.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from components.core.signing import (
    ALGORITHM,
    KEY_ENV,
    configured_key_path,
    fingerprint,
    public_key_pem,
    read_private_key,
    read_public_key,
    sign,
    signature_problem,
    signing_key,
)

__all__ = [
    "ALGORITHM",
    "KEY_ENV",
    "PUBLIC_KEY",
    "SIGNATURE",
    "configured_key_path",
    "fingerprint",
    "public_key_pem",
    "read_private_key",
    "read_public_key",
    "sign_manifest",
    "signature_problems",
    "signing_key",
    "signing_record",
]

SIGNATURE = "manifest.sig"  # base64 of the signature over manifest.json, not listed in it
PUBLIC_KEY = "signing/public_key.pem"  # listed in the manifest like any file
_MANIFEST = "manifest.json"


def signing_record(key: Ed25519PublicKey) -> dict[str, str]:
    """What the manifest (and the report) says about its signature."""
    return {
        "algorithm": ALGORITHM,
        "public_key": PUBLIC_KEY,
        "public_key_sha256": fingerprint(key),
        "signature": SIGNATURE,
        "signed": f"the bytes of {_MANIFEST}",
    }


def sign_manifest(manifest_bytes: bytes, key: Ed25519PrivateKey) -> str:
    """The signature over the manifest's bytes, base64 (what ``manifest.sig`` holds)."""
    return sign(manifest_bytes, key)


def signature_problems(
    manifest: dict[str, Any],
    manifest_bytes: bytes,
    *,
    signature: bytes | None,
    trusted: Ed25519PublicKey,
) -> list[str]:
    """Why the manifest is not vouched for by ``trusted``; empty when its signature is good.

    Args:
        manifest: the parsed manifest, for the key fingerprint it names.
        manifest_bytes: ``manifest.json`` exactly as read, what the signature covers.
        signature: the content of ``manifest.sig``; None when the bundle has none.
        trusted: the producer's public key, never the bundle's own copy.
    """
    if signature is None:
        return [
            f"{SIGNATURE}: missing: the bundle is unsigned, so nothing vouches for its "
            "manifest (anyone can edit a file and re-hash it)"
        ]
    named = (manifest.get("signing") or {}).get("public_key_sha256")
    problem = signature_problem(
        manifest_bytes,
        signature,
        named_key=named,
        trusted=trusted,
        names=(SIGNATURE, _MANIFEST, "the manifest"),
    )
    return [problem] if problem else []
