"""The registered model's MLflow pyfunc: it answers the tasks of ``TASK_PROMPTS`` by name.

Each version carries its adapter as an artifact. The base model is named by its content hash
and logged once, in a run of its own that every version on it points to (``runs:/…``); at load
it is fetched into a local cache (``$VEILTUNE_MODEL_CACHE``, else ``~/.cache/veiltune``) and
hashed again, and a base whose hash differs from the one registered is refused. Nothing in a
version names a path of the machine that registered it, so it loads wherever the tracking
server and artifact store can be reached.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from mlflow.pyfunc import PythonModel

from components.core.errors import BackendError
from components.core.lineage import sha256_tree
from components.train.adapter import generate, load_adapter
from components.train.lora import read_label_options
from components.train.tasks import TASK_PROMPTS, fit_prompt, task_prompt

if TYPE_CHECKING:
    from mlflow.models import ModelSignature

CACHE_ENV = "VEILTUNE_MODEL_CACHE"
BASE_ARTIFACT = "base_model"  # the artifact path of the base model in its run
# Inference params (the signature's params schema), with their defaults.
DEFAULT_PARAMS = {"max_new_tokens": 64, "max_prompt_tokens": 768}
EXAMPLE_TRANSCRIPT = (
    "Agent: Thank you for calling, this is [PERSON_NAME_1]. How can I help?\n"
    "Customer: Hi, I moved last week and my parcel still goes to my old address.\n"
    "Agent: I have updated the delivery address; the next parcel goes to the new one.\n"
    "Customer: Great, thank you."
)


@dataclass(frozen=True)
class BaseModelRef:
    """The base model a version runs on: its name, content hash and MLflow artifact URI."""

    name: str
    sha256: str
    uri: str  # runs:/<run id>/base_model: resolved through the tracking server


@dataclass(frozen=True)
class TaskRequest:
    task: str
    transcript: str


def pyfunc_config(base: BaseModelRef) -> dict[str, Any]:
    """The ``model_config`` of a registered version: the base model's identity, no path."""
    return {"base_model": asdict(base)}


def pyfunc_signature() -> ModelSignature:
    """Input ``task`` and ``transcript`` columns, one answer per row, and the params."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, ParamSchema, ParamSpec, Schema

    return ModelSignature(
        inputs=Schema([ColSpec("string", "task"), ColSpec("string", "transcript")]),
        outputs=Schema([ColSpec("string")]),
        params=ParamSchema([ParamSpec(k, "long", v) for k, v in DEFAULT_PARAMS.items()]),
    )


def pyfunc_input_example() -> tuple[pd.DataFrame, dict[str, int]]:
    """A summary request with a short answer (MLflow runs it when the version is logged)."""
    return pd.DataFrame([{"task": "summary", "transcript": EXAMPLE_TRANSCRIPT}]), {
        "max_new_tokens": 16
    }


class AdapterPyfunc(PythonModel):
    """The adapter on its hash-checked base model, answering ``{"task", "transcript"}`` rows."""

    def load_context(self, context: Any) -> None:
        config = context.model_config or {}
        if "base_model" not in config or not isinstance(config["base_model"], Mapping):
            raise BackendError(
                "this model version names no base model by hash (registered before base "
                "models were shared); register its adapter again"
            )
        base = BaseModelRef(**config["base_model"])
        adapter = Path(context.artifacts["adapter"])
        self.label_options = read_label_options(adapter)
        self.model, self.tokenizer = load_adapter(base_model_folder(base), adapter)

    # A DataFrame hint: MLflow infers no schema from it (the logged signature holds it).
    def predict(
        self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None
    ) -> list[str]:
        settings = {**DEFAULT_PARAMS, **{k: int(v) for k, v in (params or {}).items()}}
        prompts = [
            fit_prompt(
                task_prompt(r.task, r.transcript, self.label_options),
                self.tokenizer,
                settings["max_prompt_tokens"],
            )
            for r in task_requests(model_input)
        ]
        return generate(self.model, self.tokenizer, prompts, settings["max_new_tokens"])


def task_requests(model_input: Any) -> list[TaskRequest]:
    """The rows asked: a DataFrame (what MLflow passes), a mapping or a list of mappings.

    Raises:
        MlflowException: a row has no ``task``/``transcript`` or names an unknown task
            (a 400 for a served model).
    """
    from mlflow.exceptions import MlflowException

    if hasattr(model_input, "to_dict"):
        rows = model_input.to_dict(orient="records")
    elif isinstance(model_input, Mapping):
        rows = [model_input]
    else:
        rows = list(model_input)
    requests = []
    for row in rows:
        if not isinstance(row, Mapping) or not {"task", "transcript"} <= set(row):
            raise MlflowException.invalid_parameter_value(
                'each input row needs "task" and "transcript"'
            )
        if row["task"] not in TASK_PROMPTS:
            raise MlflowException.invalid_parameter_value(
                f"unknown task {row['task']!r}; the tasks are: {', '.join(TASK_PROMPTS)}"
            )
        requests.append(TaskRequest(str(row["task"]), str(row["transcript"])))
    return requests


def base_model_folder(base: BaseModelRef) -> Path:
    """The base model's folder in the local cache, fetched on first use, its hash checked.

    Raises:
        BackendError: its files do not hash to ``base.sha256`` (a tampered or another model).
    """
    folder = cache_root() / base.sha256
    if not folder.is_dir():
        _fetch(base, folder)
    verify_base_model(folder, base)
    return folder


def verify_base_model(folder: Path, base: BaseModelRef) -> None:
    """Refuse a base model folder whose content hash is not the registered one."""
    found = sha256_tree(folder)
    if found != base.sha256:
        raise BackendError(
            f"base model {base.name} at {folder}: its files hash to sha256 {found}, the "
            f"registered version expects {base.sha256}; refusing to load another base model "
            "than the adapter was trained on (delete the folder to fetch it again)"
        )


def cache_root() -> Path:
    """Where fetched base models lie, one folder per content hash."""
    configured = os.environ.get(CACHE_ENV)
    root = Path(configured) if configured else Path.home() / ".cache" / "veiltune"
    return root / "base_models"


def _fetch(base: BaseModelRef, folder: Path) -> None:
    """Download the base model from the artifact store into ``folder`` (atomically: a
    download that fails or does not hash right leaves nothing in the cache)."""
    import mlflow

    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".fetch-") as work:
        fetched = Path(mlflow.artifacts.download_artifacts(artifact_uri=base.uri, dst_path=work))
        verify_base_model(fetched, base)
        if not folder.exists():  # another process may have fetched it meanwhile
            shutil.move(str(fetched), folder)
