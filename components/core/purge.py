"""Erase every copy of the raw corpus and of conversation text under a checkout: for an
erasure request, or before handing a machine on.

What goes:
- the folders that hold conversation text or what unlocks it: ``data/raw`` (corpus,
  canaries, the salt that keys every hash, the mapping of your record ids to their
  pseudonyms), ``data/pi_inventory``, ``data/anonymized`` and ``data/review`` (anonymized
  text still holds what anonymization missed);
- DVC's run cache (``.dvc/cache/runs``), whose entries carry copies of stage outputs,
  uncached ones included, and DVC's experiment workspaces (``.dvc/tmp/exps``);
- every object of DVC's cache that is conversation text, a salt, a PI inventory, a list of
  canaries or an id mapping, recognised by its content: copies from earlier runs,
  experiments or versions of veiltune that cached raw outputs are found wherever they came
  from.

What stays: metrics, risk tables and items (ids, scores and keyed hashes, which nothing can
test a guess against once the salt is gone), models and the MLflow store, the compliance
bundle (its PI scan keeps conversation values out), the source corpus you pointed
``ingest.corpus_path`` at, which is yours to erase (even inside ``data/raw``), and the
producer's signing key (``.veiltune/keys``; one an earlier release left in ``data/raw`` is
moved there first, and any other private key file found there is kept and listed).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.core.signing import move_legacy_key

# The workspace folders that hold conversation text, or the key to its hashes.
CONVERSATION_FOLDERS = ("data/raw", "data/pi_inventory", "data/anonymized", "data/review")
DVC_DISPOSABLE = (".dvc/cache/runs", ".dvc/tmp/exps")
# Marks a page that shows conversation text (the review page), so that purge finds its
# copies (in DVC's cache, say) by their content.
CONVERSATION_TEXT_MARK = '<meta name="veiltune-content" content="conversation-text">'
_SALT = re.compile(rb"[0-9a-f]{32}\s*")
_FIRST_LINE_LIMIT = 1 << 20  # a corpus record's first line is read whole up to 1 MiB
_TEXT_KEYS = frozenset({"turns", "text"})  # a conversation record (raw, anonymized, review)
_INVENTORY_KEYS = frozenset({"digest", "entity_type", "conversation_id"})
_CANARY_KEYS = frozenset({"secret", "entity_type", "conversation_ids"})
_ID_MAPPING_KEYS = frozenset({"id", "pseudonym"})  # a user's record id and its pseudonym
_PRIVATE_KEY = b"-----BEGIN PRIVATE KEY-----"


@dataclass
class PurgeReport:
    """What was erased, and what was kept inside the erased folders: paths relative to the
    checkout, and how many bytes went."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    n_bytes: int = 0

    def to_record(self) -> dict[str, object]:
        return {
            "n_removed": len(self.removed),
            "bytes": self.n_bytes,
            "removed": self.removed,
            "kept": self.kept,
        }


def raw_copies(root: Path, keep: Collection[Path] = ()) -> list[Path]:
    """Every path under ``root`` that ``purge_raw`` would erase, without erasing anything:
    whole folders, or, for a folder holding a path of ``keep``, everything in it but that."""
    found = [root / name for name in (*CONVERSATION_FOLDERS, *DVC_DISPOSABLE)]
    kept = {path.resolve() for path in keep}
    erased = [p for path in found if path.exists() for p in _around(path, kept)]
    erased.extend(_cached_conversation_objects(root / ".dvc" / "cache"))
    return erased


def kept_files(root: Path, source_corpus: Path | None) -> list[Path]:
    """What purge leaves inside the folders it erases, because veiltune did not make it:
    the user's source corpus, and any private key file (the producer's signing key)."""
    keep = [source_corpus] if source_corpus is not None and source_corpus.is_file() else []
    for name in CONVERSATION_FOLDERS:
        folder = root / name
        if folder.is_dir() and not folder.is_symlink():
            keep.extend(p for p in folder.rglob("*") if _is_private_key(p))
    return keep


def purge_raw(root: Path, keep: Collection[Path] = ()) -> PurgeReport:
    """Erase ``raw_copies(root, keep)``; returns what went (paths only, never content)."""
    report = PurgeReport(kept=[_relative(p, root) for p in keep])
    for path in raw_copies(root, keep):
        report.n_bytes += _size(path)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        report.removed.append(path.relative_to(root).as_posix())
    return report


def purge_command(
    root: Path, confirmed: bool, *, source_corpus: str | None, signing_key: Path | None = None
) -> dict[str, Any]:
    """``veiltune purge-raw``: list every raw copy under ``root``, or erase them when
    ``confirmed``. A corpus of the user's own (``source_corpus``) is never touched, and the
    log says so; the signing key (``signing_key``: where it belongs) is moved out of
    ``data/raw`` first when an earlier release left it there."""
    if signing_key is not None:
        move_legacy_key(signing_key, root)
    source = root / source_corpus if source_corpus else None
    keep = kept_files(root, source)
    if not confirmed:
        listed = [p.relative_to(root).as_posix() for p in raw_copies(root, keep)]
        return {
            "would_remove": listed,
            "n": len(listed),
            "would_keep": [_relative(p, root) for p in keep],
            "erase_with": "veiltune purge-raw --yes",
        }
    report = purge_raw(root, keep)
    if source_corpus:
        logging.getLogger(__name__).warning(
            "your source corpus %s was not touched: erase it yourself", source_corpus
        )
    return report.to_record()


def _around(path: Path, kept: set[Path]) -> Iterator[Path]:
    """``path`` whole, or, when it holds a kept path, each of its entries but the kept."""
    resolved = path.resolve()
    if not any(k == resolved or k.is_relative_to(resolved) for k in kept):
        yield path
        return
    if path.is_dir() and not path.is_symlink() and resolved not in kept:
        for entry in sorted(path.iterdir()):
            yield from _around(entry, kept)


def _is_private_key(path: Path) -> bool:
    if not path.is_file() or path.is_symlink():
        return False
    with path.open("rb") as handle:
        return handle.read(len(_PRIVATE_KEY)) == _PRIVATE_KEY


def _relative(path: Path, root: Path) -> str:
    resolved, base = path.resolve(), root.resolve()
    return resolved.relative_to(base).as_posix() if resolved.is_relative_to(base) else str(path)


def _cached_conversation_objects(cache: Path) -> Iterator[Path]:
    if not cache.is_dir():
        return
    runs = cache / "runs"
    for path in cache.rglob("*"):
        cached = path.is_file() and not path.is_symlink() and runs not in path.parents
        if cached and is_conversation_data(path):
            yield path


def is_conversation_data(path: Path) -> bool:
    """Whether a file's content is veiltune's conversation data: a JSONL record of
    conversation text (raw, anonymized or a review sample), a PI inventory, canaries, an id
    mapping, a page showing conversation text, or a salt."""
    with path.open("rb") as handle:
        head = handle.readline(_FIRST_LINE_LIMIT)
    if _SALT.fullmatch(head) and path.stat().st_size == len(head):
        return True
    if head.lstrip().startswith(b"<") or b"<!DOCTYPE" in head[:64]:
        with path.open("rb") as handle:
            return CONVERSATION_TEXT_MARK.encode() in handle.read(4096)
    try:
        record = json.loads(head)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return False
    if not isinstance(record, dict):
        return False
    keys = set(record)
    return bool(keys & _TEXT_KEYS and "id" in keys) or any(
        required <= keys for required in (_INVENTORY_KEYS, _CANARY_KEYS, _ID_MAPPING_KEYS)
    )


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
