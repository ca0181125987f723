"""The team stack on one machine, for trying it (docs/team.md): PostgreSQL, and on it an MLflow
tracking server with MLflow's basic-auth app and the artifacts proxied by the server.

``up`` writes everything into one owner-only folder: the cluster, the server's auth config,
the artifacts, the logs, ``stack.json`` (ports and the server's process, no secret) and
``credentials.json`` (generated passwords). It prints where the server is and the file to
source for the pipeline's account, ``pipeline.env``; never a password.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from components.core.errors import BackendError, InputError
from veiltune.team.postgres import Cluster

STATE_FILE = "stack.json"
CREDENTIALS_FILE = "credentials.json"
PIPELINE_ENV = "pipeline.env"
ADMIN, PIPELINE = "admin", "pipeline"  # MLflow accounts: the administrator, the pipeline's
MLFLOW_DATABASE, AUTH_DATABASE, DATABASE_OWNER = "mlflow", "mlflow_auth", "mlflow"
SERVER_START_TIMEOUT_S = 120


def up(folder: Path, mlflow_port: int | None = None) -> dict[str, Any]:
    """Start the stack in ``folder`` (made if missing); a running stack is left as it is."""
    folder = folder.resolve()
    if (folder / STATE_FILE).is_file():
        state = status(folder)
        if state["postgres"] == "running" and state["mlflow"] == "running":
            return state
        raise InputError(
            f"{folder / STATE_FILE}: a stack that is not running whole ({state}); "
            f"`veiltune team down --dir {folder}` first"
        )
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o711)  # the cluster's own user may need to pass through (postgres.py)
    try:
        return _start(folder, mlflow_port)
    except BaseException:
        if (folder / STATE_FILE).is_file():  # nothing left running half-started
            down(folder)
        raise


def _start(folder: Path, mlflow_port: int | None) -> dict[str, Any]:
    secrets_ = {
        name: secrets.token_urlsafe(24)
        for name in ("postgres", "database", "flask", ADMIN, PIPELINE)
    }
    _write_private(folder / CREDENTIALS_FILE, json.dumps(secrets_, indent=2) + "\n")
    cluster = Cluster(folder / "postgres", _free_port())
    cluster.init(secrets_["postgres"])
    cluster.start()
    state: dict[str, Any] = {"postgres_port": cluster.port}
    _write_state(folder, state)
    for database in (MLFLOW_DATABASE, AUTH_DATABASE):
        cluster.create_database(
            database, DATABASE_OWNER, secrets_["database"], secrets_["postgres"]
        )
    port = mlflow_port or _free_port()
    server = _start_mlflow(folder, cluster, secrets_, port)
    state |= {"mlflow_port": port, "mlflow_pid": server.pid}
    _write_state(folder, state)
    _wait_for_server(folder, server, port)
    _create_user(port, secrets_, PIPELINE)
    uri = f"http://127.0.0.1:{port}"
    _write_private(
        folder / PIPELINE_ENV,
        f"export MLFLOW_TRACKING_URI={uri}\nexport MLFLOW_TRACKING_USERNAME={PIPELINE}\n"
        f"export MLFLOW_TRACKING_PASSWORD={secrets_[PIPELINE]}\n",
    )
    return status(folder)


def down(folder: Path) -> dict[str, Any]:
    """Stop the stack in ``folder`` (its data stays; ``up`` needs a new folder)."""
    folder = folder.resolve()
    state = _read_state(folder)
    pid = state.get("mlflow_pid")
    if pid and _alive(pid):
        os.killpg(pid, signal.SIGTERM)
        for _ in range(100):
            if not _alive(pid):
                break
            time.sleep(0.1)
        else:
            os.killpg(pid, signal.SIGKILL)
    Cluster(folder / "postgres", state["postgres_port"]).stop()
    return status(folder)


def status(folder: Path) -> dict[str, Any]:
    """What runs of the stack in ``folder``, where, and the file with the pipeline's account."""
    folder = folder.resolve()
    state = _read_state(folder)
    cluster = Cluster(folder / "postgres", state["postgres_port"])
    pid = state.get("mlflow_pid")
    return {
        "folder": str(folder),
        "postgres": "running" if cluster.running() else "stopped",
        "postgres_address": f"127.0.0.1:{cluster.port}",
        "mlflow": "running" if pid and _alive(pid) else "stopped",
        "mlflow_tracking_uri": f"http://127.0.0.1:{state['mlflow_port']}"
        if "mlflow_port" in state
        else None,
        "pipeline_env": str(folder / PIPELINE_ENV),
    }


def credentials(folder: Path) -> dict[str, str]:
    """The generated passwords (for tests and the administrator; never printed)."""
    return dict(json.loads((folder.resolve() / CREDENTIALS_FILE).read_text(encoding="utf-8")))


def _start_mlflow(
    folder: Path, cluster: Cluster, secrets_: dict[str, str], port: int
) -> subprocess.Popen[bytes]:
    """``mlflow server`` with the basic-auth app, both stores on the cluster, the artifacts
    proxied by the server into ``folder/artifacts``."""
    auth_config = folder / "basic_auth.ini"
    auth_db = cluster.url(DATABASE_OWNER, secrets_["database"], AUTH_DATABASE, "psycopg2")
    _write_private(
        auth_config,
        "[mlflow]\ndefault_permission = READ\n"
        f"database_uri = {auth_db}\nadmin_username = {ADMIN}\n"
        f"admin_password = {secrets_[ADMIN]}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n",
    )
    (folder / "artifacts").mkdir(mode=0o700, exist_ok=True)
    backend = cluster.url(DATABASE_OWNER, secrets_["database"], MLFLOW_DATABASE, "psycopg2")
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri", backend,
        "--artifacts-destination", str(folder / "artifacts"),
        "--app-name", "basic-auth",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    env = os.environ | {
        "MLFLOW_AUTH_CONFIG_PATH": str(auth_config),
        "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets_["flask"],  # CSRF tokens of the auth app
    }
    with (folder / "mlflow.log").open("ab") as log:
        return subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _wait_for_server(folder: Path, server: subprocess.Popen[bytes], port: int) -> None:
    import requests

    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise BackendError(
        f"the MLflow server did not start on 127.0.0.1:{port}: see {folder / 'mlflow.log'}"
    )


def _create_user(port: int, secrets_: dict[str, str], username: str) -> None:
    import requests

    reply = requests.post(
        f"http://127.0.0.1:{port}/api/2.0/mlflow/users/create",
        json={"username": username, "password": secrets_[username]},
        auth=(ADMIN, secrets_[ADMIN]),
        timeout=30,
    )
    if not reply.ok:
        raise BackendError(
            f"the MLflow server refused to create the {username!r} account: {reply.status_code}"
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_state(folder: Path) -> dict[str, Any]:
    path = folder / STATE_FILE
    if not path.is_file():
        raise InputError(f"{path}: no team stack here (`veiltune team up --dir {folder}`)")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _write_state(folder: Path, state: dict[str, Any]) -> None:
    _write_private(folder / STATE_FILE, json.dumps(state, indent=2) + "\n")


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to an owner-only file (made so before a byte is written)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
