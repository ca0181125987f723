"""The compliance bundle format: files with their sha256 in a manifest that hashes itself,
and the producer's Ed25519 signature over the manifest.

An auditor checks a bundle without veiltune: ``sha256sum -c SHA256SUMS`` in the folder checks
every file, the manifest's own hash is the sha256 of
``json.dumps(manifest_without_manifest_sha256, sort_keys=True)``, and ``openssl pkeyutl
-verify`` checks ``manifest.sig`` against ``manifest.json`` with the producer's public key
(VERIFY.md in the bundle says how). ``verify_bundle`` (in ``components.export.verify``) does
all three, on a folder or on the zip, lists files that are missing or that the manifest does
not name, and refuses what no exporter writes (duplicate, unsafe or linked entries).
``build_bundle`` refuses to write a name that verification would refuse.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.core.atomic import atomic_folder, atomic_path
from components.core.errors import InputError
from components.core.lineage import sha256_file, sha256_text
from components.export.signing import (
    PUBLIC_KEY,
    SIGNATURE,
    public_key_pem,
    sign_manifest,
    signing_record,
)
from components.export.verify import (
    BUNDLE_KIND,
    MANIFEST,
    read_manifest,
    unsafe_name,
    verify_bundle,
)

# verify_bundle and read_manifest live in components.export.verify; they are importable from
# here too, beside the writer of the format they check.
__all__ = [
    "CHECKSUMS",
    "FORMAT",
    "MANIFEST",
    "VERIFY_NOTE",
    "Source",
    "build_bundle",
    "read_manifest",
    "verify_bundle",
]

CHECKSUMS = "SHA256SUMS"
VERIFY_NOTE = "VERIFY.md"
FORMAT = "veiltune-bundle/1"
_RESERVED = frozenset({MANIFEST, CHECKSUMS, VERIFY_NOTE, SIGNATURE, PUBLIC_KEY})

VERIFY_TEXT = f"""\
# Verifying this bundle

Every file of the bundle but `{MANIFEST}`, `{SIGNATURE}` and `{CHECKSUMS}` is listed in
`{CHECKSUMS}`, and every file but `{MANIFEST}` and `{SIGNATURE}` (with its sha256) under
`files` in `{MANIFEST}`.

1. Files: in this folder (unzip `bundle.zip` first), run `sha256sum -c {CHECKSUMS}`.
2. The manifest: its `manifest_sha256` is the sha256 of the manifest without that key,
   serialized as Python's `json.dumps(manifest, sort_keys=True)`:

       python3 -c 'import hashlib, json; m = json.load(open("{MANIFEST}")); \\
       c = m.pop("manifest_sha256"); \\
       print(c == hashlib.sha256(json.dumps(m, sort_keys=True).encode()).hexdigest())'

3. `{CHECKSUMS}` itself is listed in the manifest, so steps 1 and 2 together cover every
   file. Files present but listed nowhere were added after export.
4. The signature: anyone can edit a file and recompute every hash above, so what vouches
   for the bundle is `{SIGNATURE}`, the producer's Ed25519 signature (base64) over the exact
   bytes of `{MANIFEST}`. Check it with the producer's public key, obtained from the
   producer, not from this bundle (a forger would replace the copy in `{PUBLIC_KEY}`;
   compare its fingerprint, `signing.public_key_sha256` in `{MANIFEST}`, with theirs).
   With OpenSSL 3:

       base64 -d {SIGNATURE} > /tmp/manifest.sig.bin
       openssl pkeyutl -verify -pubin -inkey PRODUCER_KEY.pem -rawin \\
         -in {MANIFEST} -sigfile /tmp/manifest.sig.bin
       openssl pkey -pubin -in PRODUCER_KEY.pem -outform DER | tail -c 32 | sha256sum

   The first prints "Signature Verified Successfully"; the last prints the fingerprint.
   A bundle without `{SIGNATURE}` is unsigned: nothing vouches for it.

With veiltune installed, `veiltune export --verify BUNDLE --public-key PRODUCER_KEY.pem` (a
folder or the zip) does all of this and names each tampered, missing or unlisted file.
"""

CREATED_AT = "created_at"


def created_at(now: datetime | None = None) -> str:
    """A creation time as UTC ISO 8601 to the second (``2026-11-27T17:08:17Z``)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


