"""The team stack on one machine, for trying it (docs/team.md): PostgreSQL, and on it an MLflow
tracking server (basic-auth app, proxied artifacts) and a Prefect server (basic auth, a work
pool of process workers).

``up`` writes everything into one folder: the cluster, each server's config and log, the
artifacts, ``stack.json`` (ports and processes, no secret), ``credentials.json`` (generated
passwords), ``salt`` (the team's corpus salt), ``dvc-remote`` (the workers' shared DVC
remote) and ``pipeline.env``, the environment a pipeline or a worker sources to reach the
servers with the pipeline's account. It prints where the servers are; never a secret.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from components.core.errors import InputError
from components.core.salt import SALT_FILE_ENV, new_salt
from veiltune.team import mlflow_server, prefect_server, servers
from veiltune.team.files import write_private
from veiltune.team.postgres import Cluster

STATE_FILE = "stack.json"
CREDENTIALS_FILE = "credentials.json"
PIPELINE_ENV = "pipeline.env"
SALT_FILE = "salt"  # VEILTUNE_SALT_FILE: every worker's ingest writes the same bytes
DVC_REMOTE = "dvc-remote"  # `dvc remote add -d --local team DIR/dvc-remote` in each checkout
PIPELINE = "pipeline"  # the pipeline's MLflow account
SECRETS = ("postgres", "mlflow_db", "prefect_db", "flask", "admin", PIPELINE, "prefect")


class Server(Protocol):
    """What the stack asks of each server's module (``mlflow_server``, ``prefect_server``)."""

    def create_databases(self, cluster: Cluster, secrets: Mapping[str, str]) -> None: ...

    def start(
        self, folder: Path, cluster: Cluster, *, secrets: Mapping[str, str], port: int
    ) -> subprocess.Popen[bytes]: ...


_MLFLOW: Server = mlflow_server  # checked against the protocol here
_PREFECT: Server = prefect_server
SERVER_MODULES = {"mlflow": _MLFLOW, "prefect": _PREFECT}
SERVERS = tuple(SERVER_MODULES)


def up(folder: Path) -> dict[str, Any]:
    """Start the stack in ``folder``: made there the first time, started again on its data
    after ``down``; a running stack is left as it is."""
    folder = folder.resolve()
    made = (folder / STATE_FILE).is_file()
    if made and not _read_state(folder).get("complete"):
        raise InputError(
            f"{folder}: a stack whose first start failed (see its logs); remove the folder "
            "and run `veiltune team up` again"
        )
    if made:
        found = status(folder)
        if all(found[name] == "running" for name in ("postgres", *SERVERS)):
            return found
        down(folder)  # whatever still runs of it, before it starts again whole
    else:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o711)  # the cluster's own user may need to pass through (postgres.py)
    try:
        return _restart(folder) if made else _start(folder)
    except BaseException:
        if (folder / STATE_FILE).is_file():  # nothing left running half-started
            down(folder)
        raise


def _start(folder: Path) -> dict[str, Any]:
    secret = {name: secrets.token_urlsafe(24) for name in SECRETS}
    write_private(folder / CREDENTIALS_FILE, json.dumps(secret, indent=2) + "\n")
    cluster = Cluster(folder / "postgres", servers.free_port())
    cluster.init(secret["postgres"])
    state: dict[str, Any] = {"postgres_port": cluster.port, "servers": {}}
    _write_state(folder, state)
    cluster.start()
    for module in SERVER_MODULES.values():
        module.create_databases(cluster, secret)
    _start_servers(folder, cluster, secret=secret, state=state)
    mlflow_server.create_user(
        _mlflow_uri(state), secret["admin"], username=PIPELINE, password=secret[PIPELINE]
    )
    _write_client_files(folder, secret=secret, state=state)
    _write_state(folder, state | {"complete": True})
    return status(folder)


