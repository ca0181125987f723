"""The registered model away from where it was trained: loaded by its ``models:/`` URI from
another folder with nothing copied, in an interpreter where veiltune is not installed (its
pyfunc's modules travel with it), served over HTTP by ``mlflow models serve``, and refusing
a base model whose files were changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.core.errors import BackendError
from components.core.lineage import sha256_tree
from components.register.promotion import register_version
from components.register.registry import AuditResult, UtilityRule
from components.register.shared_base import describe_base_model
from components.train.adapter import generation_settings
from components.train.config import GenerationSettings
from components.train.generation import write_generation_settings
from components.train.pyfunc import (
    DEFAULT_PARAMS,
    MAX_ROWS,
    MAX_TRANSCRIPT_CHARS,
    inference_settings,
    task_requests,
)
from tests.register.fixtures import PRODUCER, metrics_files

TRANSCRIPT = (
    "Agent: Thank you for calling, this is [PERSON_NAME_1].\n"
    "Customer: My card was charged twice for one order.\n"
    "Agent: I see it; the second charge is refunded within three days."
)
SERVE_TIMEOUT_S = 90
SAVED_GENERATION = GenerationSettings(repetition_penalty=1.4, no_repeat_ngram_size=3)


@dataclass(frozen=True)
class Store:
    tracking_uri: str
    model_uri: str
    base_run_id: str
    base_sha256: str


@pytest.fixture(scope="module")
def adapter(
    tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path, *, lora_adapter_dir: Path
) -> Path:
    """The untrained adapter with its tokenizer and generation settings beside it, as the
    train stage saves one."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("adapter") / "adapter"
    shutil.copytree(lora_adapter_dir, folder)
    AutoTokenizer.from_pretrained(base_model_dir).save_pretrained(folder)
    write_generation_settings(folder, SAVED_GENERATION)
    return folder


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path, *, adapter: Path
) -> Iterator[Store]:
    """One version registered on a temp sqlite store, from its own working folder."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from components.core.tracking import configure_tracking

    home = tmp_path_factory.mktemp("registry")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        patch.setenv("VEILTUNE_MODEL_CACHE", str(home / "cache"))
        experiment = configure_tracking("served")
        base = describe_base_model(base_model_dir, "bundled:smollm2")
        with mlflow.start_run(experiment_id=experiment):
            version = register_version(
                MlflowClient(),
                adapter,
                base=base,
                model_name="m",
                tags=AuditResult(True, {}).to_tags(),
                files=metrics_files(),
                rule=UtilityRule("summary.rouge1"),
                model_card="# m\n",
                key=PRODUCER,
            )
        [base_run] = MlflowClient().search_runs([experiment], "tags.`veiltune.kind` = 'base_model'")
        yield Store(mlflow.get_tracking_uri(), version.model_uri, base_run.info.run_id, base.sha256)


@pytest.fixture
def elsewhere(store: Store, tmp_path: Path, *, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder that reaches the store only through its tracking URI, with an
    empty model cache: nothing of the registering folder is copied or reused."""
    import mlflow

    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.tracking_uri)
    monkeypatch.setenv("VEILTUNE_MODEL_CACHE", str(tmp_path / "cache"))
    mlflow.set_tracking_uri(store.tracking_uri)
    return folder


def test_the_version_loads_from_another_folder_and_answers_a_task_by_name(
    store: Store, elsewhere: Path
) -> None:
    import mlflow
    import pandas as pd

    model = mlflow.pyfunc.load_model(store.model_uri)
    # The base model by name and content hash, fetched through the store: no local path.
    assert model.model_config == {
        "base_model": {
            "name": "bundled:smollm2",
            "sha256": store.base_sha256,
            "uri": f"runs:/{store.base_run_id}/base_model",
        }
    }
    assert model.metadata.get_input_schema().input_names() == ["task", "transcript"]
    params = model.metadata.get_params_schema()
    assert {p.name: p.default for p in params.params} == {
        "max_new_tokens": 64,
        "max_prompt_tokens": 768,
    }
    assert model.metadata.saved_input_example_info is not None

    request = pd.DataFrame([{"task": "summary", "transcript": TRANSCRIPT}])
    short = model.predict(request, params={"max_new_tokens": 2})
    longer = model.predict(request, params={"max_new_tokens": 12})
    assert len(short) == len(longer) == 1 and isinstance(longer[0], str)
    tokenizer = model.unwrap_python_model().tokenizer
    assert len(tokenizer(short[0], add_special_tokens=False)["input_ids"]) <= 3
    # It answers as evaluate and the audits did: with the settings saved beside the adapter.
    assert generation_settings(model.unwrap_python_model().model) == SAVED_GENERATION
    assert len(longer[0]) > len(short[0])  # the params are honoured, not ignored

    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException, match="unknown task 'translate'; the tasks are: summary"):
        model.predict(pd.DataFrame([{"task": "translate", "transcript": TRANSCRIPT}]))


# Run with -S: no site-packages processing, so no .pth file puts veiltune (installed
# editable) on the path; PYTHONPATH names the site-packages folders themselves.
WITHOUT_VEILTUNE = """
import importlib.util, json, sys
assert importlib.util.find_spec("components") is None, "veiltune is importable"
import mlflow, pandas as pd
model = mlflow.pyfunc.load_model(sys.argv[1])
request = pd.DataFrame([{"task": "summary", "transcript": "Agent: Hello.\\nCustomer: Hi."}])
answer = model.predict(request, params={"max_new_tokens": 2})
loaded = {m: mod.__file__ for m, mod in sys.modules.items() if m.split(".")[0] == "components"}
print(json.dumps({"answer": list(answer), "modules": loaded}))
"""


