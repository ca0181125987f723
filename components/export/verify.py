"""Reading a compliance bundle back and checking it against its manifest and the signature
over it (``components.export.signing``), on a folder or a zip.

The manifest only proves that nobody edited the bundle *without* rewriting the manifest;
the signature (``manifest.sig``, checked only against a key the verifier trusts) proves who
wrote the manifest. A verifier must also refuse what no exporter writes and what would make
the files checked differ from the files an auditor extracts or opens:

- Problems, listed with tampering (``veiltune export --verify`` exits 5): bytes in a zip
  before its first member, between members or after its end (zipfile skips them, a reader
  that streams the zip reads them as members: ``components.export.zip_layout``), two zip
  members of one name (``unzip -n`` extracts the first, zipfile reads the last), a name
  that is not a plain relative path (absolute, ``..``, a drive letter, a backslash), a
  symbolic link (a zip member marked as one, or any link in a folder, which is reported and
  never followed), and anything else that is not a regular file or a folder. With a
  trusted key: no signature (unsigned), a signature by another key, one that does not match
  the manifest.
- Errors (``InputError``, exit 1), a bundle that cannot be read: no manifest, a manifest over
  ``MAX_MANIFEST_BYTES`` or nested deeper than ``MAX_MANIFEST_DEPTH``, an encrypted member, a
  compression method other than stored or deflated, a member whose bytes disagree with its
  header (length, CRC, a corrupt deflate stream), a local header not where the central
  directory says.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import zipfile
import zlib
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from components.core.atomic import FOLDER_MARK
from components.core.errors import InputError
from components.core.lineage import sha256_text
from components.export.manifest import MANIFEST, parse_manifest, read_manifest_bytes
from components.export.signing import SIGNATURE, signature_problems
from components.export.zip_layout import layout_problem

# The files the manifest cannot list: itself, and the signature over it.
_SEALED = (MANIFEST, SIGNATURE)
# The bundle folder's marker (components.core.atomic.atomic_folder: only an earlier bundle is
# ever replaced by export) belongs to the folder, not the bundle: it is in no manifest nor
# the export's zip, and skipped (in the folder, or a zip of it made by hand) only while it
# holds exactly this kind.
BUNDLE_KIND = "bundle"

_CHUNK = 1 << 20

# What the exporter and the common zip tools write; bzip2 and lzma are refused rather than
# left to optional modules (and their own decompression costs).
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_ZIP_ENCRYPTED = 0x1 | 0x40  # flag bits: traditional PKWARE encryption, strong encryption
# What zipfile and its decompressors raise on a corrupt or unusual archive or member.
_UNREADABLE_ZIP = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    EOFError,
    OSError,
    ValueError,
    zlib.error,
)

_DRIVE = re.compile(r"^[A-Za-z]:")
_SYMLINK = "a symbolic link (refused)"
_SPECIAL = "not a regular file (refused)"
_UNSAFE = "not a plain relative path (refused)"

# Open a folder's file only if it is itself a regular file: not through a link, not blocking.
_NO_FOLLOW = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class _Contents:
    """A bundle as read: its manifest (None when the manifest entry itself was refused), the
    sha256 of every other regular file, the entries refused, with why, the manifest's bytes,
    the signature's (None when there is none) and, for a zip checked, why its bytes are not
    one archive (None when they are)."""

    manifest: dict[str, Any] | None
    digests: dict[str, str]
    refused: dict[str, str]
    manifest_bytes: bytes = b""
    signature: bytes | None = None
    misshapen: str | None = None


def unsafe_name(name: str) -> bool:
    """Whether a bundle name could land outside the bundle when extracted: empty, absolute,
    with a ``..`` component, a drive letter or a backslash."""
    parts = PurePosixPath(name).parts
    return (
        not parts
        or name.startswith("/")
        or ".." in parts
        or "\\" in name
        or _DRIVE.match(name) is not None
    )


def verify_bundle(bundle: Path, trusted_key: Ed25519PublicKey | None = None) -> list[str]:
    """Problems found in a bundle folder or zip: each tampered, missing or unlisted file, an
    edited manifest, and each entry refused (see the module docstring). Empty when intact.

    With ``trusted_key`` (the producer's public key, never the bundle's own copy), also an
    unsigned bundle and a signature that does not vouch for the manifest. Without it the
    check is of integrity only, which anyone who re-hashes an edited file passes.

    Raises:
        InputError: the bundle does not exist or cannot be read (see the module docstring).
    """
    contents = _read_bundle(bundle, hash_files=True)
    problems = [f"the archive: {contents.misshapen}"] if contents.misshapen else []
    problems += [f"{name}: {reason}" for name, reason in sorted(contents.refused.items())]
    if contents.manifest is None:
        return problems  # the manifest itself was refused: nothing trustworthy to compare with
    manifest = contents.manifest
    problems += compare_with_manifest(dict(manifest), contents.digests, refused=contents.refused)
    if trusted_key is not None and SIGNATURE not in contents.refused:
        problems += signature_problems(
            manifest, contents.manifest_bytes, signature=contents.signature, trusted=trusted_key
        )
    return problems


def compare_with_manifest(
    manifest: dict[str, Any], digests: Mapping[str, str], *, refused: Collection[str] = ()
) -> list[str]:
    """Problems between a parsed manifest and the sha256 of each file actually present.

    Names in ``refused`` are present but were not hashed (reported apart), so they are
    neither missing nor unlisted.
    """
    problems = []
    claimed = manifest.pop("manifest_sha256", None)
    if claimed != sha256_text(json.dumps(manifest, sort_keys=True)):
        problems.append(f"{MANIFEST}: its own hash does not match (the manifest was edited)")
    listed: dict[str, str] = manifest["files"]
    for name, digest in sorted(listed.items()):
        if name in refused:
            continue
        if name not in digests:
            problems.append(f"{name}: missing")
        elif digests[name] != digest:
            problems.append(f"{name}: sha256 differs from the manifest (tampered)")
    for name in sorted(set(digests) - set(listed) - set(_SEALED)):
        problems.append(f"{name}: not listed in the manifest")
    return problems


def read_manifest(bundle: Path) -> dict[str, Any]:
    """The parsed manifest of a bundle folder or zip (see ``verify_bundle`` for errors)."""
    contents = _read_bundle(bundle, hash_files=False)
    if contents.manifest is None:
        raise InputError(f"{bundle}: {MANIFEST}: {contents.refused[MANIFEST]}")
    return contents.manifest


def read_signature(bundle: Path) -> str | None:
    """The base64 signature ``manifest.sig`` holds (stripped), None when there is none."""
    signature = _read_bundle(bundle, hash_files=False).signature
    return None if signature is None else signature.decode("ascii", "replace").strip()


def _read_bundle(bundle: Path, hash_files: bool) -> _Contents:
    if bundle.is_dir():
        return _read_folder(bundle, hash_files)
    if bundle.is_file():
        return _read_zip(bundle, hash_files)
    raise InputError(f"{bundle}: no such bundle (expected a folder or a .zip)")


def _refusal(name: str, mode: int) -> str | None:
    """Why an entry is refused, from its name and its st_mode (0 when a zip records none)."""
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        return _SYMLINK
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return _SPECIAL
    return _UNSAFE if unsafe_name(name) else None


# The folder


def _read_folder(folder: Path, hash_files: bool) -> _Contents:
    try:
        files, refused = _list_folder(folder)
        files = [name for name in files if not _is_folder_mark(folder, name)]
        raw = _read_folder_sealed(folder, MANIFEST) if MANIFEST in files else b""
        if MANIFEST in files:
            manifest = parse_manifest(raw, folder)
        elif MANIFEST in refused:
            manifest = None
        else:
            raise InputError(
                f"{folder / MANIFEST}: no manifest; not a veiltune bundle, or it was removed"
            )
        signature = _read_folder_sealed(folder, SIGNATURE) if SIGNATURE in files else None
        names = files if hash_files else []
        digests = {name: _sha256_regular(folder / name) for name in names if name not in _SEALED}
    except OSError as exc:
        raise InputError(f"{exc.filename or folder}: cannot be read: {exc.strerror}") from exc
    return _Contents(manifest, digests, refused, raw, signature)


def _is_folder_mark(folder: Path, name: str) -> bool:
    if name != FOLDER_MARK:
        return False
    with (folder / name).open("rb") as handle:
        return _is_mark(handle.read(64))


def _is_mark(data: bytes) -> bool:
    return data == f"{BUNDLE_KIND}\n".encode()


def _list_folder(folder: Path) -> tuple[list[str], dict[str, str]]:
    """The regular files under ``folder`` (relative names) and the entries refused, with why.

    Links are looked at, never followed (``lstat``; ``os.walk`` does not descend into them).
    """
    files: list[str] = []
    refused: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder, onerror=_raise_os_error):
        here = Path(dirpath)
        for entry in [*dirnames, *filenames]:
            name = _relative_name(here / entry, folder)
            mode = (here / entry).lstat().st_mode
            reason = _refusal(name, mode)
            if reason is not None:
                refused[name] = reason
            elif stat.S_ISREG(mode):
                files.append(name)
        # A refused folder is reported once, not once per file under it.
        dirnames[:] = [d for d in dirnames if _relative_name(here / d, folder) not in refused]
    return sorted(files), refused


def _relative_name(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


def _raise_os_error(exc: OSError) -> None:
    """os.walk's onerror: a folder it cannot list is an error, not a folder skipped."""
    raise exc