def _restart(folder: Path) -> dict[str, Any]:
    """A stopped stack started again on its data: the same ports, accounts and runs (and
    the team's salt and DVC remote made, for a stack from before they were)."""
    state = _read_state(folder)
    cluster = Cluster(folder / "postgres", state["postgres_port"])
    cluster.start()
    _start_servers(folder, cluster, secret=credentials(folder), state=state)
    _write_client_files(folder, secret=credentials(folder), state=state)
    return status(folder)


def _write_client_files(folder: Path, *, secret: Mapping[str, str], state: dict[str, Any]) -> None:
    """``pipeline.env``, and the team's salt and DVC remote when they are not there yet."""
    if not (folder / SALT_FILE).is_file():  # never replaced: the workers' run caches match it
        write_private(folder / SALT_FILE, new_salt() + "\n")
    (folder / DVC_REMOTE).mkdir(mode=0o700, exist_ok=True)
    env = {
        "MLFLOW_TRACKING_URI": _mlflow_uri(state),
        "MLFLOW_TRACKING_USERNAME": PIPELINE,
        "MLFLOW_TRACKING_PASSWORD": secret[PIPELINE],
        **prefect_server.client_env(state["servers"]["prefect"]["port"], secret["prefect"]),
        SALT_FILE_ENV: str(folder / SALT_FILE),
    }
    write_private(folder / PIPELINE_ENV, "".join(f"export {k}={v}\n" for k, v in env.items()))


def _start_servers(
    folder: Path, cluster: Cluster, *, secret: dict[str, str], state: dict[str, Any]
) -> None:
    """Each server, on the port the state has for it (a free one the first time)."""
    for name, module in SERVER_MODULES.items():
        server = state["servers"].setdefault(name, {"port": servers.free_port()})
        server["pid"] = module.start(folder, cluster, secrets=secret, port=server["port"]).pid
        _write_state(folder, state)


def down(folder: Path) -> dict[str, Any]:
    """Stop the stack in ``folder``; its data stays there (``up`` starts it again)."""
    folder = folder.resolve()
    state = _read_state(folder)
    for server in state["servers"].values():
        if "pid" in server:
            servers.stop(server["pid"])
    Cluster(folder / "postgres", state["postgres_port"]).stop()
    return status(folder)


def status(folder: Path) -> dict[str, Any]:
    """What runs of the stack in ``folder``, where, and the file to source for its clients."""
    folder = folder.resolve()
    state = _read_state(folder)
    cluster = Cluster(folder / "postgres", state["postgres_port"])
    found: dict[str, Any] = {
        "folder": str(folder),
        "postgres": "running" if cluster.running() else "stopped",
        "postgres_address": f"127.0.0.1:{cluster.port}",
    }
    for name in SERVERS:
        server = state["servers"].get(name, {})
        running = "pid" in server and servers.alive(server["pid"])
        found[name] = "running" if running else "stopped"
    found["mlflow_tracking_uri"] = _mlflow_uri(state) if "mlflow" in state["servers"] else None
    if "prefect" in state["servers"]:
        found["prefect_api_url"] = f"http://127.0.0.1:{state['servers']['prefect']['port']}/api"
        found["prefect_work_pool"] = prefect_server.POOL
    found["pipeline_env"] = str(folder / PIPELINE_ENV)
    found["dvc_remote"] = str(folder / DVC_REMOTE)
    return found


def credentials(folder: Path) -> dict[str, str]:
    """The generated passwords (for tests and the administrator; never printed)."""
    return dict(json.loads((folder.resolve() / CREDENTIALS_FILE).read_text(encoding="utf-8")))


def _mlflow_uri(state: dict[str, Any]) -> str:
    return f"http://127.0.0.1:{state['servers']['mlflow']['port']}"


def _read_state(folder: Path) -> dict[str, Any]:
    path = folder / STATE_FILE
    if not path.is_file():
        raise InputError(f"{path}: no team stack here (`veiltune team up --dir {folder}`)")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _write_state(folder: Path, state: dict[str, Any]) -> None:
    write_private(folder / STATE_FILE, json.dumps(state, indent=2) + "\n")
