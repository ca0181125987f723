"""Checking a bundle an auditor received against its manifest."""

from __future__ import annotations

from pathlib import Path

from components.core.errors import BundleTampered
from components.core.stage import Metrics
from components.export.bundle import read_manifest, verify_bundle


def verify(bundle: Path) -> Metrics:
    """Check a bundle folder or zip against its manifest; raise listing every problem."""
    problems = verify_bundle(bundle)
    if problems:
        raise BundleTampered(
            f"{bundle}: {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return {"bundle": str(bundle), "intact": True, "n_files": len(read_manifest(bundle)["files"])}
