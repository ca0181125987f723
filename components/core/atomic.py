"""Writing outputs so that a failed write never leaves a half-written one behind, nor
touches anything but its own temporary folder; and refusing, before any work is done, an
output veiltune may not replace."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from components.core.errors import InputError
from components.core.workspace import refuse_protected

# Each write works in a hidden sibling folder ``.<name>.veiltune-XXXX/`` holding the new
# output and an owner file (pid and host); a folder whose owner is dead is debris of a
# killed write and is removed on the next write to the same target.
_PARTIAL = ".veiltune-"
_OWNER = ".veiltune-owner"
_LEGACY_PARTIAL = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}")
# Left in every folder veiltune writes whole, holding its kind: only such a folder (or an
# empty one) is ever replaced by a later write.
FOLDER_MARK = ".veiltune-output"


def check_output_file(
    path: Path,
    inputs: Iterable[Path | None] = (),
    *,
    create_parent: bool = False,
    raw: bool = False,
) -> None:
    """Refuse an output path that does not name a file veiltune may replace, before any
    work is done: an empty name, ``.`` or ``..``, an existing directory, a missing folder
    (unless ``create_parent``), the same file as one of ``inputs`` (the command's input
    files and its other outputs), or what no command may write over
    (:func:`components.core.workspace.refuse_protected`; ``raw``: the output is raw text,
    allowed in a folder of its own under ``data/raw``).

    Raises:
        InputError: naming the path and what to give instead.
    """
    if path.name in ("", ".", ".."):
        raise InputError(
            f"output path {str(path)!r} names no file (empty, '.' or '..'); give a file path"
        )
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give the path of a file to write")
    refuse_protected(path, raw)
    if not create_parent and not path.parent.is_dir():
        raise InputError(f"{path}: its folder {path.parent} does not exist")
    for source in inputs:
        if source is not None and same_file(path, source):
            raise InputError(f"{path}: names the same file as {source}; write the output elsewhere")


def check_output_folder(path: Path, kind: str, *, raw: bool = False) -> None:
    """Refuse a folder a command would replace whole, before any work is done: what
    :func:`atomic_folder` would refuse (a file, the working folder or one above it, an
    existing folder veiltune did not write as a ``kind``), and what no command may write
    over (``raw``: raw text, allowed in a folder of its own under ``data/raw``).

    Raises:
        InputError: naming the path and what to give instead.
    """
    _refuse_unsafe_target(path, directory=True)
    refuse_protected(path, raw, folder=True)
    _refuse_foreign_folder(path, kind)


def check_input_file(path: Path) -> None:
    """Refuse a missing input before anything slow (a model) loads."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links too, when both exist)."""
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


