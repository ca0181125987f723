"""The MLflow tracking server of the team stack: both stores on PostgreSQL, MLflow's
basic-auth app (its users in PostgreSQL too), the artifacts proxied by the server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from components.core.errors import BackendError
from veiltune.team import servers
from veiltune.team.files import write_private
from veiltune.team.postgres import Cluster

ADMIN = "admin"
DATABASE, AUTH_DATABASE, OWNER = "mlflow", "mlflow_auth", "mlflow"
AUTH_CACHE_TTL_S = 60


def create_databases(cluster: Cluster, secrets: Mapping[str, str]) -> None:
    """The server's two databases (runs and registry; users and permissions), once."""
    for database in (DATABASE, AUTH_DATABASE):
        cluster.create_database(
            database,
            OWNER,
            owner_password=secrets["mlflow_db"],
            superuser_password=secrets["postgres"],
        )


def start(
    folder: Path, cluster: Cluster, *, secrets: Mapping[str, str], port: int
) -> subprocess.Popen[bytes]:
    """``mlflow server`` on 127.0.0.1:``port``, healthy when it returns."""
    auth_config = folder / "basic_auth.ini"
    auth_db = cluster.url(OWNER, secrets["mlflow_db"], database=AUTH_DATABASE, driver="psycopg2")
    write_private(
        auth_config,
        "[mlflow]\ndefault_permission = READ\n"
        f"database_uri = {auth_db}\nadmin_username = {ADMIN}\n"
        f"admin_password = {secrets[ADMIN]}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        # A password's PBKDF2 check once a minute per user, not on every request (one server
        # process: a password changed through the API takes effect at once).
        f"auth_cache_ttl_seconds = {AUTH_CACHE_TTL_S}\n",
    )
    (folder / "artifacts").mkdir(mode=0o700, exist_ok=True)
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri",
        cluster.url(OWNER, secrets["mlflow_db"], database=DATABASE, driver="psycopg2"),
        "--artifacts-destination", str(folder / "artifacts"),
        "--app-name", "basic-auth",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    env = os.environ | {
        "MLFLOW_AUTH_CONFIG_PATH": str(auth_config),
        "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets["flask"],  # CSRF tokens of the auth app
        "MLFLOW_DISABLE_TELEMETRY": "true",
        # MLflow's GenAI job runner (evaluations, scorers, prompt optimisation), which
        # veiltune never uses: otherwise eight more processes, each loading MLflow, and a
        # folder in /dev/shm that no one removes.
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }
    log = folder / "mlflow.log"
    server = servers.start(command, env, log=log)
    servers.wait_healthy("MLflow", f"http://127.0.0.1:{port}/health", server=server, log=log)
    return server


def create_user(uri: str, admin_password: str, *, username: str, password: str) -> None:
    import requests

    reply = requests.post(
        f"{uri}/api/2.0/mlflow/users/create",
        json={"username": username, "password": password},
        auth=(ADMIN, admin_password),
        timeout=30,
    )
    if not reply.ok:
        raise BackendError(
            f"the MLflow server at {uri} refused to create the {username!r} account "
            f"(HTTP {reply.status_code})"
        )