# A source is a file to copy or the bytes to write.
Source = Path | bytes


def build_bundle(
    contents: Mapping[str, Source],
    lineage: Mapping[str, Any],
    *,
    bundle_dir: Path,
    make_zip: bool,
    check: Callable[[Path], None] | None = None,
    signing_key: Ed25519PrivateKey | None = None,
) -> dict[str, Any]:
    """Write ``contents`` (bundle name → file or bytes) into ``bundle_dir`` with a manifest,
    signed with ``signing_key`` when given (the public key goes in the bundle, listed in the
    manifest; the private key never does).

    The folder and its zip (``bundle_dir`` with ``.zip``) appear together or not at all:
    both are built in temporary siblings, ``check`` (e.g. the PI scan) runs on the finished
    folder, and only then are they renamed into place.

    Raises:
        InputError: a source file is missing or a bundle name is not a plain relative path.
    """
    _check_names(contents)
    missing = sorted(str(s) for s in contents.values() if isinstance(s, Path) and not s.is_file())
    if missing:
        raise InputError(f"export: missing input file(s): {', '.join(missing)}")
    with atomic_folder(bundle_dir, BUNDLE_KIND) as tmp:
        if signing_key is None:
            manifest = _write_folder(contents, lineage, folder=tmp)
        else:
            manifest = _write_signed_folder(contents, lineage, folder=tmp, key=signing_key)
        if check is not None:
            check(tmp)
        if make_zip:
            with atomic_path(bundle_dir.with_suffix(".zip")) as tmp_zip:
                _write_zip(tmp, tmp_zip)
    if not make_zip:
        # A zip left from an earlier export would disagree with the new folder.
        bundle_dir.with_suffix(".zip").unlink(missing_ok=True)
    return manifest


def _check_names(contents: Mapping[str, Source]) -> None:
    for name in contents:
        # The names verify_bundle refuses: a bundle it would not pass is never written.
        if unsafe_name(name):
            raise InputError(f"export: bundle name {name!r} is not a plain relative path")
        if name in _RESERVED:
            raise InputError(f"export: bundle name {name!r} is reserved for the bundle itself")


def _write_folder(
    contents: Mapping[str, Source], lineage: Mapping[str, Any], *, folder: Path
) -> dict[str, Any]:
    for name, source in sorted(contents.items()):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source if isinstance(source, bytes) else source.read_bytes())
    (folder / VERIFY_NOTE).write_text(VERIFY_TEXT, encoding="utf-8")
    listed = sorted([*contents, VERIFY_NOTE])
    digests = {name: sha256_file(folder / name) for name in listed}
    sums = "".join(f"{digests[name]}  {name}\n" for name in listed)
    (folder / CHECKSUMS).write_text(sums, encoding="utf-8")
    digests[CHECKSUMS] = sha256_file(folder / CHECKSUMS)
    manifest: dict[str, Any] = {
        # When the bundle was made, inside what the hash and the signature cover; the
        # export stage states the same time on the report and the model card.
        CREATED_AT: lineage.get(CREATED_AT) or created_at(),
        **lineage,
        "format": FORMAT,
        "files": dict(sorted(digests.items())),
    }
    manifest["manifest_sha256"] = sha256_text(json.dumps(manifest, sort_keys=True))
    (folder / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return manifest


def _write_signed_folder(
    contents: Mapping[str, Source],
    lineage: Mapping[str, Any],
    *,
    folder: Path,
    key: Ed25519PrivateKey,
) -> dict[str, Any]:
    """The folder with the public key listed, the key named in the manifest, and the
    signature over the manifest's bytes beside it."""
    public = key.public_key()
    with_key = {**contents, PUBLIC_KEY: public_key_pem(public)}
    manifest = _write_folder(
        with_key, {**lineage, "signing": signing_record(public)}, folder=folder
    )
    signature = sign_manifest((folder / MANIFEST).read_bytes(), key)
    (folder / SIGNATURE).write_text(signature + "\n", encoding="ascii")
    return manifest


def _write_zip(folder: Path, zip_path: Path) -> None:
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(folder).as_posix())
