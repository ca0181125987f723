"""The Prefect flow served as a deployment on a real Prefect server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.core.errors import ParamsError
from flows.pipeline import (
    _stage_list,
    parse_overrides,
    repro_stage,
    stage_command,
    stage_environment,
)
from flows.prefect_auth import ensure_auth_string
from tests.pipeline_repo import BIN, free_port, make_pipeline_repo, pipeline_env

TRIGGER = """
import json, sys
from prefect.deployments import run_deployment
run = run_deployment("veiltune-pipeline/veiltune-pipeline", parameters=json.loads(sys.argv[1]),
                     timeout=480, poll_interval=1)
print(json.dumps({"state": run.state.type.value, "message": run.state.message or "",
                  "id": str(run.id)}))
"""


def test_parse_overrides_reads_yaml_values() -> None:
    assert parse_overrides(["train.max_steps=5", "ingest.corpus_path=null", "a.b=x y"]) == {
        "train.max_steps": 5,
        "ingest.corpus_path": None,
        "a.b": "x y",
    }
    with pytest.raises(ParamsError, match="expected KEY=VALUE"):
        parse_overrides(["train.max_steps"])


def test_stages_run_in_pipeline_order_and_unknown_ones_are_refused() -> None:
    assert _stage_list(["train", "ingest"]) == ["ingest", "train"]
    with pytest.raises(ParamsError, match="unknown stage 'trian'"):
        _stage_list(["trian"])


def test_stages_run_through_this_interpreter_with_its_bin_first_on_path() -> None:
    assert stage_command("gate") == [sys.executable, "-m", "dvc", "repro", "--single-item", "gate"]
    env = stage_environment({"PATH": "/usr/bin:/bin", "HOME": "/h"}, "parent-run")
    assert env["PATH"] == f"{BIN}{os.pathsep}/usr/bin:/bin" and env["HOME"] == "/h"
    assert env["VEILTUNE_PARENT_RUN_ID"] == "parent-run"


def test_a_stage_runs_when_the_venv_is_not_on_path(tmp_path: Path) -> None:
    """`veiltune serve` started from a shell that never activated the venv: no `dvc` and no
    `veiltune` on PATH, for DVC or for the stage commands of dvc.yaml."""
    subprocess.run(
        [str(BIN / "dvc"), "init", "--no-scm", "-q"], cwd=tmp_path, check=True, env=pipeline_env()
    )
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  hello:\n    cmd: veiltune --help > help.txt\n    outs: [help.txt]\n"
    )
    bare = {k: v for k, v in pipeline_env().items() if k != "VIRTUAL_ENV"}
    bare["PATH"] = "/usr/bin:/bin"
    repro_stage("hello", stage_environment(bare, "parent-run"), cwd=tmp_path)
    assert "usage: veiltune" in (tmp_path / "help.txt").read_text()


def wait_until_healthy(url: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "prefect server exited"
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"prefect server not healthy after {seconds}s")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path
) -> Iterator[tuple[Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("prefect")
    repo = make_pipeline_repo(root, base_model_dir)
    port = free_port()
    auth = ensure_auth_string(root / ".prefect" / "auth")  # as infra/prefect/ui.sh does
    common = {
        "PREFECT_HOME": str(root / "prefect-home"),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
    }
    server_env = pipeline_env(
        **common, PREFECT_SERVER_API_AUTH_STRING=auth, PREFECT_LOGGING_LEVEL="WARNING"
    )
    # clients: serve, triggers. Serve polls for scheduled runs every second, not every 10.
    env = pipeline_env(**common, PREFECT_API_AUTH_STRING=auth, PREFECT_RUNNER_POLL_FREQUENCY="1")
    log = (root / "server.log").open("wb")
    server = subprocess.Popen(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        cwd=root,
        env=server_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    serve = None
    try:
        wait_until_healthy(env["PREFECT_API_URL"], server, 180)
        serve_log = (root / "serve.log").open("wb")
        serve = subprocess.Popen(
            [str(BIN / "veiltune"), "serve"],
            cwd=repo,
            env=env,
            stdout=serve_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        yield repo, env
    finally:
        if serve is not None:  # serve before server
            stop(serve)
        stop(server)
        log.close()


def trigger(env: dict[str, str], parameters: dict[str, object]) -> dict[str, str]:
    deadline = time.monotonic() + 120
    while True:  # the deployment appears once `veiltune serve` has registered it
        result = subprocess.run(
            [sys.executable, "-c", TRIGGER, json.dumps(parameters)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode == 0:
            return dict(json.loads(result.stdout.strip().splitlines()[-1]))
        if "ObjectNotFound" not in result.stderr or time.monotonic() > deadline:
            raise AssertionError(result.stderr[-3000:])
        time.sleep(2)


def api(env: dict[str, str], path: str, body: object, auth: str | None = None) -> tuple[int, Any]:
    """POST ``body`` to the Prefect API; with ``auth``, as HTTP basic auth."""
    request = urllib.request.Request(
        env["PREFECT_API_URL"] + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    if auth is not None:
        token = base64.b64encode(auth.encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None


def deployment_id(env: dict[str, str]) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # registered once `veiltune serve` is up
        status, found = api(env, "/deployments/filter", {}, env["PREFECT_API_AUTH_STRING"])
        assert status == 200, status
        if found:
            return str(found[0]["id"])
        time.sleep(2)
    raise AssertionError("deployment not registered after 120s")


def run_logs(env: dict[str, str], run_id: str, needle: str) -> list[str]:
    deadline = time.monotonic() + 60
    while True:  # logs reach the API in batches
        body = {"logs": {"flow_run_id": {"any_": [run_id]}}}
        status, logs = api(env, "/logs/filter", body, env["PREFECT_API_AUTH_STRING"])
        assert status == 200, status
        messages = [str(log["message"]) for log in logs]
        if any(needle in m for m in messages) or time.monotonic() > deadline:
            return messages
        time.sleep(2)


@pytest.mark.slow
def test_the_api_refuses_requests_without_the_auth_string(
    served: tuple[Path, dict[str, str]],
) -> None:
    _repo, env = served
    deployment = deployment_id(env)  # with the auth string: 200
    attack = {"parameters": {"stages": ["ingest"], "overrides": {"gate.threshold": 1000}}}
    for auth in (None, "veiltune:wrong-password", "", "admin:pass"):
        assert api(env, "/deployments/filter", {}, auth)[0] == 401, auth
        assert api(env, f"/deployments/{deployment}/create_flow_run", attack, auth)[0] == 401
    status, found = api(env, "/deployments/filter", {}, env["PREFECT_API_AUTH_STRING"])
    assert status == 200 and [d["name"] for d in found] == ["veiltune-pipeline"]


@pytest.mark.slow
def test_deployment_run_from_the_api_completes(served: tuple[Path, dict[str, str]]) -> None:
    repo, env = served
    state = trigger(env, {"stages": ["ingest"], "overrides": {"ingest.n_conversations": 6}})
    assert state["state"] == "COMPLETED", state
    ingested = json.loads((repo / "metrics" / "ingest.json").read_text())
    assert ingested["n_conversations"] - ingested["by_context"]["dialogue"] == 6  # + DialogSum
    assert "n_conversations: 6" in (repo / "params.yaml").read_text()
    logged = run_logs(env, state["id"], "override ingest.n_conversations")
    assert "override ingest.n_conversations: 14 -> 6" in logged, logged


@pytest.mark.slow
def test_a_deployment_run_may_not_override_a_privacy_control(
    served: tuple[Path, dict[str, str]],
) -> None:
    repo, env = served
    before = (repo / "params.yaml").read_text()
    overrides = {"ingest.n_conversations": 7, "gate.threshold": 1000}
    state = trigger(env, {"stages": ["ingest"], "overrides": overrides})
    assert state["state"] == "FAILED", state
    assert "'gate.threshold' refused" in state["message"], state
    assert "veiltune serve --allow-overrides gate" in state["message"], state
    assert (repo / "params.yaml").read_text() == before  # nothing written, not even ingest's


@pytest.mark.slow
def test_the_workspace_owner_may_override_a_privacy_control_from_the_command_line(
    served: tuple[Path, dict[str, str]],
) -> None:
    repo, env = served
    result = subprocess.run(
        [str(BIN / "veiltune"), "flow", "--stages", "ingest", "--set", "gate.threshold=4.5"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "threshold: 4.5" in (repo / "params.yaml").read_text()
    assert "override gate.threshold: 5.0 -> 4.5" in result.stderr


@pytest.mark.slow
def test_a_failing_stage_fails_the_run_with_its_own_message(
    served: tuple[Path, dict[str, str]],
) -> None:
    _repo, env = served
    state = trigger(env, {"stages": ["ingest"], "corpus": "missing.jsonl"})
    assert state["state"] == "FAILED", state
    assert (
        "stage ingest failed" in state["message"]
        and "missing.jsonl: no such file" in state["message"]
    )
