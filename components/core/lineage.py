"""Where an artifact came from: git commit, file hashes, DVC lock entries, tool versions."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Collection
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from components.core.atomic import FOLDER_MARK
from components.core.errors import InputError

TRACKED_TOOLS = (
    "veiltune",
    "torch",
    "transformers",
    "peft",
    "presidio-analyzer",
    "spacy",
    "mlflow",
    "prefect",
    "dvc",
    "great_expectations",
)

# The metrics key under which risk, gate and train record the anonymized corpus they read:
# the gate refuses a risk table of another corpus, train a corpus the gate did not pass.
CORPUS_KEY = "anonymized_corpus_sha256"
# What train actually read (train.corpus and the file's sha256), in metrics/train.json: a
# corpus set in params.yaml for one run and restored before register no longer passes for
# the gated one (the hostile review of 2026-11-27).
TRAIN_CORPUS_KEY = "train_corpus"
TRAINED_CORPUS_KEY = "trained_corpus_sha256"
# The adapter train wrote, evaluate scored and audit attacked (each stage's metrics), and
# register signs into the version's evidence: one adapter, or no registration.
ADAPTER_KEY = "adapter_sha256"
# An adapter is its weights, config and tokenizer: not the card register writes into its
# README.md, nor the marker of the folder it was written in.
_NOT_THE_MODEL = ("README.md", FOLDER_MARK)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_tree(folder: Path, exclude: Collection[str] = ()) -> str:
    """A folder's content hash: each file's relative POSIX path and sha256, in the order of
    those paths, so the same files hash alike wherever the folder lies (the relative names
    in ``exclude`` left out)."""
    files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    files = {name: path for name, path in files.items() if name not in exclude}
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0".encode())
        digest.update(bytes.fromhex(sha256_file(files[name])))
    return digest.hexdigest()


def adapter_sha256(folder: Path) -> str:
    """The content hash of a trained adapter folder (``ADAPTER_KEY``): the same for the
    adapter train wrote and the copy register logs with its model card.

    Raises:
        InputError: there is no adapter folder.
    """
    if not (folder / "adapter_config.json").is_file():
        raise InputError(f"{folder}: no adapter (adapter_config.json); run the train stage")
    return sha256_tree(folder, exclude=_NOT_THE_MODEL)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def git_commit(repo: Path) -> str:
    """The HEAD commit (with ``-dirty`` when the work tree differs), or ``unknown``."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}-dirty" if status else commit


def dvc_lock_outs(lock_path: Path, stage: str) -> dict[str, str]:
    """The md5 of each out of ``stage`` recorded in dvc.lock (empty before the first run)."""
    if not lock_path.is_file():
        return {}
    lock = yaml.safe_load(lock_path.read_text(encoding="utf-8")) or {}
    outs = lock.get("stages", {}).get(stage, {}).get("outs", [])
    return {str(o["path"]): str(o.get("md5", "")) for o in outs}


def params_hash(params: dict[str, Any]) -> str:
    return sha256_text(yaml.safe_dump(params, sort_keys=True))[:16]


def tool_versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED_TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
