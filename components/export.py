"""The compliance bundle: the files an auditor needs, each with its sha256 in a manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from components.errors import InputError
from components.jsonio import atomic_path
from components.lineage import sha256_file, sha256_text

MANIFEST = "manifest.json"


def build_bundle(
    files: dict[str, Path], lineage: dict[str, Any], bundle_dir: Path, make_zip: bool
) -> dict[str, Any]:
    """Copy ``files`` (bundle name → source) into ``bundle_dir`` with a manifest; optionally zip.

    The manifest records each file's sha256 and its own hash (of the manifest without it).
    """
    missing = [str(src) for src in files.values() if not src.is_file()]
    if missing:
        raise InputError(f"export: missing input file(s): {', '.join(missing)}")
    with atomic_path(bundle_dir) as tmp:
        tmp.mkdir()
        for name, source in sorted(files.items()):
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        manifest = {
            **lineage,
            "files": {name: sha256_file(tmp / name) for name in sorted(files)},
        }
        manifest["manifest_sha256"] = sha256_text(json.dumps(manifest, sort_keys=True))
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    if make_zip:
        with atomic_path(bundle_dir.with_suffix(".zip")) as tmp_zip:
            archive = shutil.make_archive(str(tmp_zip.parent / "bundle"), "zip", bundle_dir)
            Path(archive).rename(tmp_zip)
    return manifest


def verify_bundle(bundle_dir: Path) -> list[str]:
    """Problems found in a bundle: tampered, missing or unlisted files (empty when intact)."""
    manifest = json.loads((bundle_dir / MANIFEST).read_text(encoding="utf-8"))
    problems = []
    claimed = manifest.pop("manifest_sha256", None)
    if claimed != sha256_text(json.dumps(manifest, sort_keys=True)):
        problems.append(f"{MANIFEST}: its own hash does not match (the manifest was edited)")
    for name, digest in manifest["files"].items():
        path = bundle_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(path) != digest:
            problems.append(f"{name}: sha256 differs from the manifest (tampered)")
    listed = set(manifest["files"]) | {MANIFEST}
    for path in sorted(bundle_dir.rglob("*")):
        name = path.relative_to(bundle_dir).as_posix()
        if path.is_file() and name not in listed:
            problems.append(f"{name}: not listed in the manifest")
    return problems
