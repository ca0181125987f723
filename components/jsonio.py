"""Strict JSONL reading and atomic writing: bad input is named by file and line, and a
failed write never leaves a half-written output behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from components.errors import InputError


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a UTF-8 JSONL file.

    Raises:
        InputError: the file is missing, not UTF-8, or a line is not a JSON object.
    """
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path}:{line_no}: not valid UTF-8 (byte {exc.start}); "
                    "re-encode the file as UTF-8"
                ) from exc
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{line_no}: malformed JSON: {exc.msg}") from exc
            if not isinstance(obj, dict):
                kind = type(obj).__name__
                raise InputError(f"{path}:{line_no}: expected a JSON object, got {kind}")
            yield line_no, obj


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it onto ``path`` only if the block succeeds.

    Works for files and directories alike: whatever the block creates at the yielded path
    replaces ``path`` in one rename.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)) / path.name
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as pretty, key-sorted JSON atomically."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_jsonl_atomic(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Stream ``records`` to ``path`` as JSONL atomically; return how many were written."""
    count = 0
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
