"""Where a bundle zip's bytes lie: each member in turn from the first byte (its local
header, its data, its data descriptor if it has one), then the central directory, then the
end records and the archive comment, with nothing before, between or after them.

zipfile reads a zip from its end, through the central directory, so it reads an archive
with bytes prepended (``cat forged.zip bundle.zip > x.zip``), slipped between members or
appended as if they were not there; a reader that streams the zip from its first byte reads
them first, as members: the forged page an auditor would see. No exporter writes such bytes,
so a bundle zip whose layout is not exactly this is refused.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

from components.core.errors import InputError

_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # APPNOTE 4.3.7: 30 bytes, then name and extra
_LOCAL_SIGNATURE = b"PK\x03\x04"
_DESCRIPTOR_SIGNATURE = b"PK\x07\x08"  # optional before a data descriptor (4.3.9.3)
_DESCRIPTOR_FLAG = 0x08  # sizes and CRC follow the data, in a data descriptor
_ZIP64_EXTRA = 0x0001  # with it, a data descriptor's sizes are 8 bytes each (4.3.9.2)
_END = struct.Struct("<4s4H2IH")  # the end of central directory record (4.3.16): 22 bytes
_END_SIGNATURE = b"PK\x05\x06"
_END64_LOCATOR = struct.Struct("<4sIQI")  # 20 bytes just before the end record
_END64_LOCATOR_SIGNATURE = b"PK\x06\x07"
_END64 = struct.Struct("<4sQ2H2I4Q")  # the zip64 end record zipfile reads: 56 bytes
_END64_SIGNATURE = b"PK\x06\x06"
_MAX_COMMENT = 0xFFFF
_WHY = "a reader that streams the zip reads them as members; no exporter writes them"


@dataclass(frozen=True)
class _Directory:
    """Where the central directory starts, the start its records claim, and how many bytes
    follow the end record and its comment."""

    start: int
    recorded_start: int
    trailing: int


def layout_problem(handle: BinaryIO, infos: Sequence[zipfile.ZipInfo]) -> str | None:
    """Why the zip in ``handle`` (whose members zipfile listed as ``infos``) is not laid out
    as one archive from its first byte to its last; None when it is.

    Raises:
        InputError: a local header or the end records cannot be read where the central
            directory says they are (corrupt).
    """
    directory = _directory(handle)
    position, previous = 0, None
    for info in sorted(infos, key=lambda i: i.header_offset):
        if info.header_offset != position:
            return _misplaced(info, previous, gap=info.header_offset - position)
        position, previous = _member_end(handle, info), info
    if position < directory.start:
        gap = directory.start - position
        return f"{gap} bytes between the last member and the central directory (refused: {_WHY})"
    if position > directory.start:
        return "the members overlap the central directory (refused)"
    if directory.recorded_start != directory.start:
        return (
            f"its central directory records its start at byte {directory.recorded_start} but "
            f"lies at byte {directory.start}: bytes were added before the archive (refused)"
        )
    if directory.trailing > 0:
        return f"{directory.trailing} bytes after its end (refused: no exporter writes them)"
    if directory.trailing < 0:
        return "its comment runs past the end of the file (refused)"
    return None


def _misplaced(info: zipfile.ZipInfo, previous: zipfile.ZipInfo | None, *, gap: int) -> str:
    if previous is None:
        return f"{gap} bytes before the first member (refused: {_WHY})"
    if gap > 0:
        return (
            f"{gap} bytes between members {previous.filename!r} and {info.filename!r} "
            f"(refused: {_WHY})"
        )
    return f"members {previous.filename!r} and {info.filename!r} overlap (refused)"


def _member_end(handle: BinaryIO, info: zipfile.ZipInfo) -> int:
    """The byte after a member: its local header, name, extra field, compressed data and,
    when its header's flags say so, its data descriptor."""
    handle.seek(info.header_offset)
    header = _read_exactly(handle, _LOCAL_HEADER.size, what=f"{info.filename}: local header")
    fields = _LOCAL_HEADER.unpack(header)
    signature, flags, name_length, extra_length = fields[0], fields[2], fields[9], fields[10]
    if signature != _LOCAL_SIGNATURE:
        raise InputError(f"{info.filename}: no local header at byte {info.header_offset} (corrupt)")
    handle.seek(name_length, 1)
    extra = _read_exactly(handle, extra_length, what=f"{info.filename}: extra field")
    end = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    end += info.compress_size
    if flags & _DESCRIPTOR_FLAG:
        handle.seek(end)
        marked = handle.read(4) == _DESCRIPTOR_SIGNATURE
        end += 4 * marked + (20 if _has_zip64(extra) else 12)  # CRC, then the two sizes
    return end


def _has_zip64(extra: bytes) -> bool:
    """Whether an extra field holds a zip64 record (a list of id, length, data)."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        if kind == _ZIP64_EXTRA:
            return True
        at += 4 + length
    return False


def _directory(handle: BinaryIO) -> _Directory:
    """The central directory's place from the end records, found as zipfile finds them:
    the last end signature within the comment's reach of the end of the file."""
    size = handle.seek(0, 2)
    tail_start = max(0, size - _END.size - _MAX_COMMENT)
    handle.seek(tail_start)
    tail = handle.read()
    found = tail.rfind(_END_SIGNATURE)
    if found < 0 or found + _END.size > len(tail):
        raise InputError("no end of central directory record (corrupt)")
    end_at = tail_start + found
    fields = _END.unpack_from(tail, found)
    directory_size, recorded_start, comment_length = fields[5], fields[6], fields[7]
    directory_end = end_at
    locator_at = end_at - _END64_LOCATOR.size
    if locator_at >= 0:
        handle.seek(locator_at)
        locator = handle.read(_END64_LOCATOR.size)
        if locator[:4] == _END64_LOCATOR_SIGNATURE:
            directory_end = locator_at - _END64.size
            handle.seek(max(directory_end, 0))
            record = _read_exactly(handle, _END64.size, what="zip64 end of central directory")
            zip64 = _END64.unpack(record)
            if directory_end < 0 or zip64[0] != _END64_SIGNATURE:
                raise InputError("no zip64 end of central directory record (corrupt)")
            directory_size, recorded_start = zip64[8], zip64[9]
    trailing = size - (end_at + _END.size + comment_length)
    return _Directory(directory_end - directory_size, recorded_start, trailing)


def _read_exactly(handle: BinaryIO, length: int, *, what: str) -> bytes:
    data = handle.read(length)
    if len(data) != length:
        raise InputError(f"{what}: cut short (corrupt)")
    return data
