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
bundle (its PI scan keeps conversation values out), and the source corpus you pointed
``ingest.corpus_path`` at, which is yours to erase.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass
class PurgeReport:
    """What was erased: paths relative to the checkout, and how many bytes."""

    removed: list[str] = field(default_factory=list)
    n_bytes: int = 0

    def to_record(self) -> dict[str, object]:
        return {"n_removed": len(self.removed), "bytes": self.n_bytes, "removed": self.removed}


def raw_copies(root: Path) -> list[Path]:
    """Every path under ``root`` that ``purge_raw`` would erase, without erasing anything."""
    found = [root / name for name in (*CONVERSATION_FOLDERS, *DVC_DISPOSABLE)]
    found = [path for path in found if path.exists()]
    found.extend(_cached_conversation_objects(root / ".dvc" / "cache"))
    return found


def purge_raw(root: Path) -> PurgeReport:
    """Erase ``raw_copies(root)``; returns what went (paths only, never content)."""
    report = PurgeReport()
    for path in raw_copies(root):
        report.n_bytes += _size(path)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        report.removed.append(path.relative_to(root).as_posix())
    return report


def purge_command(root: Path, confirmed: bool, source_corpus: str | None) -> dict[str, Any]:
    """``veiltune purge-raw``: list every raw copy under ``root``, or erase them when
    ``confirmed``; a corpus of the user's own (``source_corpus``) is never touched, and
    the log says so."""
    if not confirmed:
        listed = [p.relative_to(root).as_posix() for p in raw_copies(root)]
        return {"would_remove": listed, "n": len(listed), "erase_with": "veiltune purge-raw --yes"}
    report = purge_raw(root)
    if source_corpus:
        logging.getLogger(__name__).warning(
            "your source corpus %s was not touched: erase it yourself", source_corpus
        )
    return report.to_record()


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
