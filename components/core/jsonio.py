"""Strict JSONL reading and atomic writing: bad input is named by file and line, and a
failed write never leaves a half-written output behind, nor touches anything but its own
temporary folder."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.errors import InputError
from components.core.workspace import refuse_protected

# Deeper JSON is refused: a record of 100,000 nested brackets would otherwise end in a
# RecursionError here or in any code that walks the record.
MAX_JSON_DEPTH = 64
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
# Python's json reads NaN, Infinity and numbers past a float's range (1e999) into floats that
# no JSON writer can write back: a line that could hold one is walked for them.
_NON_FINITE_HINT = re.compile(rb"NaN|Infinity|[0-9][eE]")
# Each write works in a hidden sibling folder ``.<name>.veiltune-XXXX/`` holding the new
# output and an owner file (pid and host); a folder whose owner is dead is debris of a
# killed write and is removed on the next write to the same target.
_PARTIAL = ".veiltune-"
_OWNER = ".veiltune-owner"
_LEGACY_PARTIAL = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}")
# Left in every folder veiltune writes whole, holding its kind: only such a folder (or an
# empty one) is ever replaced by a later write.
FOLDER_MARK = ".veiltune-output"


@dataclass(frozen=True)
class ByteRange:
    """Whole lines of a file: bytes ``[start, end)``, the first of them line ``first_line``."""

    start: int
    end: int
    first_line: int


def iter_jsonl(
    path: Path, byte_range: ByteRange | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a UTF-8 JSONL file, or of the
    lines in ``byte_range`` (numbered as in the whole file).

    Raises:
        InputError: the file is missing, not UTF-8, or a line is not a JSON object, nests
            deeper than ``MAX_JSON_DEPTH`` or holds a lone surrogate (no UTF-8 form).
    """
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    part = byte_range or ByteRange(0, path.stat().st_size, 1)
    with path.open("rb") as handle:
        handle.seek(part.start)
        position, line_no = part.start, part.first_line
        while position < part.end and (raw := handle.readline()):
            obj = _parse_line(raw, path, line_no)
            if obj is not None:
                yield line_no, obj
            position, line_no = position + len(raw), line_no + 1


def byte_ranges(path: Path, target_bytes: int, chunk: int = 1 << 20) -> list[ByteRange]:
    """Split a file into ranges of whole lines, each the fewest lines of at least
    ``target_bytes`` (the last may be shorter), with the line each starts at, in one
    streamed read (``chunk`` bytes in memory, never the file)."""
    size = path.stat().st_size
    ranges: list[ByteRange] = []
    start, first_line, lines, position = 0, 1, 0, 0
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            cut = max(start + target_bytes - 1 - position, 0)  # a range's last byte
            while cut < len(block):
                newline = block.find(b"\n", cut)
                if newline < 0:
                    break
                end = position + newline + 1
                lines_before = lines + block.count(b"\n", 0, newline + 1)
                ranges.append(ByteRange(start, end, first_line))
                start, first_line = end, 1 + lines_before
                cut = newline + target_bytes
            lines += block.count(b"\n")
            position += len(block)
    if start < size:
        ranges.append(ByteRange(start, size, first_line))
    return ranges


def jsonl_by_key(path: Path, key: str) -> dict[str, list[dict[str, Any]]]:
    """The objects of a JSONL file grouped by the value of ``key``, each group in file order
    (the anonymize stage's spans records, by ``conversation_id``)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for _, obj in iter_jsonl(path):
        grouped.setdefault(str(obj[key]), []).append(obj)
    return grouped


def utf8_text(raw: bytes, path: Path, first_line: int = 1) -> str:
    """``raw``, lines of ``path`` from ``first_line`` on, decoded as UTF-8.

    Raises:
        InputError: naming the file, the line and the byte within it that is not UTF-8.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + raw.count(b"\n", 0, exc.start)
        byte = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1)
        raise InputError(
            f"{path}:{line}: not valid UTF-8 (byte {byte}); re-encode the file as UTF-8"
        ) from exc


