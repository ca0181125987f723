"""Running and serving the whole pipeline (``flow``, ``serve``) and erasing its raw text
(``purge-raw``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from components.core import paths
from components.core.purge import purge_command
from components.export.config import ExportConfig
from components.ingest.config import IngestConfig
from components.stages import stage_context
from flows.prefect_auth import temporary_server_auth
from veiltune.cli.options import Commands


def add_flow(commands: Commands) -> None:
    text = "Run the Prefect pipeline flow now (each task runs one DVC stage)."
    sub = commands.add_parser("flow", help=text, description=text)
    sub.add_argument("--stages", nargs="+", help="stages to run, in pipeline order (default: all)")
    sub.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a param for this run, e.g. --set train.max_steps=5 (YAML value); the "
        "run is then a DVC experiment (dvc exp show) and params.yaml is left as it is",
    )
    sub.add_argument("--corpus", help="path of a JSONL corpus (sets ingest.corpus_path)")
    sub.set_defaults(handler=_flow)


def _flow(args: argparse.Namespace) -> Any:
    from flows import pipeline as flow_module

    overrides = flow_module.parse_overrides(args.overrides)
    flow_module.check_flow_arguments(args.stages, overrides, corpus=args.corpus)
    given = flow_module.RunOverrides.model_validate(overrides)  # checked above
    with temporary_server_auth():  # the temporary server, if Prefect starts one
        return flow_module.pipeline(stages=args.stages, overrides=given, corpus=args.corpus)


def add_serve(commands: Commands) -> None:
    text = "Serve the pipeline flow as a Prefect deployment, to start runs from the Prefect UI."
    sub = commands.add_parser("serve", help=text, description=text)
    sub.add_argument("--name", default="veiltune-pipeline", help="deployment name")
    sub.add_argument(
        "--allow-overrides",
        action="append",
        default=[],
        metavar="PARAMS",
        help="let runs started from the UI override these params too, e.g. "
        "gate,evaluate.judge.model (a stage, a param or a nested config); without it they may "
        "change only sizes and training hyperparameters (flows/overrides.py: UI_OVERRIDABLE)",
    )
    sub.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> Any:
    from flows.pipeline import serve

    return serve(args.name, args.allow_overrides)


def add_deploy(commands: Commands) -> None:
    text = (
        "Deploy the pipeline flow to a Prefect work pool (the team stack's: `veiltune`), so "
        "runs started from the UI execute on whichever worker takes them, each in its own "
        "checkout (docs/team.md). Reads PREFECT_API_URL and PREFECT_API_AUTH_STRING."
    )
    sub = commands.add_parser("deploy", help=text.split(" (")[0] + ".", description=text)
    sub.add_argument("--name", default="veiltune-pipeline", help="deployment name")
    sub.add_argument("--pool", default="veiltune", help="work pool (default: veiltune)")
    sub.add_argument(
        "--checkout",
        type=Path,
        default=Path("."),
        help="where each worker machine keeps its clone of this repository (default: here)",
    )
    sub.set_defaults(handler=_deploy)


def _deploy(args: argparse.Namespace) -> Any:
    from flows.pipeline import deploy

    return deploy(args.name, args.pool, checkout=args.checkout)


def add_purge_raw(commands: Commands) -> None:
    text = (
        "Erase every copy of the raw corpus and of conversation text in this checkout "
        "(data/raw with its salt, the PI inventory, the anonymized corpus, the review "
        "sample, and their copies in DVC's cache, run cache and experiments), for an "
        "erasure request. Without --yes it lists what it would erase."
    )
    sub = commands.add_parser("purge-raw", help=text.split(" (")[0] + ".", description=text)
    sub.add_argument("--yes", action="store_true", help="erase (without it: list only)")
    sub.set_defaults(handler=_purge_raw)


def _purge_raw(args: argparse.Namespace) -> Any:
    """The checkout's own params name the user corpus and the key to keep, when it has them."""
    if not paths.PARAMS.is_file():
        return purge_command(Path.cwd(), args.yes, source_corpus=None)
    context = stage_context(paths.PARAMS)
    key = context.base_dir / context.config(ExportConfig).signing_key
    return purge_command(
        Path.cwd(),
        args.yes,
        source_corpus=context.config(IngestConfig).corpus_path,
        signing_key=key,
    )
