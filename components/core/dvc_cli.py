"""DVC's command line, run by the interpreter veiltune runs on.

A process started without the virtual environment's ``bin`` on ``PATH`` (a Prefect
deployment served from a shell that never activated it, a cron job) has no ``dvc``
executable to find; ``python -m dvc`` from ``sys.executable`` always runs the DVC installed
beside veiltune.
"""

from __future__ import annotations

import sys


def dvc_command(*args: str) -> list[str]:
    """The argument list that runs ``dvc <args>`` with this interpreter's DVC."""
    return [sys.executable, "-m", "dvc", *args]