def test_the_version_loads_where_veiltune_is_not_installed(store: Store, elsewhere: Path) -> None:
    import site

    packages = [p for p in site.getsitepackages() if Path(p).is_dir()]
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(packages),
        "MLFLOW_TRACKING_URI": store.tracking_uri,
    }
    command = [sys.executable, "-S", "-c", WITHOUT_VEILTUNE, store.model_uri]
    done = subprocess.run(
        command, cwd=elsewhere, env=environment, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(result["answer"]) == 1 and isinstance(result["answer"][0], str)
    # Every veiltune module it ran came from the version's own code/ folder.
    assert "components.train.pyfunc" in result["modules"]
    assert all("/code/components/" in path for path in result["modules"].values())


def test_a_base_model_changed_by_one_byte_is_refused(store: Store, elsewhere: Path) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    artifacts = MlflowClient().get_run(store.base_run_id).info.artifact_uri
    config = Path(artifacts.removeprefix("file://")) / "base_model" / "config.json"
    original = config.read_bytes()
    tampered = original.replace(b"{", b"[", 1)
    try:
        config.write_bytes(tampered)
        found = sha256_tree(config.parent)
        with pytest.raises(BackendError) as error:
            mlflow.pyfunc.load_model(store.model_uri)
        assert found in str(error.value) and store.base_sha256 in str(error.value)
        assert "refusing to load" in str(error.value)
    finally:
        config.write_bytes(original)
    assert not (elsewhere.parent / "cache" / "base_models" / store.base_sha256).exists()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_new_tokens": 0}, "max_new_tokens: an integer from 1 to 512, got 0"),
        ({"max_new_tokens": -3}, "max_new_tokens: an integer from 1 to 512, got -3"),
        ({"max_new_tokens": 10**9}, "max_new_tokens: an integer from 1 to 512, got 1000000000"),
        ({"max_prompt_tokens": 0}, "max_prompt_tokens: an integer from 16 to 4096, got 0"),
        ({"max_prompt_tokens": -5}, "max_prompt_tokens: an integer from 16 to 4096, got -5"),
        ({"max_new_tokens": 2.5}, "max_new_tokens: an integer from 1 to 512, got 2.5"),
        ({"max_new_tokens": True}, "max_new_tokens: an integer from 1 to 512, got True"),
    ],
)
def test_inference_params_outside_their_range_are_a_400_naming_them(
    params: dict[str, Any], message: str
) -> None:
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException, match=re.escape(message)) as error:
        inference_settings(params)
    assert error.value.get_http_status_code() == 400


def test_inference_params_within_their_range_are_taken() -> None:
    assert inference_settings(None) == DEFAULT_PARAMS
    assert inference_settings({"max_new_tokens": 512, "max_prompt_tokens": 16}) == {
        "max_new_tokens": 512,
        "max_prompt_tokens": 16,
    }


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"task": "summary", "transcript": "x" * (MAX_TRANSCRIPT_CHARS + 1)}],
            f"row 0: transcript: at most {MAX_TRANSCRIPT_CHARS} characters, got "
            f"{MAX_TRANSCRIPT_CHARS + 1}",
        ),
        (
            [{"task": "summary", "transcript": "hi"}] * (MAX_ROWS + 1),
            f"at most {MAX_ROWS} rows a request, got {MAX_ROWS + 1}",
        ),
        ([{"task": "summary", "transcript": None}], "row 0: transcript: a string, got None"),
    ],
    ids=["3 MB transcript", "too many rows", "no transcript"],
)
def test_requests_beyond_the_limits_are_a_400_naming_the_field(
    rows: list[dict[str, Any]], message: str
) -> None:
    import pandas as pd
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException, match=re.escape(message)) as error:
        task_requests(pd.DataFrame(rows))
    assert error.value.get_http_status_code() == 400
    assert len(task_requests(pd.DataFrame(rows[:MAX_ROWS]).assign(transcript="hi"))) == min(
        len(rows), MAX_ROWS
    )


def test_mlflow_models_serve_answers_over_http(store: Store, elsewhere: Path) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "mlflow", "models", "serve", "-m", store.model_uri]
    command += ["--env-manager", "local", "-h", "127.0.0.1", "-p", str(port)]
    log = elsewhere / "serve.log"
    # As from an activated environment: the server starts `uvicorn` from its PATH.
    path = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
    environment = {**os.environ, "PATH": path}
    with log.open("wb") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=environment)
        try:
            _wait_until_up(port, server, log=log)
            body = {
                "dataframe_records": [{"task": "summary", "transcript": TRANSCRIPT}],
                "params": {"max_new_tokens": 4},
            }
            answer = _post(f"http://127.0.0.1:{port}/invocations", body)
            # a bad param is the client's error, named (it was MLflow's generic answer to
            # any error in predict: 'an unexpected error while evaluating the model')
            with pytest.raises(urllib.error.HTTPError) as refused:
                _post(
                    f"http://127.0.0.1:{port}/invocations",
                    {**body, "params": {"max_new_tokens": 0}},
                )
            status, reply = refused.value.code, json.loads(refused.value.read())
        finally:
            server.terminate()
            server.wait(timeout=30)
    [prediction] = answer["predictions"]
    assert isinstance(prediction, str) and prediction
    assert status == 400 and reply["error_code"] == "INVALID_PARAMETER_VALUE"
    assert "max_new_tokens: an integer from 1 to 512, got 0" in reply["message"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_up(port: int, server: subprocess.Popen[bytes], *, log: Path) -> None:
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"mlflow models serve exited {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    pytest.fail(f"mlflow models serve did not answer in {SERVE_TIMEOUT_S} s:\n{log.read_text()}")


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())