@contextlib.contextmanager
def atomic_path(path: Path, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary sibling of the file ``path``; move it onto ``path`` only if the
    block succeeds. Cleanup removes only the temporary folder this call created. ``mode``
    sets the file's permissions before it is moved into place (until then it lies in a
    folder of this call's, readable by its owner only).

    Raises:
        InputError: ``path`` is empty, ``.``, ``..``, the working folder or one above it,
            or a folder.
    """
    _refuse_unsafe_target(path, directory=False)
    with _staged(path) as tmp:
        yield tmp
        if mode is not None:
            tmp.chmod(mode)


@contextlib.contextmanager
def atomic_folder(
    path: Path, kind: str, *, private: bool = False, raw: bool = False
) -> Iterator[Path]:
    """Yield a new, empty temporary folder that replaces the folder ``path`` whole, in one
    rename, only if the block succeeds.

    A folder already at ``path`` is replaced only when veiltune wrote it as a ``kind``
    (the marker file ``FOLDER_MARK`` it leaves in each, holding the kind) or it is empty:
    never the raw data, a repository or a user's documents named by mistake.

    Args:
        path: the folder to write.
        kind: what it is (``utility-pack``, ``adapter``...), recorded in its marker.
        private: it holds conversation text: the folder and its sub-folders 0700, its
            files 0600 (out of reach in the 0700 staging folder until then).
        raw: it holds raw text: private, and may be a folder of its own under ``data/raw``.

    Raises:
        InputError: what :func:`check_output_folder` refuses.
    """
    check_output_folder(path, kind, raw=raw)
    with _staged(path) as tmp:
        tmp.mkdir()
        yield tmp
        (tmp / FOLDER_MARK).write_text(f"{kind}\n", encoding="utf-8")
        if private or raw:
            _make_private(tmp)


@contextlib.contextmanager
def _staged(path: Path) -> Iterator[Path]:
    """A path in a fresh hidden sibling folder (0700, with its owner's pid), moved onto
    ``path`` when the block succeeds; the sibling goes either way."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(path)
    workdir = Path(tempfile.mkdtemp(prefix=f".{path.name}{_PARTIAL}", dir=path.parent))
    (workdir / _OWNER).write_text(f"{os.getpid()} {socket.gethostname()}\n", encoding="utf-8")
    tmp = workdir / path.name
    try:
        yield tmp
        _move_into_place(tmp, path, workdir=workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _refuse_unsafe_target(path: Path, directory: bool) -> None:
    if path.name in ("", ".", ".."):
        raise InputError(f"output path {str(path)!r} names no file or folder to write")
    resolved = path.resolve()
    if Path.cwd().resolve().is_relative_to(resolved):
        raise InputError(f"{path}: is the working folder or one above it; refusing to replace it")
    if path.is_dir() and not path.is_symlink() and not directory:
        raise InputError(f"{path}: is a directory; give the path of a file to write")
    if path.is_file() and directory:
        raise InputError(f"{path}: is a file where a folder is to be written")


def _refuse_foreign_folder(path: Path, kind: str) -> None:
    """An existing folder is replaced only when veiltune wrote it as a ``kind``, or it is
    empty."""
    if not path.is_dir() or path.is_symlink() or not any(path.iterdir()):
        return
    mark = path / FOLDER_MARK
    found = mark.read_text(encoding="utf-8", errors="replace").strip() if mark.is_file() else ""
    if found == kind:
        return
    what = (
        f"holds veiltune's {found}, not a {kind}"
        if found
        else f"exists and veiltune did not write it (no {FOLDER_MARK} in it)"
    )
    raise InputError(
        f"{path}: {what}; refusing to replace it: name a new folder, or remove this one yourself"
    )


def _make_private(folder: Path) -> None:
    folder.chmod(0o700)
    for item in folder.rglob("*"):
        if not item.is_symlink():
            item.chmod(0o700 if item.is_dir() else PRIVATE)


def _move_into_place(tmp: Path, path: Path, *, workdir: Path) -> None:
    """Rename ``tmp`` onto ``path``; an old folder there is moved aside into ``workdir``
    first (and put back if the rename fails), so it is deleted only with ``workdir``."""
    if not (path.is_dir() and not path.is_symlink()):
        os.replace(tmp, path)
        return
    previous = workdir / f"{_OWNER}.previous"
    os.replace(path, previous)
    try:
        os.replace(tmp, path)
    except OSError:
        os.replace(previous, path)
        raise


def remove_stale_partials(path: Path) -> list[Path]:
    """Remove the temporary folders that killed writes to ``path`` left beside it; return them.

    Only folders this module made are candidates: ``.<name>.veiltune-XXXX`` whose owner
    process (same host) is gone, and the older ``.<name>.XXXXXXXX`` form holding nothing but
    the partial output.
    """
    removed: list[Path] = []
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return removed
    for candidate in parent.iterdir():
        if candidate.is_dir() and not candidate.is_symlink() and _is_stale(candidate, path.name):
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
    return removed


def _is_stale(folder: Path, name: str) -> bool:
    if folder.name.startswith(f".{name}{_PARTIAL}"):
        return not _owner_alive(folder / _OWNER)
    legacy = _LEGACY_PARTIAL.fullmatch(folder.name)
    if legacy is None or legacy.group("name") != name:
        return False
    return {p.name for p in folder.iterdir()} <= {name}


def _owner_alive(owner_file: Path) -> bool:
    try:
        pid_text, host = owner_file.read_text(encoding="utf-8").split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return False  # no readable owner: the write died before naming itself
    if host != socket.gethostname():
        return True  # another machine's write on a shared file system: not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


PRIVATE = 0o600  # a file of raw data: its owner reads and writes it, nobody else


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and missing parents) readable by its owner only (0700), whatever
    the umask; an existing one is made so."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
