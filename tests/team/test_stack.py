"""The team stack for real: PostgreSQL started in a temporary folder, an MLflow tracking server
on it with MLflow's basic-auth app, the pipeline's account, and a person's."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from components.core.errors import InputError
from veiltune.team import stack

pytestmark = pytest.mark.slow
MODEL = "veiltune-adapter"


@pytest.fixture(scope="module")
def team() -> Iterator[Path]:
    # Not pytest's tmp_path: as root, PostgreSQL runs as `postgres`, who cannot enter it.
    parent = Path(tempfile.mkdtemp(prefix="veiltune-team-"))
    parent.chmod(0o711)
    folder = parent / "stack"
    started = subprocess.run(
        [sys.executable, "-m", "veiltune.cli", "team", "up", "--dir", str(folder)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert started.returncode == 0, started.stderr[-2000:]
    for secret in stack.credentials(folder).values():  # what it prints names no password
        assert secret not in started.stdout + started.stderr
    yield folder
    stopped = stack.down(folder)
    assert (stopped["postgres"], stopped["mlflow"]) == ("stopped", "stopped")
    shutil.rmtree(parent, ignore_errors=True)


def _uri(folder: Path) -> str:
    return str(stack.status(folder)["mlflow_tracking_uri"])


def test_up_writes_an_owner_only_folder_and_the_pipelines_account(team: Path) -> None:
    state = stack.status(team)
    assert (state["postgres"], state["mlflow"]) == ("running", "running")
    for name in ("credentials.json", "pipeline.env", "basic_auth.ini", "stack.json"):
        assert stat.S_IMODE((team / name).stat().st_mode) == 0o600, name
    env = (team / "pipeline.env").read_text(encoding="utf-8")
    assert f"MLFLOW_TRACKING_URI={_uri(team)}" in env and "USERNAME=pipeline" in env
    # A second `up` finds the stack running and leaves it as it is.
    assert stack.up(team) == state


def test_the_server_refuses_unauthenticated_and_wrong_credentials(team: Path) -> None:
    search = f"{_uri(team)}/api/2.0/mlflow/experiments/search?max_results=1"
    assert requests.get(search, timeout=30).status_code == 401
    assert requests.get(search, auth=("pipeline", "wrong"), timeout=30).status_code == 401
    password = stack.credentials(team)["pipeline"]
    assert requests.get(search, auth=("pipeline", password), timeout=30).status_code == 200


def test_only_a_user_allowed_on_the_model_moves_champion(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    uri, secrets = _uri(team), stack.credentials(team)
    admin = ("admin", secrets["admin"])
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "pipeline")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", secrets["pipeline"])
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.create_experiment("team-test")
    run = client.create_run(experiment)
    client.log_metric(run.info.run_id, "utility", 0.5)
    client.create_registered_model(MODEL)
    version = client.create_model_version(MODEL, f"runs:/{run.info.run_id}/model", run.info.run_id)
    client.set_registered_model_alias(MODEL, "candidate", version.version)  # its own model
    assert client.get_metric_history(run.info.run_id, "utility")[0].value == 0.5

    reviewer = ("reviewer", "a-reviewers-password")
    created = requests.post(
        f"{uri}/api/2.0/mlflow/users/create",
        json={"username": reviewer[0], "password": reviewer[1]},
        auth=admin,
        timeout=30,
    )
    assert created.ok
    alias = f"{uri}/api/2.0/mlflow/registered-models/alias"
    champion = {"name": MODEL, "alias": "champion", "version": version.version}
    assert requests.post(alias, json=champion, auth=reviewer, timeout=30).status_code == 403
    grant = {
        "username": reviewer[0],
        "resource_type": "registered_model",
        "resource_id": MODEL,
        "permission": "MANAGE",
    }
    granted = requests.post(
        f"{uri}/api/3.0/mlflow/users/permissions/grant", json=grant, auth=admin, timeout=30
    )
    assert granted.ok, granted.text
    assert requests.post(alias, json=champion, auth=reviewer, timeout=30).ok
    assert client.get_model_version_by_alias(MODEL, "champion").version == version.version
    # The pipeline's account administers nobody.
    other = {"username": "mallory", "password": "a-password-1234"}
    auth = ("pipeline", secrets["pipeline"])
    refused = requests.post(f"{uri}/api/2.0/mlflow/users/create", json=other, auth=auth, timeout=30)
    assert refused.status_code == 403


def test_a_folder_without_a_stack_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no team stack here"):
        stack.status(tmp_path)
