"""What no command may write over, whatever output path it is given.

A hostile review of 2026-11-27 pointed commands' outputs at the checkout's own files:
``detect --output data/raw/signing_key.pem`` replaced the producer's key, ``review export
--output params.yaml`` overwrote the params, ``utility-pack .git`` replaced the repository.
Every output a user names is checked here before any work starts (``check_output_file``,
``check_output_folder`` in :mod:`components.core.atomic`):

- the checkout's own files (``params.yaml``, ``dvc.yaml``, ``dvc.lock``) and anything in
  ``.git``, ``.dvc`` or the keys folder (``paths.KEYS_DIR``);
- the producer's signing key wherever it lies (``$VEILTUNE_SIGNING_KEY``, and any existing
  PEM file: no veiltune output is one);
- ``data/raw``: its top level is ingest's alone (corpus, canaries, salt); a command whose
  output is raw text (``grades export``, ``utility-pack``) writes into a folder of its own
  there, and every other command writes nowhere under it.

Folders are replaced only when veiltune wrote them: ``atomic.atomic_folder``.
"""

from __future__ import annotations

import os
from pathlib import Path

from components.core import paths
from components.core.errors import InputError

CHECKOUT_FILES = (paths.PARAMS, Path("dvc.yaml"), paths.DVC_LOCK)
CHECKOUT_FOLDERS = (Path(".git"), Path(".dvc"), paths.KEYS_DIR)
KEY_ENV = "VEILTUNE_SIGNING_KEY"  # the key's path when set (components.core.signing)
_PEM = b"-----BEGIN"


def refuse_protected(path: Path, raw: bool = False, *, folder: bool = False) -> None:
    """Refuse ``path`` as an output when it is, or lies in, what no command may replace.

    Args:
        path: the output.
        raw: the output holds raw text and may lie under ``data/raw``, in a folder of its
            own (never its top level, which is ingest's).
        folder: the output is a folder the command replaces whole (a folder of its own).

    Raises:
        InputError: naming the path and why it is refused.
    """
    resolved = path.resolve()
    for own in CHECKOUT_FILES:
        if resolved == own.resolve():
            raise InputError(f"{path}: is the checkout's {own}; refusing to write over it")
    for own_folder in CHECKOUT_FOLDERS:
        if resolved.is_relative_to(own_folder.resolve()):
            raise InputError(f"{path}: lies in {own_folder}/; refusing to write there")
    key = os.environ.get(KEY_ENV)
    if (key and resolved == Path(key).resolve()) or _is_pem(path):
        raise InputError(f"{path}: is a private key file; refusing to write over it")
    _refuse_raw(path, resolved, raw=raw, folder=folder)


def _refuse_raw(path: Path, resolved: Path, *, raw: bool, folder: bool) -> None:
    raw_dir = paths.RAW_DIR.resolve()
    if not resolved.is_relative_to(raw_dir):
        return
    if not raw:
        raise InputError(
            f"{path}: lies in {paths.RAW_DIR}/, which holds the raw data; write elsewhere"
        )
    if resolved == raw_dir or (resolved.parent == raw_dir and not folder):
        raise InputError(
            f"{path}: the top level of {paths.RAW_DIR}/ is ingest's (corpus, canaries, "
            f"salt); write into a folder of its own, e.g. {paths.RAW_DIR}/grading/"
        )


def _is_pem(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as handle:
        return handle.read(len(_PEM)) == _PEM
