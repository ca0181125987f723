"""DVC's command line, run by the interpreter veiltune runs on.

A process started without the virtual environment's ``bin`` on ``PATH`` (a Prefect
deployment served from a shell that never activated it, a cron job, ``.venv/bin/veiltune``
typed whole) has no ``dvc`` executable to find; ``python -m dvc`` from ``sys.executable``
always runs the DVC installed beside veiltune, and ``dvc_environment`` lets the stage
commands it runs find ``veiltune``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def dvc_command(*args: str) -> list[str]:
    """The argument list that runs ``dvc <args>`` with this interpreter's DVC."""
    return [sys.executable, "-m", "dvc", *args]


def dvc_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with this interpreter's ``bin`` first on ``PATH``: dvc.yaml's commands call
    ``veiltune`` by name."""
    path = os.pathsep.join(p for p in (str(Path(sys.executable).parent), base.get("PATH")) if p)
    return {**base, "PATH": path}


@dataclass(frozen=True)
class Remote:
    """The DVC remote a workspace pushes to and pulls from by default (``core.remote``)."""

    name: str
    url: str  # as configured, any user:password@ left out: it is logged

    def __str__(self) -> str:
        return f"DVC remote '{self.name}' ({self.url})"


def default_remote(root: Path) -> Remote | None:
    """The default remote of the DVC project at ``root`` (its, the local and the global
    config merged, as ``dvc push`` reads them); None when it has none."""
    from dvc.exceptions import NotDvcRepoError
    from dvc.repo import Repo  # DVC's own reading of its config; heavy, so imported here

    try:
        repo = Repo(str(root))
    except NotDvcRepoError:
        return None
    with repo:
        name = repo.config["core"].get("remote")
        url = str(repo.config["remote"].get(name, {}).get("url", "")) if name else ""
    return Remote(name, _without_password(url)) if name else None


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if not parts.password:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
