"""The basic-auth string of the workspace's Prefect server (``make ui``).

The server takes it as ``PREFECT_SERVER_API_AUTH_STRING`` and refuses API requests without it
(401); clients (``veiltune serve``, triggers) send it from ``PREFECT_API_AUTH_STRING``; the UI
asks for it on its login page. It is generated once per workspace with a random password and
kept in ``.prefect/auth``: git-ignored, outside every pipeline output, readable by its owner
only. Deleting the file rotates it at the next ``make ui``.

``python -m flows.prefect_auth PATH`` creates the file if it is missing; ``infra/prefect/ui.sh``
runs it before starting the server. ``veiltune flow`` with no Prefect API configured makes
Prefect start a temporary server of its own for the run: ``temporary_server_auth`` gives that
server, and the run's clients, the same string.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from components.core.errors import InputError

AUTH_FILE = Path(".prefect") / "auth"
AUTH_USER = "veiltune"
_PASSWORD_BYTES = 32  # 256 random bits, URL-safe base64: never a ':' inside the password
_PRIVATE_DIR = 0o700
_PRIVATE_FILE = 0o600


def ensure_auth_string(path: Path = AUTH_FILE) -> str:
    """The ``user:password`` kept in ``path``, generated there first if the file is missing.

    The folder is made 0700 and the file 0600 whatever the umask, and an existing file is
    brought back to those modes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, _PRIVATE_DIR)  # mkdir's mode is masked by the umask
    with contextlib.suppress(FileExistsError):  # made earlier (or by a concurrent start)
        _write_new(path, f"{AUTH_USER}:{secrets.token_urlsafe(_PASSWORD_BYTES)}")
    return _read(path)


def _write_new(path: Path, auth: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), _PRIVATE_FILE)
        handle.write(auth + "\n")


def _read(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the Prefect auth string: {exc}") from exc
    with os.fdopen(fd, encoding="utf-8") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InputError(f"{path}: not a regular file; delete it to generate a new one")
        os.fchmod(handle.fileno(), _PRIVATE_FILE)
        auth = handle.read().strip()
    user, sep, password = auth.partition(":")
    if not (user and sep and password) or any(c.isspace() for c in auth):
        raise InputError(f"{path}: expected one line user:password; delete it to generate one")
    return auth


@contextlib.contextmanager
def temporary_server_auth(path: Path = AUTH_FILE) -> Iterator[None]:
    """Within it, the temporary server Prefect starts when no API is configured refuses
    requests without the workspace's auth string (``path``, made on first use), and this
    process's clients send it.

    Prefect hands its settings to the server's process when it starts it, so the server
    must start inside. With an API configured (``make ui``, a team's server), nothing is
    changed: the workspace's password goes to no server veiltune did not start.
    """
    from prefect.settings import (
        PREFECT_API_AUTH_STRING,
        PREFECT_API_URL,
        PREFECT_SERVER_API_AUTH_STRING,
        temporary_settings,
    )

    if PREFECT_API_URL.value():
        yield
        return
    auth = ensure_auth_string(path)
    updates = {PREFECT_SERVER_API_AUTH_STRING: auth, PREFECT_API_AUTH_STRING: auth}
    with temporary_settings(updates=updates):
        yield


def main(argv: list[str]) -> int:
    """Create the auth file named by ``argv[0]`` (default .prefect/auth) if it is missing."""
    try:
        ensure_auth_string(Path(argv[0]) if argv else AUTH_FILE)
    except InputError as exc:
        print(f"prefect auth: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
