"""A stage's contract, as the registry (``components/stages.py``) declares it: its config,
entry and command, the params it reads, the files it reads and writes, its metrics and
plots, and how long the flow lets it run."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from components.core.stage import Metrics, StageContext


class StageEntry(Protocol):
    def __call__(self, config: Any, context: StageContext, /) -> Metrics: ...


@dataclass(frozen=True)
class Artifact:
    """A file or folder a stage reads or writes, as dvc.yaml lists it.

    Attributes:
        path: relative to the workspace.
        why: the comment beside it in dvc.yaml, where the reason is not obvious.
        cache: False keeps it out of DVC's cache (raw text; metrics, which git carries).
        persist: True keeps the stage out of DVC's run cache (raw outputs).
    """

    path: str
    why: str = ""
    cache: bool = True
    persist: bool = False


@dataclass(frozen=True)
class Plot:
    """A DVC plot of a file a stage writes: a metrics-folder file of its own (in the
    stage's ``plots``), or a file inside one of its output folders (``folder_plots``)."""

    path: str
    title: str | None = None
    x: str | None = None
    y: str | None = None
    template: str | None = None
    why: str = ""
    in_folder: bool = False  # inside an output folder: top-level, cached with the folder


def raw_out(path: Path, why: str = "") -> Artifact:
    """An output holding raw text: never in DVC's cache or its run cache."""
    return Artifact(path.as_posix(), why, cache=False, persist=True)


def artifact(path: Path | str, why: str = "") -> Artifact:
    """A file or folder a stage reads or writes, cached by DVC."""
    return Artifact(Path(path).as_posix(), why)


def metrics_out(path: Path, why: str = "") -> Artifact:
    """A metrics or plot file: in git (with dvc.lock), not DVC's cache."""
    return Artifact(path.as_posix(), why, cache=False)


HOUR = 3600


@dataclass(frozen=True)
class Stage:
    """One pipeline stage.

    Attributes:
        name: its key in ``dvc.yaml`` and ``params.yaml``, and its package under components/.
        help: one line for ``veiltune --help``.
        config: the dataclass of its ``params.yaml`` key.
        reads: other stages' params it reads (dotted keys, or a whole stage's key): what
            its ``dvc.yaml`` entry lists under ``params`` beside its own key.
        command: the CLI words that run it (``veiltune <command>``), also its dvc.yaml cmd.
        deps: the files and folders it reads (its code is found from its imports).
        optional: what it reads when present but cannot list as a dep, for no stage makes
            it (a command outside the pipeline does): not in dvc.yaml.
        outs: what it writes besides its metrics.
        metrics: its metrics files (``metrics/<name>.json``, and any other).
        plots: plot files it writes beside its metrics.
        folder_plots: plots of files inside its ``outs`` folders.
        timeout_s: how long the flow lets it run (the flow's ``timeouts`` overrides it).
        retries: how often the flow runs it again after a failure.
        always_changed: DVC runs it on every ``dvc repro`` (its effect is outside the
            workspace).
        notes: the comment above its command in dvc.yaml.
    """

    name: str
    help: str
    config: type
    reads: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    deps: tuple[Artifact, ...] = ()
    optional: tuple[Artifact, ...] = ()
    outs: tuple[Artifact, ...] = ()
    metrics: tuple[Artifact, ...] = ()
    plots: tuple[Plot, ...] = ()
    folder_plots: tuple[Plot, ...] = ()
    timeout_s: float = 0.5 * HOUR
    retries: int = 0
    always_changed: bool = False
    notes: str = ""

    @property
    def cli(self) -> tuple[str, ...]:
        return self.command or (self.name.replace("_", "-"),)

    @property
    def package(self) -> str:
        return f"components/{self.name}"

    @property
    def params(self) -> tuple[str, ...]:
        """What its dvc.yaml entry lists under ``params``: its own key, then ``reads``."""
        return (self.name, *self.reads)

    @property
    def shared(self) -> bool:
        """Whether a team's DVC remote can hand its outputs from one worker to another: not
        for a stage with raw outputs, which are uncached and persistent (out of DVC's run
        cache), so each worker computes them itself (``flows/repro.py``)."""
        return not any(a.persist for a in self.outs)

    def unwritten(self, workspace: Path) -> list[str]:
        """What it declares it writes (its outs, metrics and plots) that ``workspace`` lacks:
        DVC fails a stage that leaves one unwritten, after the stage ran."""
        declared = [a.path for a in (*self.outs, *self.metrics)] + [p.path for p in self.plots]
        return [path for path in declared if not (workspace / path).exists()]

    def entry(self) -> StageEntry:
        """``components.<name>.stage.run``, imported on first use (keeps ``--help`` fast)."""
        module = importlib.import_module(f"components.{self.name}.stage")
        entry: StageEntry = module.run
        return entry

    def summary(self, metrics: Metrics) -> str:
        """The one line a run of the stage prints, from the metrics it returned:
        ``<name>: `` and ``components.<name>.stage.summary``'s line."""
        module = importlib.import_module(f"components.{self.name}.stage")
        line: str = module.summary(metrics)
        return f"{self.name}: {line}"
