"""The registered model's MLflow pyfunc: it answers the tasks of ``TASK_PROMPTS`` by name.

Each version carries its adapter as an artifact. The base model is named by its content hash
and logged once, in a run of its own that every version on it points to (``runs:/…``); at load
it is fetched into a local cache (``$VEILTUNE_MODEL_CACHE``, else ``~/.cache/veiltune``) and
hashed again, and a base whose hash differs from the one registered is refused. Nothing in a
version names a path of the machine that registered it, so it loads wherever the tracking
server and artifact store can be reached.
"""

from __future__ import annotations

import numbers
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pandas as pd
from mlflow.pyfunc import PythonModel

from components.core.errors import BackendError
from components.core.lineage import sha256_tree
from components.train.adapter import generate, load_adapter
from components.train.session import read_label_options
from components.train.tasks import TASK_PROMPTS, fit_prompt, task_prompt

if TYPE_CHECKING:
    from mlflow.models import ModelSignature

CACHE_ENV = "VEILTUNE_MODEL_CACHE"
BASE_ARTIFACT = "base_model"  # the artifact path of the base model in its run
# Inference params (the signature's params schema), with their defaults.
DEFAULT_PARAMS = {"max_new_tokens": 64, "max_prompt_tokens": 768}
# What one request may ask; beyond it the answer is a 400 naming the field, before any work.
# A served model answers whoever reaches it: without caps, three rows of 3 MB were tokenized
# whole and a huge max_new_tokens generated for as long as it liked.
PARAM_RANGES = {
    "max_new_tokens": (1, 512),  # a summary or an action list is well under 512 tokens
    # 16: the floor evaluate.max_prompt_tokens has (an instruction and a little transcript);
    # 4,096: half the base model's 8,192-token context, which the answer shares
    "max_prompt_tokens": (16, 4096),
}
MAX_ROWS = 32  # conversations a request (the batch is generated at once)
# Characters of one transcript: a two-hour call is about 100,000. Longer ones would lose
# their middle anyway (max_prompt_tokens), after the cost of tokenizing them whole.
MAX_TRANSCRIPT_CHARS = 100_000
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
    def predict(  # noqa: PLR0917 (MLflow's signature)
        self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None
    ) -> list[str]:
        settings = inference_settings(params)
        prompts = [
            fit_prompt(
                task_prompt(r.task, r.transcript, options=self.label_options),
                self.tokenizer,
                max_tokens=settings["max_prompt_tokens"],
            )
            for r in task_requests(model_input)
        ]
        return generate(
            self.model, self.tokenizer, prompts=prompts, max_new_tokens=settings["max_new_tokens"]
        )


def inference_settings(params: Mapping[str, Any] | None) -> dict[str, int]:
    """``DEFAULT_PARAMS`` with a request's params over them, each within ``PARAM_RANGES``
    (a param of another name is left out, as MLflow leaves it out of a served request).

    Raises:
        MlflowException: a param that is not an integer within its range (a 400 for a
            served model), naming it.
    """
    settings = dict(DEFAULT_PARAMS)
    for name, (low, high) in PARAM_RANGES.items():
        value = (params or {}).get(name, settings[name])
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            _refuse(f"{name}: an integer from {low} to {high}, got {value!r}")
        if not low <= int(value) <= high:
            _refuse(f"{name}: an integer from {low} to {high}, got {value}")
        settings[name] = int(value)
    return settings


def task_requests(model_input: Any) -> list[TaskRequest]:
    """The rows asked: a DataFrame (what MLflow passes), a mapping or a list of mappings;
    at most ``MAX_ROWS``, each transcript at most ``MAX_TRANSCRIPT_CHARS``.

    Raises:
        MlflowException: too many rows, a row without ``task``/``transcript``, with an
            unknown task or a transcript that is not a string or is too long (a 400 for a
            served model), naming the row and the field.
    """
    if hasattr(model_input, "to_dict"):
        rows = model_input.to_dict(orient="records")
    elif isinstance(model_input, Mapping):
        rows = [model_input]
    else:
        rows = list(model_input)
    if len(rows) > MAX_ROWS:
        _refuse(f"at most {MAX_ROWS} rows a request, got {len(rows)}")
    return [_task_request(i, row) for i, row in enumerate(rows)]


def _task_request(index: int, row: Any) -> TaskRequest:
    if not isinstance(row, Mapping) or not {"task", "transcript"} <= set(row):
        _refuse('each input row needs "task" and "transcript"')
    if row["task"] not in TASK_PROMPTS:
        _refuse(f"unknown task {row['task']!r}; the tasks are: {', '.join(TASK_PROMPTS)}")
    transcript = row["transcript"]
    if not isinstance(transcript, str):
        _refuse(f"row {index}: transcript: a string, got {type(transcript).__name__}")
    if len(transcript) > MAX_TRANSCRIPT_CHARS:
        _refuse(
            f"row {index}: transcript: at most {MAX_TRANSCRIPT_CHARS} characters, got "
            f"{len(transcript)}"
        )
    return TaskRequest(str(row["task"]), transcript)


def _refuse(message: str) -> NoReturn:
    """An error a served model answers with 400 and this message: MLflow's scoring server
    takes the status from the error code (any other error in ``predict`` is answered with
    a generic message, "an unexpected error while evaluating the model")."""
    from mlflow.exceptions import MlflowException

    raise MlflowException.invalid_parameter_value(message)


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
