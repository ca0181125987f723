"""The team stack's server processes: started in their own session with their log in the
stack's folder, waited on until healthy, stopped by process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from components.core.errors import BackendError

START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 10


def start(command: Sequence[str], env: Mapping[str, str], *, log: Path) -> subprocess.Popen[bytes]:
    """``command`` in a session of its own (so ``stop`` ends its children too), output to
    ``log``."""
    with log.open("ab") as handle:
        return subprocess.Popen(
            list(command),
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
        )


def wait_healthy(
    name: str,
    url: str,
    *,
    server: subprocess.Popen[bytes],
    log: Path,
    auth: tuple[str, str] | None = None,
) -> None:
    """Return once ``url`` answers 200; an error naming the log if the server exits first or
    does not answer within ``START_TIMEOUT_S``."""
    import requests

    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if requests.get(url, auth=auth, timeout=5).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise BackendError(f"the {name} server did not start ({url}): see {log}")


def stop(pid: int) -> None:
    """End the process group ``pid`` leads: TERM, then KILL after ``STOP_TIMEOUT_S``."""
    if not alive(pid):
        return
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        os.killpg(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of this process that exited stays a zombie until reaped: not alive.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
