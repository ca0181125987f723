"""A bundle's manifest read with its limits: at most ``MAX_MANIFEST_BYTES`` read (or
inflated) whatever size it declares, nested no deeper than ``MAX_MANIFEST_DEPTH``, then
parsed as JSON with a ``files`` mapping of name to sha256; each refusal is one error
naming the bundle."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

from components.core.errors import InputError

MANIFEST = "manifest.json"
# A real manifest is a few KB (a sha256 per file); 16 MiB would list some 100,000 files. The
# cap is what keeps a zip bomb (784 KB inflating to a 768 MiB manifest) from being inflated.
MAX_MANIFEST_BYTES = 16 * 2**20
# A real manifest is 3 levels deep; json.loads recurses once per level and fails near 1,000.
MAX_MANIFEST_DEPTH = 64
# A JSON string (escapes included), and the brackets left once strings are removed.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def read_manifest_bytes(handle: IO[bytes], declared: int, *, where: str) -> bytes:
    """At most ``MAX_MANIFEST_BYTES``: the declared size is checked before a byte is read
    (or inflated), then never trusted."""
    if declared > MAX_MANIFEST_BYTES:
        raise _oversized_manifest(where, f"{declared} bytes")
    raw = handle.read(MAX_MANIFEST_BYTES + 1)
    if len(raw) > MAX_MANIFEST_BYTES:
        raise _oversized_manifest(where, f"declares {declared} bytes, holds more")
    return raw


def _oversized_manifest(where: str, detail: str) -> InputError:
    return InputError(
        f"{where}: larger than {MAX_MANIFEST_BYTES // 2**20} MiB ({detail}; a real manifest "
        "is a few KB), refused"
    )


def parse_manifest(raw: bytes, bundle: Path) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{bundle}: {MANIFEST} is not UTF-8 text (corrupt)") from exc
    if _nesting_depth(text) > MAX_MANIFEST_DEPTH:
        raise InputError(
            f"{bundle}: {MANIFEST}: nested deeper than {MAX_MANIFEST_DEPTH} levels "
            "(a real manifest is 3 deep), refused"
        )
    try:
        manifest = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InputError(f"{bundle}: {MANIFEST} is not valid JSON (corrupt): {detail}") from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise InputError(f"{bundle}: {MANIFEST} has no 'files' mapping of name to sha256 (corrupt)")
    return dict(manifest)


def _nesting_depth(text: str) -> int:
    """How deep JSON text nests arrays and objects, counted without recursing.

    Strings are removed first, so brackets inside them do not count. On text that is not
    valid JSON the count may be off, but json.loads refuses such text before it gets deep.
    """
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)
