"""A remote MLflow tracking server (``MLFLOW_TRACKING_URI=http(s)://…``, the team
deployment's) checked before a stage uses it: reachable, of the client's major version, and
taking the credentials of ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``. Each
failure is one error naming the server and what to check, never the password; MLflow's own
client would retry for minutes and end in a traceback."""

from __future__ import annotations

import os

from components.core.errors import BackendError

TIMEOUT_S = 10
_CREDENTIALS = "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"


def is_remote(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def check_server(uri: str) -> None:
    """Raise ``BackendError`` unless the server at ``uri`` can serve this client.

    Raises:
        BackendError: unreachable, another major version of MLflow, or the credentials
            refused (401) or without permission to read (403).
    """
    import mlflow
    import requests

    where = f"MLflow server {uri} (MLFLOW_TRACKING_URI)"
    try:
        version = requests.get(f"{uri}/version", timeout=TIMEOUT_S)
    except requests.RequestException as exc:
        raise BackendError(f"{where}: unreachable ({type(exc).__name__})") from exc
    server_major, client_major = (
        version.text.strip().split(".")[0],
        mlflow.__version__.split(".")[0],
    )
    if version.ok and server_major != client_major:
        raise BackendError(
            f"{where}: MLflow {version.text.strip()}, and this client is {mlflow.__version__}: "
            f"veiltune needs a server of MLflow {client_major}.x"
        )
    user = os.environ.get("MLFLOW_TRACKING_USERNAME")
    auth = (user, os.environ.get("MLFLOW_TRACKING_PASSWORD", "")) if user else None
    reply = requests.get(
        f"{uri}/api/2.0/mlflow/experiments/search",
        params={"max_results": 1},
        auth=auth,
        timeout=TIMEOUT_S,
    )
    if reply.status_code == 401:
        who = f"the credentials of {user!r}" if user else "a client without credentials"
        raise BackendError(f"{where}: refused {who} (HTTP 401); check {_CREDENTIALS}")
    if reply.status_code == 403:
        raise BackendError(f"{where}: {user!r} may not read experiments (HTTP 403)")
    if not reply.ok:
        raise BackendError(f"{where}: answered HTTP {reply.status_code} to a search")
