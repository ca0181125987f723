"""The corpus's salt: the key of every salted hash (the PI inventory, residual items, the
bundle's PI scan). Written by ingest into ``data/raw/salt``, readable by its owner only."""

from __future__ import annotations

import secrets
from pathlib import Path

from components.core.errors import InputError


def new_salt() -> str:
    """A fresh random key (128 bits, hex)."""
    return secrets.token_hex(16)


def read_salt(path: Path) -> str:
    """The salt ingest wrote (``data/raw/salt``).

    Raises:
        InputError: the file is missing or empty; run ingest first.
    """
    if not path.is_file():
        raise InputError(f"{path}: missing; run the ingest stage first")
    salt = path.read_text(encoding="utf-8").strip()
    if not salt:
        raise InputError(f"{path}: empty; run the ingest stage again")
    return salt
