"""The compliance bundle format: files with their sha256 in a manifest that hashes itself.

An auditor checks a bundle without veiltune: ``sha256sum -c SHA256SUMS`` in the folder checks
every file, and the manifest's own hash is the sha256 of
``json.dumps(manifest_without_manifest_sha256, sort_keys=True)`` (VERIFY.md in the bundle
says so). ``verify_bundle`` does both, on a folder or on the zip, and also lists files that
are missing or that the manifest does not name.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from components.errors import InputError
from components.jsonio import atomic_path
from components.lineage import sha256_file, sha256_text

MANIFEST = "manifest.json"
CHECKSUMS = "SHA256SUMS"
VERIFY_NOTE = "VERIFY.md"
FORMAT = "veiltune-bundle/1"
_RESERVED = frozenset({MANIFEST, CHECKSUMS, VERIFY_NOTE})

VERIFY_TEXT = f"""\
# Verifying this bundle

Every file of the bundle but `{MANIFEST}` and `{CHECKSUMS}` is listed in `{CHECKSUMS}`, and
every file but `{MANIFEST}` (with its sha256) under `files` in `{MANIFEST}`.

1. Files: in this folder (unzip `bundle.zip` first), run `sha256sum -c {CHECKSUMS}`.
2. The manifest: its `manifest_sha256` is the sha256 of the manifest without that key,
   serialized as Python's `json.dumps(manifest, sort_keys=True)`:

       python3 -c 'import hashlib, json; m = json.load(open("{MANIFEST}")); \\
       c = m.pop("manifest_sha256"); \\
       print(c == hashlib.sha256(json.dumps(m, sort_keys=True).encode()).hexdigest())'

3. `{CHECKSUMS}` itself is listed in the manifest, so steps 1 and 2 together cover every
   file. Files present but listed nowhere were added after export.

With veiltune installed, `veiltune export --verify BUNDLE` (a folder or the zip) does all of
this and names each tampered, missing or unlisted file.
"""

# A source is a file to copy or the bytes to write.
Source = Path | bytes


def build_bundle(
    contents: Mapping[str, Source],
    lineage: Mapping[str, Any],
    bundle_dir: Path,
    make_zip: bool,
    check: Callable[[Path], None] | None = None,
) -> dict[str, Any]:
    """Write ``contents`` (bundle name → file or bytes) into ``bundle_dir`` with a manifest.

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
    with atomic_path(bundle_dir) as tmp:
        tmp.mkdir()
        manifest = _write_folder(contents, lineage, tmp)
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
        parts = PurePosixPath(name).parts
        if not parts or name.startswith("/") or ".." in parts or "\\" in name:
            raise InputError(f"export: bundle name {name!r} is not a plain relative path")
        if name in _RESERVED:
            raise InputError(f"export: bundle name {name!r} is reserved for the bundle itself")


def _write_folder(
    contents: Mapping[str, Source], lineage: Mapping[str, Any], folder: Path
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
        **lineage,
        "format": FORMAT,
        "files": dict(sorted(digests.items())),
    }
    manifest["manifest_sha256"] = sha256_text(json.dumps(manifest, sort_keys=True))
    (folder / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return manifest


def _write_zip(folder: Path, zip_path: Path) -> None:
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(folder).as_posix())


def verify_bundle(bundle: Path) -> list[str]:
    """Problems found in a bundle folder or zip: each tampered, missing or unlisted file, and
    an edited manifest. Empty when the bundle is intact.

    Raises:
        InputError: the bundle does not exist, is not a readable zip, or its manifest is
            absent or malformed.
    """
    manifest_text, digests = _read_bundle(bundle)
    manifest = _parse_manifest(manifest_text, bundle)
    return compare_with_manifest(manifest, digests)


def compare_with_manifest(manifest: dict[str, Any], digests: Mapping[str, str]) -> list[str]:
    """Problems between a parsed manifest and the sha256 of each file actually present."""
    problems = []
    claimed = manifest.pop("manifest_sha256", None)
    if claimed != sha256_text(json.dumps(manifest, sort_keys=True)):
        problems.append(f"{MANIFEST}: its own hash does not match (the manifest was edited)")
    listed: dict[str, str] = manifest["files"]
    for name, digest in sorted(listed.items()):
        if name not in digests:
            problems.append(f"{name}: missing")
        elif digests[name] != digest:
            problems.append(f"{name}: sha256 differs from the manifest (tampered)")
    for name in sorted(set(digests) - set(listed) - {MANIFEST}):
        problems.append(f"{name}: not listed in the manifest")
    return problems


def read_manifest(bundle: Path) -> dict[str, Any]:
    """The parsed manifest of a bundle folder or zip (see ``verify_bundle`` for errors)."""
    manifest_text, _ = _read_bundle(bundle)
    return _parse_manifest(manifest_text, bundle)


def _read_bundle(bundle: Path) -> tuple[str, dict[str, str]]:
    """(manifest text, sha256 of every other file) of a folder or a zip."""
    if bundle.is_dir():
        return _read_folder(bundle)
    if bundle.is_file():
        return _read_zip(bundle)
    raise InputError(f"{bundle}: no such bundle (expected a folder or a .zip)")


def _read_folder(folder: Path) -> tuple[str, dict[str, str]]:
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise InputError(f"{manifest_path}: no manifest; not a veiltune bundle, or it was removed")
    digests = {
        path.relative_to(folder).as_posix(): sha256_file(path)
        for path in folder.rglob("*")
        if path.is_file() and path != manifest_path
    }
    return _decode_manifest(manifest_path.read_bytes(), manifest_path), digests


def _read_zip(zip_path: Path) -> tuple[str, dict[str, str]]:
    try:
        with zipfile.ZipFile(zip_path) as archive:
            names = [n for n in archive.namelist() if not n.endswith("/")]
            if MANIFEST not in names:
                raise InputError(
                    f"{zip_path}: no {MANIFEST} in the archive; not a veiltune bundle, "
                    "or it was removed"
                )
            manifest_bytes = archive.read(MANIFEST)
            digests = {n: _sha256_member(archive, n) for n in names if n != MANIFEST}
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise InputError(f"{zip_path}: not a readable zip archive: {exc}") from exc
    return _decode_manifest(manifest_bytes, zip_path / MANIFEST), digests


def _sha256_member(archive: zipfile.ZipFile, name: str) -> str:
    digest = hashlib.sha256()
    with archive.open(name) as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _decode_manifest(raw: bytes, where: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: manifest is not UTF-8 text (corrupt)") from exc


def _parse_manifest(text: str, bundle: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{bundle}: {MANIFEST} is not valid JSON (corrupt): {exc.msg}") from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise InputError(f"{bundle}: {MANIFEST} has no 'files' mapping of name to sha256 (corrupt)")
    return dict(manifest)
