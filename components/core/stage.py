"""What every stage entry shares: its view of params, path checks, MLflow logging, and the
metrics and splits earlier stages wrote. The entries themselves are
``components/<stage>/stage.py: run(config, context)``; the registry (``components.stages``)
builds the context and calls them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from components.core import paths, tracking
from components.core.atomic import check_input_file, check_output_file
from components.core.corpus import Conversation
from components.core.errors import InputError, ParamsError
from components.core.jsonio import write_json_atomic

C = TypeVar("C")

Metrics = dict[str, Any]


@dataclass(frozen=True)
class StageContext:
    """A stage's view of the run: the workspace, the params file and every stage's validated
    config.

    A stage reads its own config as ``run``'s first argument; another stage's settings (the
    dotted keys its ``dvc.yaml`` entry lists under ``params``) through :meth:`setting` or,
    for an upstream stage whose config class it imports, :meth:`config`; another stage's
    metrics through :meth:`metrics`; the files and folders it reads and writes through
    :meth:`input` and :meth:`output`, which resolve the workspace-relative paths of its
    registry entry against ``workspace``, never the working directory. For a
    stage run by the registry (``stage`` set), each of these is checked against what its
    registry entry declares (``reads``: its own key and the keys it lists; ``inputs`` and
    ``outputs``: the files it lists): what a stage reads and writes is what dvc.yaml says.
    """

    params_path: Path
    params: Mapping[str, Any]  # params.yaml as read (validated)
    configs: Mapping[str, Any]  # stage name -> its config dataclass, defaults filled in
    order: tuple[str, ...] = ()  # every stage's name, in pipeline order
    root: Path | None = None  # where relative paths resolve, if not params.yaml's folder
    # The folder holding the pipeline's files (data/, models/, metrics/, the MLflow store):
    # the CLI's is the working directory, where `dvc repro` runs it; a caller names another.
    workspace: Path = Path(".")
    stage: str | None = None  # the stage running (its reads are checked), or None
    reads: tuple[str, ...] = ()  # the params keys it declares: its own, then others'
    inputs: frozenset[str] = frozenset()  # what it declares it reads (its outputs too)
    outputs: frozenset[str] = frozenset()  # what it declares it writes

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
        return read_metrics(self.input(paths.metrics_file(stage)), stage)

    def input(self, path: Path) -> Path:
        """A file or folder the stage reads (a workspace-relative path of its registry
        entry's, or one inside a folder it lists), in the workspace."""
        return self._in_workspace(path, self.inputs, verb="reads")

    def output(self, path: Path) -> Path:
        """A file or folder the stage writes (as :meth:`input`, of its entry's outputs)."""
        return self._in_workspace(path, self.outputs, verb="writes")

    def mlflow_run(self) -> AbstractContextManager[Any]:
        """The running stage's nested MLflow run, in the workspace's store
        (``components.core.tracking.stage_run``)."""
        return tracking.stage_run(self._running(), self.experiment, root=self.workspace)

    def record(
        self,
        metrics: Metrics,
        *,
        artifacts: Sequence[Path] = (),
        logged: Metrics | None = None,
    ) -> None:
        """Record what the running stage found, inside its :meth:`mlflow_run`: ``metrics``
        written atomically to its metrics file (``metrics/<stage>.json``) where its entry
        declares one (all but export's), and on the run its config as params, the numbers of
        ``logged`` (default: ``metrics``) as metrics, the metrics file and ``artifacts`` as
        artifacts."""
        stage = self._running()
        written = []
        if paths.metrics_file(stage).as_posix() in self.outputs:
            written.append(self.output(paths.metrics_file(stage)))
            write_json_atomic(written[0], metrics)
        _log_stage(
            stage,
            self.configs[stage],
            metrics=metrics if logged is None else logged,
            artifacts=[*written, *artifacts],
        )

    def _running(self) -> str:
        if self.stage is None:
            raise UndeclaredRead("no stage is running: run it through components.stages")
        return self.stage

    def _in_workspace(self, path: Path, declared: frozenset[str], *, verb: str) -> Path:
        if self.stage is not None and not _declared(path, declared):
            self._undeclared(str(path), verb)
        return self.workspace / path

    def _undeclared(self, what: str, verb: str = "reads") -> None:
        raise UndeclaredRead(
            f"stage {self.stage} {verb} {what}, which its entry in components/stages.py does "
            "not declare (and so dvc.yaml does not list): declare it there, then make dvc-yaml"
        )


def _declared(path: Path, declared: frozenset[str]) -> bool:
    """Whether ``path`` is one of ``declared`` or lies in a folder among them."""
    return path.as_posix() in declared or any(path.is_relative_to(d) for d in declared)


class UnwrittenOutput(RuntimeError):
    """A stage returned without writing what its registry entry declares: a bug in veiltune,
    which DVC would report as a missing output after the stage ran."""


class UndeclaredRead(RuntimeError):
    """A stage read or wrote what its registry entry does not declare: a bug in veiltune,
    not in the user's input."""


def check_paths(
    inputs: Sequence[Path],
    outputs: Sequence[Path | None],
    *,
    raw: bool = False,
    root: Path = Path("."),
) -> None:
    """Refuse missing inputs and unsafe outputs before any work (or model loading) starts.

    An output must name a file: not ``.``, an empty name or an existing folder, not one of
    the inputs or another output, not what no command may write over (``params.yaml``, the
    signing key, ``data/raw``: ``components.core.workspace``; ``raw`` outputs hold raw text
    and may lie in a folder of their own there), in an existing folder unless the folder is
    one of the pipeline's own (``paths.OUTPUT_ROOTS`` of the workspace ``root``).
    """
    for path in inputs:
        check_input_file(path)
    named = [o for o in outputs if o is not None]
    for i, output in enumerate(named):
        check_output_file(
            output,
            [*inputs, *named[:i]],
            create_parent=paths.is_pipeline_output(output, root),
            raw=raw,
        )


def _log_stage(stage: str, config: object, *, metrics: Metrics, artifacts: Sequence[Path]) -> None:
    """Log a stage's params, numeric metrics and artifacts to the active MLflow run."""
    import mlflow

    tracking.log_flat_params(stage, asdict(config) if is_dataclass(config) else {})  # type: ignore[arg-type]
    tracking.log_numeric_metrics(metrics)
    for artifact in artifacts:
        mlflow.log_artifact(str(artifact))


def read_metrics(path: Path, stage: str) -> Metrics:
    """What an earlier stage wrote to its metrics file ``path``."""
    if not path.is_file():
        raise InputError(f"{path}: missing; run the {stage} stage first")
    data: Metrics = json.loads(path.read_text(encoding="utf-8"))
    return data


def split(conversations: Sequence[Conversation], name: str, *, splits: Path) -> list[Conversation]:
    """The conversations of one split (``train`` or ``heldout``) of the splits file
    (``data/splits.json``)."""
    if not splits.is_file():
        raise InputError(f"{splits}: missing; run the ingest stage first")
    ids = set(json.loads(splits.read_text(encoding="utf-8"))[name])
    return [c for c in conversations if c.id in ids]
