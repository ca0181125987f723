"""Strict JSON and JSONL reading, bad input named by file and line; and writing them
atomically (the atomic machinery itself: ``components/core/atomic.py``)."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.atomic import atomic_path
from components.core.errors import InputError

# Deeper JSON is refused: a record of 100,000 nested brackets would otherwise end in a
# RecursionError here or in any code that walks the record.
MAX_JSON_DEPTH = 64
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
# Python's json reads NaN, Infinity and numbers past a float's range (1e999) into floats that
# no JSON writer can write back: a line that could hold one is walked for them.
_NON_FINITE_HINT = re.compile(rb"NaN|Infinity|[0-9][eE]")


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
            obj = _parse_line(raw, path, line_no=line_no)
            if obj is not None:
                yield line_no, obj
            position, line_no = position + len(raw), line_no + 1


def byte_ranges(path: Path, target_bytes: int, *, chunk: int = 1 << 20) -> list[ByteRange]:
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


def utf8_text(raw: bytes, path: Path, *, first_line: int = 1) -> str:
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
            yield line_no, utf8_text(raw, path, first_line=line_no).rstrip("\r\n")


def _parse_line(raw: bytes, path: Path, *, line_no: int) -> dict[str, Any] | None:
    line = utf8_text(raw, path, first_line=line_no)
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


def write_text_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8); ``mode`` sets its permissions."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        if mode is not None:
            tmp.chmod(mode)


def write_json_atomic(path: Path, obj: Any, *, mode: int | None = None) -> None:
    """Write ``obj`` as pretty, key-sorted JSON atomically; ``mode`` sets its permissions."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_text_atomic(path, text, mode=mode)


def write_jsonl_atomic(
    path: Path, records: Iterable[dict[str, Any]], *, mode: int | None = None
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
