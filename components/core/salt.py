"""The corpus's salt: the key of every salted hash (the PI inventory, residual items, the
bundle's PI scan) and the surrogates' seed. Written by ingest into ``data/raw/salt``,
readable by its owner only.

Each ingest draws a fresh salt, unless ``VEILTUNE_SALT_FILE`` names a team's salt: then every
worker that ingests the same corpus writes the same bytes, so DVC's run cache on the team's
remote hands the next worker what the first computed (docs/team.md).
"""

from __future__ import annotations

import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from components.core.errors import InputError

SALT_FILE_ENV = "VEILTUNE_SALT_FILE"
_MIN_CHARS = 32  # 128 bits in hex, as new_salt draws


def new_salt() -> str:
    """A fresh random key (128 bits, hex)."""
    return secrets.token_hex(16)


def ingest_salt(environ: Mapping[str, str]) -> str:
    """The salt an ingest writes: the team's (``VEILTUNE_SALT_FILE``) when set, else fresh.

    Raises:
        InputError: the team's file is missing, readable by others than its owner, or holds
            fewer than 32 characters (the message names the file, never its content).
    """
    named = environ.get(SALT_FILE_ENV, "").strip()
    return read_team_salt(Path(named).expanduser()) if named else new_salt()


def read_team_salt(path: Path) -> str:
    """The team's salt in ``path``: a secret like a password, so owner-only as SSH keys are."""
    where = f"{SALT_FILE_ENV}={path}"
    make = f"(`umask 077; openssl rand -hex 16 > {path}` makes one)"
    if not path.is_file():
        raise InputError(f"{where}: no such file {make}")
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        raise InputError(f"{where}: readable by others than its owner; `chmod 600 {path}`")
    salt = path.read_text(encoding="utf-8").strip()
    if len(salt) < _MIN_CHARS or any(c.isspace() for c in salt):
        raise InputError(
            f"{where}: expected one key of at least {_MIN_CHARS} characters on one line {make}"
        )
    return salt


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
