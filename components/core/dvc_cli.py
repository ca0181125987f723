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
from pathlib import Path


def dvc_command(*args: str) -> list[str]:
    """The argument list that runs ``dvc <args>`` with this interpreter's DVC."""
    return [sys.executable, "-m", "dvc", *args]


def dvc_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with this interpreter's ``bin`` first on ``PATH``: dvc.yaml's commands call
    ``veiltune`` by name."""
    path = os.pathsep.join(p for p in (str(Path(sys.executable).parent), base.get("PATH")) if p)
    return {**base, "PATH": path}