def iter_text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, line without its newline) for each line of a UTF-8 text file,
    read as it goes; a line that is not UTF-8 is an ``InputError`` naming it."""
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            yield line_no, utf8_text(raw, path, line_no).rstrip("\r\n")


def _parse_line(raw: bytes, path: Path, line_no: int) -> dict[str, Any] | None:
    line = utf8_text(raw, path, line_no)
    where = f"{path}:{line_no}"
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: malformed JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise InputError(f"{where}: JSON nested too deeply (at most {MAX_JSON_DEPTH})") from exc
    except ValueError as exc:  # an integer past Python's int-string conversion limit
        raise InputError(_long_number_message(line, where)) from exc
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    # Depth is at most the count of opening brackets: only a line with many is walked.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and json_depth(obj) > MAX_JSON_DEPTH:
        raise InputError(f"{where}: JSON nested too deeply (at most {MAX_JSON_DEPTH})")
    if _SURROGATE_ESCAPE.search(raw):
        _refuse_lone_surrogates(obj, where)
    if _NON_FINITE_HINT.search(raw):
        _refuse_non_finite(obj, where)
    return obj


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed JSON value (a scalar is 0), without
    recursing, so any depth can be measured."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth + 1)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def json_leaves(value: Any) -> Iterator[tuple[str, Any]]:
    """(key path, value) of every scalar in a parsed JSON value and of every object key (under
    its object's path), in document order, without recursing: ``labels.crm[0].pin``, and
    ``""`` for the record itself."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict):
            for name in item:
                yield key, name
            children = [(f"{key}.{name}" if key else str(name), v) for name, v in item.items()]
        elif isinstance(item, list):
            children = [(f"{key}[{i}]", v) for i, v in enumerate(item)]
        else:
            yield key, item
            continue
        stack.extend(reversed(children))


def _refuse_lone_surrogates(value: Any, where: str) -> None:
    """A ``\\ud800`` escape parses into a string that no UTF-8 writer can write back."""
    for key, leaf in json_leaves(value):
        if not isinstance(leaf, str):
            continue
        try:
            leaf.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                f"{where}: key '{key or 'record'}' holds a lone UTF-16 surrogate "
                f"(\\u{ord(leaf[exc.start]):04x}), which is not text; fix the escape"
            ) from exc


def _refuse_non_finite(value: Any, where: str) -> None:
    """NaN, Infinity and out-of-range numbers (``1e999``) are no JSON numbers: written back,
    they would make invalid JSON."""
    for key, leaf in json_leaves(value):
        if isinstance(leaf, float) and not math.isfinite(leaf):
            raise InputError(
                f"{where}: key '{key or 'record'}' is not a finite number (NaN, Infinity or "
                "out of a float's range); write a number or null"
            )


class _LongInteger:
    """Where an integer too long for Python stood, and its length (see _long_number_message)."""

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))


def _long_number_message(line: str, where: str) -> str:
    """The error for a line holding an integer past Python's int-string conversion limit,
    naming its key: the line is parsed again with such integers kept aside."""
    limit = sys.get_int_max_str_digits()

    def integer(text: str) -> int | _LongInteger:
        return int(text) if len(text.lstrip("-")) <= limit else _LongInteger(text)

    try:
        leaves = list(json_leaves(json.loads(line, parse_int=integer)))
    except (ValueError, RecursionError):
        leaves = []  # not for a long integer after all: the message names the line only
    for key, number in leaves:
        if isinstance(number, _LongInteger):
            return (
                f"{where}: key '{key or 'record'}' is a number of {number.digits} digits "
                f"(at most {limit}); write it as a string"
            )
    return f"{where}: a number too long to read (at most {limit} digits); write it as a string"


def check_output_file(
    path: Path, inputs: Iterable[Path | None] = (), create_parent: bool = False, raw: bool = False
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


def check_output_folder(path: Path, kind: str, raw: bool = False) -> None:
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
    path: Path, kind: str, private: bool = False, raw: bool = False
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
        _move_into_place(tmp, path, workdir)
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


def _move_into_place(tmp: Path, path: Path, workdir: Path) -> None:
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


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8); ``mode`` sets its permissions."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        if mode is not None:
            tmp.chmod(mode)


def write_json_atomic(path: Path, obj: Any, mode: int | None = None) -> None:
    """Write ``obj`` as pretty, key-sorted JSON atomically; ``mode`` sets its permissions."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_text_atomic(path, text, mode)


def write_jsonl_atomic(
    path: Path, records: Iterable[dict[str, Any]], mode: int | None = None
) -> int:
    """Stream ``records`` to ``path`` as JSONL atomically; return how many were written.
    ``mode`` sets the file's permissions before any record is written."""
    count = 0
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as handle:
        if mode is not None:
            tmp.chmod(mode)
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
