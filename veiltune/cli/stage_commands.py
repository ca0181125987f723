"""The pipeline stages' commands, one per entry of the registry (``components.stages``), in
pipeline order: ``veiltune <stage>`` runs the stage as ``dvc repro`` does. Most take only
``--params`` and ``--json``; ``CUSTOM`` names the stages whose command takes more."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.anonymize.commands import anonymize
from components.core import paths
from components.core.errors import InputError, ParamsError
from components.export.commands import fetch, verify
from components.export.config import ExportConfig
from components.register.config import RegisterConfig
from components.review.commands import review_import
from components.review.config import ReviewConfig
from components.review.stage import run as review_export
from components.risk.config import RiskConfig
from components.stages import (
    STAGES,
    Stage,
    detection_context,
    for_stage,
    run_stage,
    stage_context,
)
from veiltune.cli.options import (
    Commands,
    StageRun,
    add_cluster,
    add_json,
    add_optional_params,
    add_params,
    anonymize_config,
    stage_parser_options,
)

if TYPE_CHECKING:
    from components.core.stage import Metrics


def add_stage_commands(commands: Commands) -> None:
    """A command for each stage, in pipeline order (as ``dvc repro`` runs them)."""
    for stage in STAGES:
        CUSTOM.get(stage.name, add_stage)(commands, stage)


def add_stage(commands: Commands, stage: Stage) -> argparse.ArgumentParser:
    """``veiltune <stage> [--params FILE] [--json]``: the stage, as ``dvc repro`` runs it."""
    options = stage_parser_options(stage, stage.help)
    sub = commands.add_parser(stage.cli[0], help=stage.help, **options)
    add_params(sub)
    add_json(sub)
    sub.set_defaults(handler=partial(_run_stage, stage))
    return sub


def _run_stage(stage: Stage, args: argparse.Namespace) -> StageRun:
    """A pipeline stage: its params file must exist."""
    return StageRun(stage, run_stage(stage.name, args.params))


def add_anonymize(commands: Commands, stage: Stage) -> None:
    text = (
        f"{stage.help} Without --input/--output it runs as the pipeline stage "
        f"({paths.RAW_CORPUS} to {paths.ANON_CORPUS} with its spans and metrics, logged to "
        "MLflow); with them, on any corpus file, logging nothing, and in a folder without "
        "params.yaml with the built-in defaults and the policy files shipped in the package."
    )
    sub = commands.add_parser("anonymize", help=stage.help, **stage_parser_options(stage, text))
    add_optional_params(sub)
    sub.add_argument("--input", type=Path, help=f"JSONL corpus (default: {paths.RAW_CORPUS})")
    sub.add_argument("--output", type=Path, help=f"JSONL to write (default: {paths.ANON_CORPUS})")
    sub.add_argument("--spans", type=Path, help="also write one record per replaced span")
    add_cluster(sub)
    add_json(sub)
    sub.set_defaults(handler=partial(_run_anonymize, stage))


def _run_anonymize(stage: Stage, args: argparse.Namespace) -> StageRun:
    """The pipeline stage, or with --input/--output a one-off run on any corpus file."""
    if args.input or args.output or args.spans:
        return StageRun(stage, _anonymize_file(args))
    if args.cluster or args.workers:
        raise ParamsError(
            "--cluster/--workers: for a one-off run with --input/--output; the pipeline "
            "stage reads anonymize.cluster and anonymize.workers from params.yaml"
        )
    params = paths.PARAMS if args.params is None else args.params  # it must exist
    return StageRun(stage, run_stage(stage.name, params))


def _anonymize_file(args: argparse.Namespace) -> Metrics:
    """A one-off run: logs nothing, and outside a checkout uses the built-in defaults."""
    context = detection_context(args.params)
    return anonymize(
        anonymize_config(context, args),
        context,
        input_path=args.input or paths.RAW_CORPUS,
        output_path=args.output or paths.ANON_CORPUS,
        spans_path=args.spans,
    )


def add_review(commands: Commands, stage: Stage) -> None:
    """``review export`` (the stage) and ``review import`` (the reviewers' annotations)."""
    text = (
        "The human review loop: export a stratified sample of anonymized conversations for "
        "reviewers, then import their (missed text)[MISSED_TYPE] annotations and score them."
    )
    short = (
        f"The human review loop. export: {stage.help} import: score the "
        "reviewers' annotations against the automatic risk estimate."
    )
    sub = commands.add_parser("review", help=short, **stage_parser_options(stage, text))
    actions = sub.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help=stage.help)
    add_params(export)
    export.add_argument(
        "--output", type=Path, help=f"folder to write (default: {paths.REVIEW_DIR})"
    )
    add_json(export)
    export.set_defaults(handler=partial(_review_export, stage))
    imported = actions.add_parser("import", help="score annotations next to the automatic estimate")
    add_params(imported)
    imported.add_argument("--input", type=Path, required=True, help="annotated review JSONL")
    imported.add_argument(
        "--output",
        type=Path,
        default=paths.REVIEW_DIR / "annotated_risk.json",
        help="report to write",
    )
    imported.set_defaults(handler=_review_import)


