"""The team stack for real: PostgreSQL started in a temporary folder, on it an MLflow tracking
server with MLflow's basic-auth app and a Prefect server with basic auth and a work pool, real
process workers taking runs from the pool."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from components.core.errors import InputError
from components.core.salt import ingest_salt
from tests.pipeline_repo import copy_gated_repo, pipeline_env
from veiltune.team import stack

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
MODEL = "veiltune-adapter"
E2E_MODEL = "veiltune-adapter-e2e"


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
    assert [stopped[name] for name in ("postgres", "mlflow", "prefect")] == ["stopped"] * 3
    shutil.rmtree(parent, ignore_errors=True)


def _uri(folder: Path) -> str:
    return str(stack.status(folder)["mlflow_tracking_uri"])


def test_up_writes_an_owner_only_folder_and_the_pipelines_account(team: Path) -> None:
    state = stack.status(team)
    assert [state[name] for name in ("postgres", "mlflow", "prefect")] == ["running"] * 3
    for name in ("credentials.json", "pipeline.env", "basic_auth.ini", "stack.json", "salt"):
        assert stat.S_IMODE((team / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE((team / "dvc-remote").stat().st_mode) == 0o700
    assert state["dvc_remote"] == str(team / "dvc-remote")
    env = (team / "pipeline.env").read_text(encoding="utf-8")
    assert f"VEILTUNE_SALT_FILE={team / 'salt'}" in env
    assert ingest_salt({"VEILTUNE_SALT_FILE": str(team / "salt")}) == ingest_salt(
        {"VEILTUNE_SALT_FILE": str(team / "salt")}
    )  # the team's, not a fresh one
    assert f"MLFLOW_TRACKING_URI={_uri(team)}" in env and "USERNAME=pipeline" in env
    assert f"PREFECT_API_URL={state['prefect_api_url']}" in env and "PREFECT_API_AUTH_STRING" in env
    # A second `up` finds the stack running and leaves it as it is.
    assert stack.up(team) == state


def test_the_mlflow_server_runs_no_genai_job_runner(team: Path) -> None:
    # MLflow starts one by default: a runner and seven huey consumers, each loading MLflow.
    leader = json.loads((team / "stack.json").read_text())["servers"]["mlflow"]["pid"]
    commands = _process_group(leader)
    assert any("uvicorn" in command for command in commands), commands  # the server's own
    assert not [c for c in commands if "mlflow.server.jobs" in c or "huey" in c], commands


def _process_group(leader: int) -> list[str]:
    """The command lines of the processes in the group ``leader`` leads (from /proc)."""
    commands = []
    for proc_stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            group = proc_stat.read_text().rpartition(")")[2].split()[2]  # state, ppid, pgrp
            if group == str(leader):
                command = (proc_stat.parent / "cmdline").read_bytes()
                commands.append(command.replace(b"\0", b" "))
        except OSError:  # the process ended meanwhile
            continue
    return [command.decode(errors="replace") for command in commands]


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


def test_a_stage_names_refused_credentials_never_the_password(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.core.errors import BackendError
    from components.core.tracking_server import check_server

    uri = _uri(team)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "pipeline")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "not-the-password")
    with pytest.raises(BackendError, match="refused the credentials of 'pipeline'") as refused:
        check_server(uri)
    assert "not-the-password" not in str(refused.value)
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME")
    with pytest.raises(BackendError, match="refused a client without credentials"):
        check_server(uri)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "pipeline")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", stack.credentials(team)["pipeline"])
    check_server(uri)


def test_postgresql_stopped_mid_stage_is_one_error_and_a_rerun_completes(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    from components.core.errors import BackendError
    from components.core.tracking import store_errors
    from veiltune.team.postgres import Cluster

    uri = _uri(team)
    for key, value in _client_env(team).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # fail now, not in minutes
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("outage")
    port = int(stack.status(team)["postgres_address"].rsplit(":", 1)[1])
    cluster = Cluster(team / "postgres", port)
    cluster.stop()
    try:
        failed = pytest.raises(BackendError, match=f"MLflow server {uri}: .*run the stage again")
        with failed, store_errors():
            client.create_run(experiment)
    finally:
        cluster.start()
    runs = []
    for _ in range(20):  # the server's pool reconnects on its own
        try:
            with store_errors():
                runs.append(client.create_run(experiment))
            break
        except BackendError:
            time.sleep(0.5)
    assert runs and client.get_run(runs[0].info.run_id).info.experiment_id == experiment


def test_the_load_benchmark_counts_what_its_clients_did(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.team_load import measure

    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "pipeline")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", stack.credentials(team)["pipeline"])
    figures = measure(_uri(team), clients=3, rounds=2, metrics=4)
    assert (figures["calls"], figures["versions_registered"]) == (18, 6)
    for latency in figures["latency_ms"].values():
        assert 0 < latency["median"] <= latency["p95"] <= latency["max"]
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong")  # the mechanism can fail
    with pytest.raises(Exception, match="401|Unauthorized|credentials"):
        measure(_uri(team), clients=1, rounds=1, metrics=1)


def _client_env(folder: Path) -> dict[str, str]:
    lines = (folder / "pipeline.env").read_text(encoding="utf-8").splitlines()
    pairs = (line.removeprefix("export ").split("=", 1) for line in lines)
    return {key: value for key, value in pairs}


def test_prefect_refuses_clients_without_the_auth_string(team: Path) -> None:
    env = _client_env(team)
    runs = f"{env['PREFECT_API_URL']}/flow_runs/filter"
    assert requests.post(runs, json={}, timeout=30).status_code == 401
    user, _, password = env["PREFECT_API_AUTH_STRING"].partition(":")
    assert requests.post(runs, json={}, auth=(user, "wrong"), timeout=30).status_code == 401
    assert requests.post(runs, json={}, auth=(user, password), timeout=30).ok


def test_deploy_puts_the_pipeline_on_the_pool_whose_runs_cannot_set_a_workers_environment(
    team: Path, tmp_path: Path
) -> None:
    env = os.environ | _client_env(team) | {"PREFECT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "veiltune.cli", "deploy", "--checkout", str(REPO)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    api, (user, _, password) = env["PREFECT_API_URL"], env["PREFECT_API_AUTH_STRING"].partition(":")
    auth = (user, password)
    url = f"{api}/deployments/name/veiltune-pipeline/veiltune-pipeline"
    deployment = requests.get(url, auth=auth, timeout=30).json()
    assert (deployment["entrypoint"], deployment["work_pool_name"]) == (
        "flows/pipeline.py:pipeline",
        "veiltune",
    )
    create = f"{api}/deployments/{deployment['id']}/create_flow_run"
    for job_variables in (
        {"env": {"VEILTUNE_ALLOW_OVERRIDES": "gate"}},  # would widen what the run may change
        {"command": "sh -c 'cat /etc/passwd'"},
        {"working_dir": "/"},
    ):
        refused = requests.post(
            create, json={"job_variables": job_variables}, auth=auth, timeout=30
        )
        assert refused.status_code == 422, (job_variables, refused.text)


def test_a_run_on_a_worker_registers_on_the_stack_and_its_bundle_is_fetched_by_version(
    team: Path, gated_repo: Path, *, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline deployed to the pool and started through the API: a worker runs it in its
    own checkout (a clone past the gate, so train to export run), logging to the stack's
    MLflow with the pipeline's account; the version lands in the server's registry with its
    evidence, and its bundle comes back from the server's artifact store by version."""
    # a model of its own: the permission test above registers MODEL with a champion
    checkout = copy_gated_repo(gated_repo, tmp_path / "worker", register={"model_name": E2E_MODEL})
    shutil.copytree(
        REPO / "flows", checkout / "flows", ignore=shutil.ignore_patterns("__pycache__")
    )
    # as the other pipeline runs: no MLflow or Prefect setting of this process's own
    env = pipeline_env(**_client_env(team), PREFECT_HOME=str(tmp_path / "home"))
    deploy = [sys.executable, "-m", "veiltune.cli", "deploy", "--name", "e2e", "--checkout", "."]
    done = subprocess.run(
        deploy, cwd=checkout, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    worker = subprocess.Popen(
        [sys.executable, "-m", "prefect", "worker", "start", "--pool", "veiltune"],
        env=env | {"PREFECT_WORKER_QUERY_SECONDS": "1"},
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        run = subprocess.run(
            [sys.executable, "-c", RUN_PIPELINE], env=env, capture_output=True, text=True,
            timeout=RUNS_DEADLINE_S + 60,
        )  # fmt: skip
    finally:
        _stop_worker(worker)
    assert run.returncode == 0, run.stderr[-3000:]
    state, _, message = run.stdout.strip().splitlines()[-1].partition(" ")
    assert state == "COMPLETED", message

    from mlflow.tracking import MlflowClient

    from components.export.signing import read_private_key
    from components.register.evidence import read_version_evidence

    for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.setenv(variable, env[variable])  # the stack, as the pipeline's account
    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    version = client.get_model_version(E2E_MODEL, "1")
    assert version.tags["gate_passed"] == "true", version.tags
    assert {"bundle.manifest_sha256", "bundle.signature", "bundle.run_id"} <= set(version.tags)
    # its signed evidence, read back from the server's artifact store, holds; champion or not
    # is the rule's call on it (the tiny model's membership audit may fail)
    key = read_private_key(checkout / ".veiltune" / "keys" / "signing_key.pem").public_key()
    evidence = read_version_evidence(client, version, trusted=key)
    assert evidence.problem is None and evidence.gate_passed, evidence.checks
    register = json.loads((checkout / "metrics" / "register.json").read_text())
    assert register["champion"] == ("champion" in version.aliases) == (not evidence.refusals())
    fetched = subprocess.run(
        [sys.executable, "-m", "veiltune.cli", "export", "--fetch", "1", "--output",
         str(tmp_path / "v1")],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    assert json.loads(fetched.stdout)["against_registry"] is True
    assert (tmp_path / "v1" / "manifest.json").read_bytes() == (
        checkout / "exports" / "bundle" / "manifest.json"
    ).read_bytes()


def _stop_worker(worker: subprocess.Popen[bytes]) -> None:
    """Stop a worker and its children for good: a worker left polling would take the next
    test's runs from the pool."""
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:  # a loaded machine: it may still be polling
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


TINY_FLOW = """
import os
from pathlib import Path

from prefect import flow
from prefect.runtime import flow_run


@flow
def tiny(out: str) -> None:
    (Path(out) / f"{flow_run.id}.{os.environ['WORKER_NAME']}.{os.getpid()}").touch()
"""


def test_two_workers_on_the_pool_run_each_flow_run_once(team: Path, tmp_path: Path) -> None:
    source, out = Path(tempfile.mkdtemp(prefix="veiltune-flow-")), tmp_path / "out"
    source.chmod(0o755)
    (source / "tiny.py").write_text(TINY_FLOW, encoding="utf-8")
    out.mkdir()
    env = os.environ | _client_env(team) | {"PREFECT_HOME": str(tmp_path / "home")}
    deploy = (
        "from prefect import flow\n"
        f"flow.from_source(source={str(source)!r}, entrypoint='tiny.py:tiny').deploy("
        "name='tiny', work_pool_name='veiltune', print_next_steps=False)"
    )
    done = subprocess.run(
        [sys.executable, "-c", deploy], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", "veiltune"],
            # polling every second, not every 10: the runs start sooner, and the two workers
            # race for each of them more often
            env=env | {"WORKER_NAME": name, "PREFECT_WORKER_QUERY_SECONDS": "1"},
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for name in ("a", "b")
    ]
    try:
        runs = subprocess.run(
            [sys.executable, "-c", RUN_AND_WAIT, str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=RUNS_DEADLINE_S + 60,
        )
    finally:
        for worker in workers:
            _stop_worker(worker)
        shutil.rmtree(source)
    assert runs.returncode == 0, runs.stderr[-2000:]
    states, ids = runs.stdout.split()[:4], runs.stdout.split()[4:]
    assert states == ["COMPLETED"] * 4
    ran = [name.split(".")[0] for name in os.listdir(out)]
    assert sorted(ran) == sorted(ids)  # each run once, by one of the workers


# How long the four runs may take to end. About 70 s alone; the full suite once ran it beside
# a training test on 2 cores, and 240 s were not enough (2026-11-28): the stack (MLflow and
# its job consumer, Prefect's server, two workers, a process per run) shares those cores.
RUNS_DEADLINE_S = 600
RUN_AND_WAIT = f"""
import asyncio, sys, time
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment

runs = [run_deployment("tiny/tiny", parameters={{"out": sys.argv[1]}}, timeout=0) for _ in range(4)]

async def final():
    deadline = time.monotonic() + {RUNS_DEADLINE_S}
    async with get_client() as client:
        while True:
            states = [(await client.read_flow_run(r.id)).state for r in runs]
            if all(s.is_final() for s in states) or time.monotonic() > deadline:
                return states
            await asyncio.sleep(1)

print(*[s.type.value for s in asyncio.run(final())], *[str(r.id) for r in runs])
"""


RUN_PIPELINE = f"""
from prefect.deployments import run_deployment

stages = ["review", "train", "evaluate", "audit", "register", "export"]  # past the gate
run = run_deployment(
    "veiltune-pipeline/e2e", parameters={{"stages": stages}}, timeout={RUNS_DEADLINE_S},
    poll_interval=2,
)
print(run.state.type.value, run.state.message or "")
"""


def test_up_after_down_starts_the_same_stack_on_its_data(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "pipeline")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", stack.credentials(team)["pipeline"])
    MlflowClient(tracking_uri=_uri(team)).create_experiment("before-the-stop")
    before = stack.status(team)
    salt, env = (team / "salt").read_text(), (team / "pipeline.env").read_text()
    stopped = stack.down(team)
    assert [stopped[name] for name in ("postgres", "mlflow", "prefect")] == ["stopped"] * 3
    (team / "dvc-remote").rmdir()  # as a stack made before the remote was
    assert stack.up(team) == before  # the same ports, the same accounts
    assert (team / "dvc-remote").is_dir()
    # the same salt (the workers' run caches match it) and the same client environment
    assert (team / "salt").read_text() == salt and (team / "pipeline.env").read_text() == env
    assert MlflowClient(tracking_uri=_uri(team)).get_experiment_by_name("before-the-stop")
