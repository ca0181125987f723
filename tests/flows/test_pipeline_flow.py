"""The Prefect flow served as a deployment on a real Prefect server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.errors import ParamsError
from flows.pipeline import _stage_list, parse_overrides
from tests.pipeline_repo import BIN, free_port, make_pipeline_repo, pipeline_env

TRIGGER = """
import json, sys
from prefect.deployments import run_deployment
run = run_deployment("veiltune-pipeline/veiltune-pipeline", parameters=json.loads(sys.argv[1]),
                     timeout=480)
print(json.dumps({"state": run.state.type.value, "message": run.state.message or ""}))
"""


def test_parse_overrides_reads_yaml_values() -> None:
    assert parse_overrides(["train.max_steps=5", "ingest.corpus_path=null", "a.b=x y"]) == {
        "train.max_steps": 5, "ingest.corpus_path": None, "a.b": "x y",
    }  # fmt: skip
    with pytest.raises(ParamsError, match="expected KEY=VALUE"):
        parse_overrides(["train.max_steps"])


def test_stages_run_in_pipeline_order_and_unknown_ones_are_refused() -> None:
    assert _stage_list(["train", "ingest"]) == ["ingest", "train"]
    with pytest.raises(ParamsError, match="unknown stage 'trian'"):
        _stage_list(["trian"])


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
    env = pipeline_env(
        PREFECT_HOME=str(root / "prefect-home"),
        PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
        PREFECT_LOGGING_LEVEL="WARNING",
    )
    log = (root / "server.log").open("wb")
    server = subprocess.Popen(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    serve = None
    try:
        wait_until_healthy(env["PREFECT_API_URL"], server, 180)
        serve_log = (root / "serve.log").open("wb")
        serve = subprocess.Popen(
            [str(BIN / "veiltune"), "serve"], cwd=repo, env=env, stdout=serve_log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
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
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode == 0:
            return dict(json.loads(result.stdout.strip().splitlines()[-1]))
        if "ObjectNotFound" not in result.stderr or time.monotonic() > deadline:
            raise AssertionError(result.stderr[-3000:])
        time.sleep(2)


@pytest.mark.slow
def test_deployment_run_from_the_api_completes(served: tuple[Path, dict[str, str]]) -> None:
    repo, env = served
    state = trigger(env, {"stages": ["ingest"], "overrides": {"ingest.n_conversations": 6}})
    assert state["state"] == "COMPLETED", state
    ingested = json.loads((repo / "metrics" / "ingest.json").read_text())
    assert ingested["n_conversations"] - ingested["by_context"]["dialogue"] == 6  # + DialogSum
    assert "n_conversations: 6" in (repo / "params.yaml").read_text()


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
