"""The Prefect server of the team stack: its database on PostgreSQL, basic authentication on
its API and UI, and a work pool of process workers that the pipeline is deployed to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.core.errors import BackendError
from veiltune.team import servers
from veiltune.team.postgres import Cluster

DATABASE = OWNER = "prefect"
USER = "veiltune"  # the basic-auth user of the API (Prefect's server has one)
POOL = "veiltune"  # the work pool workers take the pipeline's runs from


def client_env(port: int, password: str) -> dict[str, str]:
    """What a client (a worker, `veiltune deploy`, a script) needs to reach the server."""
    return {
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_API_AUTH_STRING": f"{USER}:{password}",
    }


def create_databases(cluster: Cluster, secrets: Mapping[str, str]) -> None:
    """The server's database, once."""
    cluster.create_database(
        DATABASE,
        OWNER,
        owner_password=secrets["prefect_db"],
        superuser_password=secrets["postgres"],
    )


def start(
    folder: Path, cluster: Cluster, *, secrets: Mapping[str, str], port: int
) -> subprocess.Popen[bytes]:
    """``prefect server start`` on 127.0.0.1:``port`` with the work pool made; healthy when
    it returns."""
    home = folder / "prefect"
    home.mkdir(mode=0o700, exist_ok=True)
    env = _without_prefect_client(os.environ) | {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": cluster.url(
            OWNER, secrets["prefect_db"], database=DATABASE, driver="asyncpg"
        ),
        "PREFECT_SERVER_API_AUTH_STRING": f"{USER}:{secrets['prefect']}",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT": "false",
    }
    command = [
        sys.executable, "-m", "prefect", "server", "start",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    log = folder / "prefect.log"
    server = servers.start(command, env, log=log)
    url = f"http://127.0.0.1:{port}/api/health"
    servers.wait_healthy("Prefect", url, server=server, log=log, auth=(USER, secrets["prefect"]))
    _create_pool(home, port, password=secrets["prefect"])
    return server


def _create_pool(home: Path, port: int, *, password: str) -> None:
    env = _without_prefect_client(os.environ) | client_env(port, password)
    create_pool(env | {"PREFECT_HOME": str(home)})


def create_pool(env: Mapping[str, str]) -> dict[str, str]:
    """The work pool ``POOL`` of process workers with the locked job template
    (``locked_template``), made or brought back to it on the server that ``env``'s
    ``PREFECT_API_URL`` names."""
    default = _prefect(env, "work-pool", "get-default-base-job-template", "--type", "process")
    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / "job_template.json"
        template.write_text(json.dumps(locked_template(json.loads(default))), encoding="utf-8")
        words = ("work-pool", "create", POOL, "--type", "process", "--overwrite")
        _prefect(env, *words, "--base-job-template", str(template))
    return {"work_pool": POOL, "api": env.get("PREFECT_API_URL", "")}


def locked_template(default: dict[str, Any]) -> dict[str, Any]:
    """Prefect's process job template with only the run's name, labels and output left to a
    flow run's job variables: a run started from the UI or the API cannot set the worker's
    environment (``VEILTUNE_ALLOW_OVERRIDES`` among it), command or working directory."""
    kept = ("name", "labels", "stream_output")
    variables = default["variables"]
    return {
        "job_configuration": {
            **{key: default["job_configuration"][key] for key in kept},
            "command": None,  # Prefect's own: run the flow
            "env": {},
            "working_dir": None,  # the deployment's pull step sets it: the checkout
        },
        "variables": {
            **{key: value for key, value in variables.items() if key != "properties"},
            "properties": {key: variables["properties"][key] for key in kept},
            "additionalProperties": False,
        },
    }


def _prefect(env: Mapping[str, str], *words: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "prefect", *words],
        capture_output=True,
        text=True,
        env=dict(env),
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise BackendError(f"Prefect: `prefect {' '.join(words[:2])}` failed: {done.stdout[-300:]}")
    return done.stdout


def _without_prefect_client(env: Mapping[str, str]) -> dict[str, str]:
    """The environment without a client's Prefect settings: the server's must be its own."""
    return {
        k: v
        for k, v in env.items()
        if k not in ("PREFECT_API_URL", "PREFECT_API_KEY", "PREFECT_API_AUTH_STRING")
    }
