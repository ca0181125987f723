"""What every stage entry shares: its view of params, path checks, MLflow logging, and the
metrics and splits earlier stages wrote. The entries themselves are
``components/<stage>/stage.py: run(config, context)``; the registry (``components.stages``)
builds the context and calls them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from components.core import paths, tracking
from components.core.atomic import check_input_file, check_output_file
from components.core.corpus import Conversation
from components.core.errors import InputError, ParamsError

C = TypeVar("C")

Metrics = dict[str, Any]


@dataclass(frozen=True)
class StageContext:
    """A stage's view of the run: the params file and every stage's validated config.

    A stage reads its own config as ``run``'s first argument; another stage's settings (the
    dotted keys its ``dvc.yaml`` entry lists under ``params``) through :meth:`setting` or,
    for an upstream stage whose config class it imports, :meth:`config`; another stage's
    metrics through :meth:`metrics`. For a stage run by the registry (``stage`` set), each
    of these is checked against what its registry entry declares (``reads``: its own key
    and the keys it lists; ``inputs``: the files it lists): what a stage reads is what
    dvc.yaml says it reads.
    """

    params_path: Path
    params: Mapping[str, Any]  # params.yaml as read (validated)
    configs: Mapping[str, Any]  # stage name -> its config dataclass, defaults filled in
    order: tuple[str, ...] = ()  # every stage's name, in pipeline order
    root: Path | None = None  # where relative paths resolve, if not params.yaml's folder
    stage: str | None = None  # the stage running (its reads are checked), or None
    reads: tuple[str, ...] = ()  # the params keys it declares: its own, then others'
    inputs: frozenset[str] = frozenset()  # the files and folders it declares it reads

    @property
    def base_dir(self) -> Path:
        """The folder relative paths in params are read from: params.yaml's own, or
        ``root`` for the built-in defaults (``components.stages.default_context``)."""
        return self.root if self.root is not None else self.params_path.parent

    @property
    def experiment(self) -> str:
        """The MLflow experiment every stage logs to (``register.experiment``: every stage
        reads it, none declares it)."""
        return str(self.configs["register"].experiment)

    def config(self, cls: type[C]) -> C:
        """The validated config of the stage whose dataclass is ``cls``."""
        section: str = getattr(cls, "SECTION", "")
        config = self.configs.get(section)
        if not isinstance(config, cls):
            raise ParamsError(f"params: no section '{section}' for {cls.__name__}")
        if self.stage is not None and not any(
            r == section or r.startswith(f"{section}.") for r in self.reads
        ):
            self._undeclared(f"params key '{section}'")
        return config

    def stages_before(self, name: str) -> tuple[str, ...]:
        """The stages that run before ``name``, in order."""
        return self.order[: self.order.index(name)]

    def setting(self, dotted: str) -> Any:
        """One validated value by its dotted key, e.g. ``gate.threshold``."""
        if self.stage is not None and not any(
            dotted == r or dotted.startswith(f"{r}.") for r in self.reads
        ):
            self._undeclared(f"params key '{dotted}'")
        stage, *keys = dotted.split(".")
        value: Any = self.configs[stage]
        for key in keys:
            value = getattr(value, key)
        return value

    def metrics(self, stage: str) -> Metrics:
        """What an earlier stage wrote to ``metrics/<stage>.json``."""
        path = paths.metrics_file(stage)
        if self.stage is not None and path.as_posix() not in self.inputs:
            self._undeclared(str(path))
        return read_metrics(stage)

    def _undeclared(self, what: str) -> None:
        raise UndeclaredRead(
            f"stage {self.stage} reads {what}, which its entry in components/stages.py does "
            "not declare (and so dvc.yaml does not list): declare it there, then make dvc-yaml"
        )


class UndeclaredRead(RuntimeError):
    """A stage read what its registry entry does not declare: a bug in veiltune, not in the
    user's input."""


def check_paths(inputs: Sequence[Path], outputs: Sequence[Path | None], raw: bool = False) -> None:
    """Refuse missing inputs and unsafe outputs before any work (or model loading) starts.

    An output must name a file: not ``.``, an empty name or an existing folder, not one of
    the inputs or another output, not what no command may write over (``params.yaml``, the
    signing key, ``data/raw``: ``components.core.workspace``; ``raw`` outputs hold raw text
    and may lie in a folder of their own there), in an existing folder unless the folder is
    one of the pipeline's own (``paths.OUTPUT_ROOTS``).
    """
    for path in inputs:
        check_input_file(path)
    named = [o for o in outputs if o is not None]
    for i, output in enumerate(named):
        check_output_file(
            output,
            [*inputs, *named[:i]],
            create_parent=paths.is_pipeline_output(output),
            raw=raw,
        )


def log_stage(stage: str, config: object, metrics: Metrics, artifacts: Sequence[Path]) -> None:
    """Log a stage's params, numeric metrics and artifacts to the active MLflow run."""
    import mlflow

    tracking.log_flat_params(stage, asdict(config) if is_dataclass(config) else {})  # type: ignore[arg-type]
    tracking.log_numeric_metrics(metrics)
    for artifact in artifacts:
        mlflow.log_artifact(str(artifact))


def read_metrics(stage: str) -> Metrics:
    """What an earlier stage wrote to ``metrics/<stage>.json``."""
    path = paths.metrics_file(stage)
    if not path.is_file():
        raise InputError(f"{path}: missing; run the {stage} stage first")
    data: Metrics = json.loads(path.read_text(encoding="utf-8"))
    return data


def split(conversations: Sequence[Conversation], name: str) -> list[Conversation]:
    """The conversations of one split (``train`` or ``heldout``) of ``data/splits.json``."""
    if not paths.SPLITS.is_file():
        raise InputError(f"{paths.SPLITS}: missing; run the ingest stage first")
    ids = set(json.loads(paths.SPLITS.read_text(encoding="utf-8"))[name])
    return [c for c in conversations if c.id in ids]
