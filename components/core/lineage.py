"""Where an artifact came from: git commit, file hashes, DVC lock entries, tool versions."""

from __future__ import annotations

import hashlib
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

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


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_tree(folder: Path) -> str:
    """A folder's content hash: each file's relative POSIX path and sha256, in the order of
    those paths, so the same files hash alike wherever the folder lies."""
    files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0".encode())
        digest.update(bytes.fromhex(sha256_file(files[name])))
    return digest.hexdigest()


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