def _review_export(stage: Stage, args: argparse.Namespace) -> StageRun:
    context = for_stage(stage_context(args.params), stage.name)
    return StageRun(
        stage, review_export(context.config(ReviewConfig), context, output_dir=args.output)
    )


def _review_import(args: argparse.Namespace) -> Any:
    risk = stage_context(args.params).config(RiskConfig)
    return review_import(risk, args.input, output=args.output)


def add_export(commands: Commands, stage: Stage) -> None:
    """The stage, ``export --verify BUNDLE`` (a bundle checked against its signature) and
    ``export --fetch VERSION`` (a registered version's bundle from the artifact store)."""
    export = add_stage(commands, stage)
    export.add_argument(
        "--verify",
        type=Path,
        metavar="BUNDLE",
        help="check a bundle folder or .zip against its manifest and the signature over it "
        "(exit 5 when not intact, unsigned or signed by another key)",
    )
    export.add_argument(
        "--public-key",
        type=Path,
        metavar="FILE",
        help="with --verify or --fetch: the producer's Ed25519 public key (PEM) to check the "
        "signature with (default: the key pair of this checkout, export.signing_key)",
    )
    export.add_argument(
        "--against-registry",
        action="store_true",
        help="with --verify: also compare the manifest's sha256 and signature with what the "
        "MLflow registry recorded on the model version the bundle names",
    )
    export.add_argument(
        "--fetch",
        metavar="VERSION",
        help="download the bundle of a registered version (register.model_name) from the "
        "MLflow artifact store and check it as --verify --against-registry does; nothing is "
        "written unless it holds",
    )
    export.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="with --fetch: the folder to write (default: exports/<model>-v<VERSION>)",
    )
    export.set_defaults(handler=partial(_run_export, stage))


def _run_export(stage: Stage, args: argparse.Namespace) -> StageRun | Any:
    """The stage; with --verify the check of a bundle, with --fetch a version's bundle
    downloaded and checked (each result prints as JSON)."""
    if args.verify is not None and args.fetch is not None:
        raise InputError("--verify checks a bundle here, --fetch one from the registry: not both")
    if args.output is not None and args.fetch is None:
        raise InputError("--output names where --fetch writes: add --fetch VERSION")
    if args.verify is not None:
        return _verify_bundle(args)
    if args.fetch is not None:
        return _fetch_bundle(args)
    if args.public_key or args.against_registry:
        raise InputError("--public-key and --against-registry check a bundle: add --verify BUNDLE")
    return _run_stage(stage, args)


def _verify_bundle(args: argparse.Namespace) -> Any:
    """``export --verify``: the checkout's key from its params, unless --public-key names one."""
    configured, base_dir = None, Path()
    if args.public_key is None and args.params.is_file():
        context = stage_context(args.params)
        configured, base_dir = context.config(ExportConfig).signing_key, context.base_dir
    return verify(
        args.verify,
        args.public_key,
        configured_key=configured,
        base_dir=base_dir,
        against_registry=args.against_registry,
    )


def _fetch_bundle(args: argparse.Namespace) -> Any:
    """``export --fetch VERSION``: the model's name and the key from the checkout's params."""
    context = stage_context(args.params)
    model = context.config(RegisterConfig).model_name
    configured = None if args.public_key else context.config(ExportConfig).signing_key
    output = args.output or Path("exports") / f"{model}-v{args.fetch}"
    return fetch(
        model,
        args.fetch,
        output=output,
        public_key=args.public_key,
        configured_key=configured,
        base_dir=context.base_dir,
    )


# The stages whose command takes more than --params and --json: its builder, by stage name.
CUSTOM: Mapping[str, Callable[[Commands, Stage], Any]] = {
    "anonymize": add_anonymize,
    "review": add_review,
    "export": add_export,
}