@contextmanager
def _open_regular(path: Path) -> Iterator[IO[bytes]]:
    """``path`` opened for reading only if it is itself a regular file, not a link to one."""
    with os.fdopen(os.open(path, _NO_FOLLOW), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InputError(f"{path}: not a regular file (it changed while being verified)")
        yield handle


def _read_folder_sealed(folder: Path, name: str) -> bytes:
    """The manifest or the signature, read whole (both are capped like the manifest)."""
    with _open_regular(folder / name) as handle:
        declared = os.fstat(handle.fileno()).st_size
        return read_manifest_bytes(handle, declared, where=f"{folder}: {name}")


def _sha256_regular(path: Path) -> str:
    digest = hashlib.sha256()
    with _open_regular(path) as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# The zip


def _read_zip(zip_path: Path, hash_files: bool) -> _Contents:
    try:
        with zipfile.ZipFile(zip_path) as archive:
            members, refused = _list_zip(archive.infolist())
            marker = members.get(FOLDER_MARK)
            if marker is not None and marker.file_size < 64 and _is_mark(archive.read(marker)):
                del members[FOLDER_MARK]  # the folder's, zipped with it by hand
            manifest, raw = _zip_manifest(archive, members, refused=refused, zip_path=zip_path)
            signed = members.get(SIGNATURE)
            signature = None if signed is None else _zip_sealed(archive, signed, zip_path=zip_path)
            infos = list(members.values()) if hash_files else []
            digests = {
                info.filename: _zip_member_sha256(archive, info, zip_path=zip_path)
                for info in infos
                if info.filename not in _SEALED
            }
            misshapen = _zip_layout_problem(zip_path, archive) if hash_files else None
    except _UNREADABLE_ZIP as exc:
        raise InputError(f"{zip_path}: not a readable zip archive: {exc}") from exc
    return _Contents(manifest, digests, refused, raw, signature, misshapen)


def _zip_layout_problem(zip_path: Path, archive: zipfile.ZipFile) -> str | None:
    """Why the zip's bytes are not one archive from first to last (see ``zip_layout``)."""
    with zip_path.open("rb") as handle:
        try:
            return layout_problem(handle, archive.infolist())
        except InputError as exc:
            raise InputError(f"{zip_path}: {exc}") from exc


def _list_zip(infos: list[zipfile.ZipInfo]) -> tuple[dict[str, zipfile.ZipInfo], dict[str, str]]:
    """The file members by name and the entries refused, with why; a name found twice is
    refused, both copies unread (extractors differ on which one wins)."""
    counts = Counter(info.filename for info in infos)
    refused = {
        name: f"{n} entries with this name in the archive (refused)"
        for name, n in counts.items()
        if n > 1
    }
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        # The high 16 bits of external_attr are the st_mode of the file zipped, if recorded.
        reason = _refusal(info.filename, info.external_attr >> 16)
        if reason is not None:
            refused.setdefault(info.filename, reason)
        elif not info.is_dir() and info.filename not in refused:
            members[info.filename] = info
    return members, refused


def _zip_manifest(
    archive: zipfile.ZipFile,
    members: Mapping[str, zipfile.ZipInfo],
    *,
    refused: Mapping[str, str],
    zip_path: Path,
) -> tuple[dict[str, Any] | None, bytes]:
    """The parsed manifest member and its bytes; (None, b"") when it was refused."""
    info = members.get(MANIFEST)
    if info is None and MANIFEST in refused:
        return None, b""
    if info is None:
        raise InputError(
            f"{zip_path}: no {MANIFEST} in the archive; not a veiltune bundle, or it was removed"
        )
    raw = _zip_sealed(archive, info, zip_path=zip_path)
    return parse_manifest(raw, zip_path), raw


def _zip_sealed(archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, zip_path: Path) -> bytes:
    """The manifest or the signature member, read whole (both are capped like the manifest)."""
    where = f"{zip_path}: {info.filename}"
    with _open_member(archive, info, zip_path=zip_path) as handle:
        raw = read_manifest_bytes(handle, info.file_size, where=where)
    _check_length(where, len(raw), declared=info.file_size)
    return raw


@contextmanager
def _open_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, zip_path: Path
) -> Iterator[IO[bytes]]:
    """A member opened for reading; what zipfile raises on it becomes an InputError naming it."""
    where = f"{zip_path}: {info.filename}"
    if info.flag_bits & _ZIP_ENCRYPTED:
        raise InputError(f"{where}: encrypted; a bundle is never encrypted, so it cannot be read")
    if info.compress_type not in _ZIP_METHODS:
        raise InputError(
            f"{where}: compression method {info.compress_type} is not supported "
            f"(only {' or '.join(_ZIP_METHODS.values())})"
        )
    try:
        with archive.open(info) as handle:
            yield handle
    except _UNREADABLE_ZIP as exc:
        detail = str(exc) or type(exc).__name__  # EOFError on a truncated stream says nothing
        raise InputError(f"{where}: cannot be read (corrupt): {detail}") from exc


def _zip_member_sha256(archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, zip_path: Path) -> str:
    """The member's sha256, once its length is found to be the one its header declares
    (zipfile checks the CRC, but stops short without a word when a stored member is short)."""
    digest = hashlib.sha256()
    length = 0
    with _open_member(archive, info, zip_path=zip_path) as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
            length += len(chunk)
    _check_length(f"{zip_path}: {info.filename}", length, declared=info.file_size)
    return digest.hexdigest()


def _check_length(where: str, length: int, *, declared: int) -> None:
    if length != declared:
        raise InputError(f"{where}: holds {length} bytes, declares {declared} (corrupt)")
