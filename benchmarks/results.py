"""The one way a benchmark records what it measured: ``benchmarks/results/<name>.json``, the
figures inside an envelope that says when, on which code, on which machine and by which
command they were measured. The docs' results page and the README's headline block are
rendered from these files (``benchmarks/report.py``), never typed by hand.

    {"name": ..., "date": "2026-11-27T10:03:00+00:00", "commit": "80606d1...", "dirty": false,
     "machine": {"cpu_count": 2, "cpu_model": ..., "memory_gb": 23.4, "gpu": null, ...},
     "command": "python -m benchmarks.cluster --conversations 600", "figures": {...}}
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.core.jsonio import write_text_atomic

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
# Changes that cannot alter what a benchmark measures: results files and documentation.
NOT_CODE = (":(exclude)benchmarks/results", ":(exclude)docs", ":(exclude,glob)**/*.md")
ENVELOPE_KEYS = ("name", "date", "commit", "dirty", "machine", "command", "figures")


def write_result(
    name: str,
    figures: Mapping[str, Any],
    *,
    command: str | None = None,
    folder: Path = RESULTS,
    envelope: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``figures`` as ``<folder>/<name>.json`` inside the envelope, atomically.

    Args:
        name: the results file's name (``[a-z0-9_]+``), one per benchmark.
        figures: what was measured (JSON-serializable).
        command: the command that measured it; the running process's command line when None.
        envelope: ``commit``, ``dirty`` or ``machine`` of figures measured elsewhere (runs
            made on a GPU node and reported here); this process's own when None.
    Returns:
        The path written.
    """
    unknown = set(envelope or {}) - {"commit", "dirty", "machine"}
    if unknown:
        raise ValueError(f"envelope: only commit, dirty and machine are given, not {unknown}")
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise ValueError(f"benchmark result name {name!r}: lowercase letters, digits and _ only")
    commit, dirty = _CODE_STATE
    record = {
        "name": name,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "dirty": dirty,
        "machine": machine(),
        "command": command or current_command(),
        "figures": dict(figures),
    } | dict(envelope or {})
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.json"
    # not write_json_atomic: its sorted keys would reorder the figures (rows keep their order)
    write_text_atomic(target, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    if folder == RESULTS:  # the README's headline lines follow the committed files at once
        from benchmarks.report import refresh_readme

        refresh_readme()
    return target


def read_results(folder: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """Every results file under ``folder`` by name; a file without the envelope is an error
    naming it (a results page must not show figures whose provenance is unknown)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        missing = [key for key in ENVELOPE_KEYS if key not in record]
        if missing:
            raise ValueError(f"{path}: not a results file (missing {', '.join(missing)})")
        found[path.stem] = record
    return found


def current_command() -> str:
    """The command line of this process, as a reader would type it from the checkout."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    words = ["python", "-m", spec.name] if spec is not None else ["python", *sys.argv[:1]]
    return shlex.join([*words, *sys.argv[1:]])


def machine() -> dict[str, Any]:
    """The machine the figures come from: cores, CPU model, memory, GPU (None without one),
    and how busy it was when the benchmark started (other work on shared cores slows it)."""
    return {
        "cpu_count": os.cpu_count(),
        "load_average_at_start": _LOAD_AT_START,
        "cpu_model": _cpu_model(),
        "memory_gb": _memory_gb(),
        "gpu": _gpu(),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
    }


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():
        return None
    for line in meminfo.read_text(encoding="utf-8").splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    return None


def _gpu() -> str | None:
    """The first CUDA device's name when torch sees one (every benchmark imports torch's
    stack anyway; without torch there is no GPU to report)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    count = torch.cuda.device_count()
    name = torch.cuda.get_device_name(0)
    return name if count == 1 else f"{count} × {name}"


def _git_state() -> tuple[str | None, bool | None]:
    """HEAD's commit and whether tracked code differs from it (figures of uncommitted code
    say so); None, None outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *NOT_CODE],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return head, bool(status.strip())


# Taken when the benchmark starts: the code measured is the code it started with, whatever
# is edited while it runs.
_CODE_STATE = _git_state()
_LOAD_AT_START = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
