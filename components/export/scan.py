"""The bundle's PI scan: every file checked against the PI inventory, by salted hash.

Text is scanned as it is written and as it reads once decoded: HTML entities unescaped, the
strings of JSON/JSONL parsed out (an escaped newline would otherwise glue an ``n`` onto the
next word). PNG images are decoded down to their text chunks; their pixels (charts drawn
from aggregate numbers) are not read. Other binary files (fonts, icons, GIFs of the GX Data
Docs) are skipped with that reason. A zip is scanned member by member.

Also here: masking the residual PI that anonymized text may still hold (``redact_residual``),
for the one part of the bundle that is corpus text, the review sample.
"""

from __future__ import annotations

import html
import io
import json
import re
import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from components.core.errors import InputError
from components.ingest import InventoryEntry, find_leaks, salted_digest

# The tokens components.ingest.pi_inventory.normalized compares (entity_tokens' pattern), kept with
# their offsets so that a found value can be masked in place.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
_JSON_SUFFIXES = (".json", ".jsonl", ".ipynb")
HTML_SUFFIXES = (".html", ".htm", ".xml", ".svg")
RESIDUAL_MARK = "[RESIDUAL_{}]"


@dataclass(frozen=True)
class BundleScan:
    """What the scan read, what it skipped and why, and the leaks it found (types, no values)."""

    scanned: tuple[str, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    leaks: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.leaks

    def to_record(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "n_scanned": len(self.scanned),
            "skipped": dict(sorted(self.skipped.items())),
            "leaks_by_file": {name: dict(types) for name, types in sorted(self.leaks.items())},
        }

    def describe_leaks(self) -> str:
        return describe_leaks(self.leaks)


def describe_leaks(leaks: Mapping[str, Mapping[str, int]]) -> str:
    """``file: 2 PERSON_NAME, 1 PHONE_NUMBER; ...``: where and what, never a value."""
    return "; ".join(
        f"{name}: " + ", ".join(f"{n} {t}" for t, n in sorted(types.items()))
        for name, types in sorted(leaks.items())
    )


def scan_bundle(
    bundle: Path, entries: Iterable[InventoryEntry], *, salt: str, min_chars: int
) -> BundleScan:
    """Scan every file of a bundle folder or zip for specific inventory values.

    Args:
        entries: the PI inventory; only its specific values of ``min_chars`` or more count,
            as in the leakage audit.
        salt: the inventory's salt (``data/raw/salt``).
    """
    return scan_files(_bundle_files(bundle), entries, salt=salt, min_chars=min_chars)


def scan_files(
    files: Iterable[tuple[str, bytes]],
    entries: Iterable[InventoryEntry],
    *,
    salt: str,
    min_chars: int,
) -> BundleScan:
    """Scan (name, content) pairs as ``scan_bundle`` scans a bundle's files."""
    inventory = list(entries)
    scanned: list[str] = []
    skipped: dict[str, str] = {}
    leaks: dict[str, dict[str, int]] = {}
    for name, data in (item for pair in files for item in _expand(*pair)):
        texts, reason = text_views(name, data)
        if reason is not None:
            skipped[name] = reason
        if not texts:
            continue
        scanned.append(name)
        found = {
            e.digest: e
            for text in texts
            for e in find_leaks(text, inventory, salt=salt, min_chars=min_chars)
        }
        if found:
            leaks[name] = dict(Counter(e.entity_type for e in found.values()))
    return BundleScan(tuple(scanned), skipped, leaks)


def _bundle_files(bundle: Path) -> Iterator[tuple[str, bytes]]:
    if bundle.is_dir():
        for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
            yield path.relative_to(bundle).as_posix(), path.read_bytes()
    elif bundle.is_file():
        data = bundle.read_bytes()
        if not _is_zip(data):
            yield bundle.name, data
            return
        # The bundle's own zip: its members are the bundle's files, named as in the folder.
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for member in archive.namelist():
                if not member.endswith("/"):
                    yield member, archive.read(member)
    else:
        raise InputError(f"{bundle}: no such bundle to scan")


def _expand(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    """The file itself, or each member of a zip inside the bundle (``inner.zip!member``)."""
    if _is_zip(data):
        yield from _zip_members(data, f"{name}!")
    else:
        yield name, data


def _is_zip(data: bytes) -> bool:
    return zipfile.is_zipfile(io.BytesIO(data))


def _zip_members(data: bytes, prefix: str) -> Iterator[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for member in archive.namelist():
            if not member.endswith("/"):
                yield from _expand(prefix + member, archive.read(member))


def text_views(name: str, data: bytes) -> tuple[list[str], str | None]:
    """The texts to scan in one file, and why part or all of it is not read (None: all is).

    A file decodes as text when it is UTF-8 with no NUL byte.
    """
    if data.startswith(PNG_SIGNATURE):
        return png_text_chunks(data), "PNG image: text chunks scanned, pixels not read"
    if b"\x00" in data:
        return [], f"binary file ({_kind(name)}): no text to scan"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [], f"binary file ({_kind(name)}): not UTF-8 text"
    suffix = PurePosixPath(name).suffix.lower()
    views = [text]
    if suffix in HTML_SUFFIXES or "&" in text:
        views.append(html.unescape(text))
    if suffix in _JSON_SUFFIXES:
        views.append("\n".join(_json_strings(text)))
    return views, None


def _kind(name: str) -> str:
    return PurePosixPath(name).suffix.lower().lstrip(".") or "no extension"


def _json_strings(text: str) -> Iterator[str]:
    """Every key and string value of a JSON document or of each JSONL line that parses."""
    try:
        documents = [json.loads(text)]
    except json.JSONDecodeError:
        documents = []
        for line in text.splitlines():
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    for document in documents:
        yield from _strings(document)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def png_text_chunks(data: bytes) -> list[str]:
    """The text of a PNG's tEXt, zTXt and iTXt chunks (keyword and value)."""
    texts = []
    position = len(PNG_SIGNATURE)
    while position + 8 <= len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        position += 12 + length  # length, type, body, CRC
        if kind in _PNG_TEXT_CHUNKS:
            texts.append(_chunk_text(kind, body))
    return texts


def _chunk_text(kind: bytes, body: bytes) -> str:
    keyword, _, rest = body.partition(b"\x00")
    if kind == b"zTXt":
        rest = _inflate(rest[1:])  # a compression-method byte, then zlib data
    elif kind == b"iTXt":
        compressed, rest = rest[:1] == b"\x01", rest[2:]
        _language, _, rest = rest.partition(b"\x00")
        _translated, _, rest = rest.partition(b"\x00")
        rest = _inflate(rest) if compressed else rest
    return keyword.decode("latin-1") + "\n" + rest.decode("utf-8", errors="replace")


def _inflate(data: bytes) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error:
        return data  # scanned as it is: a corrupt chunk is no reason to skip it


def redact_residual(
    text: str, entries: Iterable[InventoryEntry], *, salt: str, min_chars: int
) -> tuple[str, Counter[str]]:
    """``text`` with each value of ``entries`` (of ``min_chars`` or more) in it replaced by
    ``[RESIDUAL_<TYPE>]``; the caller picks the entries (specific ones, or a conversation's
    own, common words included).

    Values are matched as ``find_leaks`` matches them (lowercase word tokens, salted hash);
    overlapping matches merge into one mask named for the longest. Returns the text and the
    number of masks per type.
    """
    by_digest = {e.digest: e for e in entries if e.n_chars >= min_chars}
    tokens = list(_TOKEN.finditer(text))
    if not by_digest or not tokens:
        return text, Counter()
    longest = max(e.n_tokens for e in by_digest.values())
    matches: list[tuple[int, int, str]] = []  # (first token, last token + 1, type)
    for n in range(longest, 0, -1):
        for i in range(len(tokens) - n + 1):
            value = " ".join(t.group().lower() for t in tokens[i : i + n])
            entry = by_digest.get(salted_digest(value, salt))
            if entry is not None:
                matches.append((i, i + n, entry.entity_type))
    return _apply_masks(text, tokens, ranges=_merge(matches))


def _merge(matches: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping token ranges joined; the type of the longest range in each group."""
    merged: list[tuple[int, int, str, int]] = []  # start, end, type, length of that match
    for start, end, kind in sorted(matches):
        if merged and start < merged[-1][1]:
            m_start, m_end, m_kind, m_len = merged[-1]
            keep = (kind, end - start) if end - start > m_len else (m_kind, m_len)
            merged[-1] = (m_start, max(m_end, end), *keep)
        else:
            merged.append((start, end, kind, end - start))
    return [(start, end, kind) for start, end, kind, _ in merged]


def _apply_masks(
    text: str, tokens: list[re.Match[str]], *, ranges: list[tuple[int, int, str]]
) -> tuple[str, Counter[str]]:
    parts, counts, position = [], Counter[str](), 0
    for first, last, kind in ranges:
        parts.append(text[position : tokens[first].start()])
        parts.append(RESIDUAL_MARK.format(kind))
        position = tokens[last - 1].end()
        counts[kind] += 1
    parts.append(text[position:])
    return "".join(parts), counts


def redact_record(
    record: Any, entries: list[InventoryEntry], *, salt: str, min_chars: int, counts: Counter[str]
) -> Any:
    """A JSON value with ``redact_residual`` applied to every string in it (keys kept)."""
    if isinstance(record, str):
        text, found = redact_residual(record, entries, salt=salt, min_chars=min_chars)
        counts.update(found)
        return text
    if isinstance(record, dict):
        return {
            k: redact_record(v, entries, salt=salt, min_chars=min_chars, counts=counts)
            for k, v in record.items()
        }
    if isinstance(record, list):
        return [
            redact_record(v, entries, salt=salt, min_chars=min_chars, counts=counts) for v in record
        ]
    return record
