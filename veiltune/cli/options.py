"""What the commands share: the options several take, the type of a command's handler, and
``StageRun``, a handler's result when it ran a pipeline stage."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from components.anonymize.config import AnonymizeConfig
from components.core import paths
from components.core.config import describe_range
from components.core.field_help import field_comments
from components.stages import Stage

if TYPE_CHECKING:
    from components.core.stage import Metrics, StageContext

# The subcommands of a parser, to which each command adds its own.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
# What runs a command, given its parsed arguments; a dict it returns is printed as JSON.
Handler: TypeAlias = Callable[[argparse.Namespace], Any]


@dataclass(frozen=True)
class StageRun:
    """A pipeline stage's metrics, as a command that ran the stage returns them: printed as
    its one summary line, or as JSON with ``--json``."""

    stage: Stage
    metrics: Metrics


def stage_parser_options(stage: Stage, description: str) -> dict[str, Any]:
    """``add_parser`` keywords that give a stage's command its params in ``--help``: each
    key of the stage's ``params.yaml`` section with its default, its comment and the range
    its type declares."""
    import dataclasses
    import textwrap
    import typing

    import yaml

    comments: dict[str, str] = {}
    for cls in reversed(stage.config.__mro__):  # a subclass's comment over its base's
        if dataclasses.is_dataclass(cls):
            comments |= {k: v for k, v in field_comments(cls).items() if v}
    defaults = stage.config()
    hints = typing.get_type_hints(stage.config, include_extras=True)
    lines = [f"params.yaml's {stage.name} (every stage's: veiltune params):"]
    for field in dataclasses.fields(stage.config):
        value = getattr(defaults, field.name)
        if dataclasses.is_dataclass(value):
            shown = "{...}"  # a nested section: its keys in `veiltune params`
        else:
            shown = _yaml(yaml.safe_dump(value, default_flow_style=True))
        note = _note(comments.get(field.name, ""), describe_range(hints[field.name]))
        lines.append(f"  {field.name}: {_short(shown, 40)}" + (f"  # {note}" if note else ""))
    return {
        "description": textwrap.fill(description, 88),
        "epilog": "\n".join(lines),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def _yaml(dumped: str) -> str:
    """A value as params.yaml writes it, on one line."""
    return " ".join(dumped.removesuffix("\n...\n").split())


def _note(comment: str, allowed: str, *, width: int = 70) -> str:
    """A key's comment, shortened to fit beside the range it allows, which is kept whole."""
    if not allowed:
        return _short(comment, width)
    return f"{_short(comment, width - len(allowed) - 3)} ({allowed})" if comment else allowed


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def add_params(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--params", type=Path, default=paths.PARAMS, help="params file (default: params.yaml)"
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    """``--json`` of the commands that run a stage: its metrics on stdout, not its line."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the stage's metrics as JSON (what metrics/<stage>.json holds) instead of "
        "its one summary line",
    )


def add_optional_params(parser: argparse.ArgumentParser) -> None:
    """``--params`` of the detection commands, which also run outside a checkout."""
    parser.add_argument(
        "--params",
        type=Path,
        help="params file (default: params.yaml if this folder has one, else the built-in "
        "defaults with the policy files shipped in the package)",
    )


def add_cluster(parser: argparse.ArgumentParser) -> None:
    """``--cluster`` and ``--workers``: where the detection commands run, for this run."""
    parser.add_argument(
        "--cluster",
        metavar="local|tls://HOST:PORT|tcp://HOST:PORT",
        help="anonymize.cluster for this run: a local Dask cluster, or an existing one's "
        "scheduler (tls:// with anonymize.cluster_tls; tcp:// is plaintext, open to any "
        "client that reaches it; infra/dask/README.md)",
    )
    parser.add_argument("--workers", type=int, metavar="N", help="anonymize.workers for this run")


def anonymize_config(context: StageContext, args: argparse.Namespace) -> AnonymizeConfig:
    """The anonymize params, with --cluster and --workers for this run in place of theirs."""
    config = context.config(AnonymizeConfig)
    chosen = {"cluster": args.cluster, "workers": args.workers}
    return replace(config, **{key: value for key, value in chosen.items() if value is not None})
