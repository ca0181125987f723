"""``veiltune``: a subcommand per pipeline stage (from the registry, ``components.stages``),
plus the tools around them: detect, evaluate-detection, review import, grades export/import,
utility-report, utility-profile, promote/demote, flow, serve, purge-raw. No stage logic lives
here."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.anonymize.config import AnonymizeConfig
from components.anonymize.evaluation.datasets import KINDS, SPLITS
from components.core import paths
from components.core.library_noise import silence_library_noise
from components.evaluate.profile import DEFAULT_SEEDS, DEFAULT_VARIANTS, PROFILES, RUN_STORE
from components.export.config import ExportConfig
from components.ingest.config import IngestConfig
from components.register.config import RegisterConfig
from components.review.config import ReviewConfig
from components.risk.config import RiskConfig
from components.stages import (
    BY_NAME,
    STAGES,
    Stage,
    apply_overrides,
    detection_context,
    run_stage,
    stage_context,
)

if TYPE_CHECKING:
    from components.core.stage import StageContext

# Nothing downloads at run time; Prefect, Great Expectations, MLflow and the Hugging Face
# hub send no analytics (MLflow 3 otherwise opens an HTTPS connection to its telemetry host
# from every process that logs a run).
OFFLINE_ENVIRONMENT = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "GX_ANALYTICS_ENABLED": "false",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veiltune",
        description="Fine-tune language models on sensitive conversations without leaking "
        "the people in them. Each pipeline stage reads its own key of params.yaml; "
        "`dvc repro` runs them in order.",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="debug logging from veiltune and every library (default: veiltune's progress, "
        "other libraries' warnings only)",
    )
    # The `deepspeed` launcher passes --local_rank to every process it starts; the rank
    # also arrives in LOCAL_RANK, which is what training reads.
    parser.add_argument("--local_rank", "--local-rank", type=int, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # The stages first, in pipeline order (as `dvc repro` runs them), then the tools.
    for stage in STAGES:
        if stage.name == "anonymize":
            _add_anonymize(commands)
        elif stage.name == "review":
            _add_review(commands)
        else:
            sub = commands.add_parser(stage.cli[0], help=stage.help, description=stage.help)
            _add_params(sub)
            _add_json(sub)
    _add_export_verify(commands.choices["export"])
    _add_detect(commands)
    _add_evaluate_detection(commands)
    _add_calibrate(commands)
    _add_grades(commands)
    _add_utility_report(commands)
    _add_utility_profile(commands)
    _add_utility_pack(commands)
    _add_promote_demote(commands)
    _add_flow(commands)
    _add_serve(commands)
    _add_purge_raw(commands)
    return parser


def _add_export_verify(export: argparse.ArgumentParser) -> None:
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
        help="with --verify: the producer's Ed25519 public key (PEM) to check the signature "
        "with (default: the key pair of this checkout, export.signing_key)",
    )
    export.add_argument(
        "--against-registry",
        action="store_true",
        help="with --verify: also compare the manifest's sha256 and signature with what the "
        "MLflow registry recorded on the model version the bundle names",
    )


def _add_params(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--params", type=Path, default=paths.PARAMS, help="params file (default: params.yaml)"
    )


def _add_json(parser: argparse.ArgumentParser) -> None:
    """``--json`` of the commands that run a stage: its metrics on stdout, not its line."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the stage's metrics as JSON (what metrics/<stage>.json holds) instead of "
        "its one summary line",
    )


def _add_optional_params(parser: argparse.ArgumentParser) -> None:
    """``--params`` of the detection commands, which also run outside a checkout."""
    parser.add_argument(
        "--params",
        type=Path,
        help="params file (default: params.yaml if this folder has one, else the built-in "
        "defaults with the policy files shipped in the package)",
    )


def _add_anonymize(commands: Any) -> None:
    text = (
        f"{BY_NAME['anonymize'].help} Without --input/--output it runs as the pipeline stage "
        f"({paths.RAW_CORPUS} to {paths.ANON_CORPUS} with its spans and metrics, logged to "
        "MLflow); with them, on any corpus file, logging nothing, and in a folder without "
        "params.yaml with the built-in defaults and the policy files shipped in the package."
    )
    sub = commands.add_parser("anonymize", help=BY_NAME["anonymize"].help, description=text)
    _add_optional_params(sub)
    sub.add_argument("--input", type=Path, help=f"JSONL corpus (default: {paths.RAW_CORPUS})")
    sub.add_argument("--output", type=Path, help=f"JSONL to write (default: {paths.ANON_CORPUS})")
    sub.add_argument("--spans", type=Path, help="also write one record per replaced span")
    _add_cluster(sub)
    _add_json(sub)


def _add_detect(commands: Any) -> None:
    text = (
        'Detect personal information: for each {"id", "text"} record write {"id", "spans"} '
        "with character offsets (per-turn spans, tagged with turn, for records with turns)."
    )
    short = "Write the personal information spans found in each record of a JSONL file."
    sub = commands.add_parser("detect", help=short, description=text)
    _add_optional_params(sub)
    sub.add_argument("--input", type=Path, required=True, help="JSONL records")
    sub.add_argument("--output", type=Path, required=True, help="JSONL spans to write")
    _add_cluster(sub)


def _add_cluster(sub: Any) -> None:
    sub.add_argument(
        "--cluster",
        metavar="local|tls://HOST:PORT|tcp://HOST:PORT",
        help="anonymize.cluster for this run: a local Dask cluster, or an existing one's "
        "scheduler (tls:// with anonymize.cluster_tls; tcp:// is plaintext, open to any "
        "client that reaches it; infra/dask/README.md)",
    )
    sub.add_argument("--workers", type=int, metavar="N", help="anonymize.workers for this run")


def _add_evaluate_detection(commands: Any) -> None:
    text = (
        "Score detection on labelled data: character precision/recall (label-agnostic, "
        "neutral types excluded) and entity recall per type; logged to MLflow."
    )
    short = "Score detection against labelled data: precision and recall, recall per type."
    sub = commands.add_parser("evaluate-detection", help=short, description=text)
    _add_optional_params(sub)
    sub.add_argument(
        "--dataset",
        required=True,
        choices=KINDS,
        help="format of the labelled data",
    )
    sub.add_argument("--path", type=Path, help="file of labelled data (not for embedded)")
    sub.add_argument("--limit", type=int, help="score only the first N texts")
    sub.add_argument(
        "--split",
        choices=SPLITS,
        default="all",
        help="presidio_research only: the templates calibration uses, or those it never sees",
    )
    sub.add_argument(
        "--show-false-positives",
        type=int,
        default=0,
        metavar="N",
        help="print a seeded sample of N false positives with their context to stderr "
        "(private text: never written to the metrics file or MLflow)",
    )
    sub.add_argument(
        "--detectors",
        help="anonymize.detectors for this run, comma-separated (e.g. entities,lm_probability)",
    )
    sub.add_argument(
        "--sweep",
        metavar="KEY=V1,V2,...",
        help="score each value of lm_probability.p or vocab_threshold, detecting once, and "
        "print the precision-recall curve (docs/transforms.md)",
    )
    sub.add_argument(
        "--output",
        type=Path,
        default=paths.METRICS_DIR / "evaluate_detection.json",
        help="metrics file to write",
    )
    _add_cluster(sub)


def _add_calibrate(commands: Any) -> None:
    text = (
        "Calibrate detection: choose each recognizer's score threshold for the recall, "
        "balanced and precision operating points on labelled data (presidio_research: its "
        "tuning templates only) and write them to the calibration policy file."
    )
    short = "Choose each recognizer's score threshold on labelled data; write the policy file."
    sub = commands.add_parser("calibrate", help=short, description=text)
    _add_params(sub)
    sub.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="KIND[=PATH]",
        help="labelled data: wnut17=FILE, presidio_research=FILE, jsonl=FILE or embedded; "
        "speech: before a kind reads its texts as speech recognition writes them "
        "(speech:presidio_research=FILE); repeat for several",
    )
    sub.add_argument("--limit", type=int, help="use only the first N texts of each")
    sub.add_argument(
        "--output",
        type=Path,
        default=Path("veiltune/policy/calibration.yaml"),
        help="file to write",
    )


def _add_review(commands: Any) -> None:
    text = (
        "The human review loop: export a stratified sample of anonymized conversations for "
        "reviewers, then import their (missed text)[MISSED_TYPE] annotations and score them."
    )
    short = (
        f"The human review loop. export: {BY_NAME['review'].help} import: score the "
        "reviewers' annotations against the automatic risk estimate."
    )
    sub = commands.add_parser("review", help=short, description=text)
    actions = sub.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help=BY_NAME["review"].help)
    _add_params(export)
    export.add_argument("--output", type=Path, default=paths.REVIEW_DIR, help="folder to write")
    _add_json(export)
    imported = actions.add_parser("import", help="score annotations next to the automatic estimate")
    _add_params(imported)
    imported.add_argument("--input", type=Path, required=True, help="annotated review JSONL")
    imported.add_argument(
        "--output",
        type=Path,
        default=paths.REVIEW_DIR / "annotated_risk.json",
        help="report to write",
    )


def _add_grades(commands: Any) -> None:
    text = (
        "Human grading of the privacy-preserving summaries: export the adapter's summaries of "
        "held-out calls for graders (owner-only, under data/raw), then import their Privacy "
        "and Completeness marks (1-5) and report their agreement with the judge (Cohen's kappa)."
    )
    short = "Export private summaries for human grading; import the grades, kappa with the judge."
    sub = commands.add_parser("grades", help=short, description=text)
    actions = sub.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="the graders' file of private summaries")
    _add_params(export)
    export.add_argument("--output", type=Path, default=paths.GRADES_EXPORT, help="JSONL to write")
    export.add_argument("--limit", type=int, default=60, help="held-out calls at most")
    imported = actions.add_parser("import", help="agreement of graders and judge")
    _add_params(imported)
    imported.add_argument(
        "--input", type=Path, action="append", required=True, help="a grader's JSONL (repeat)"
    )
    imported.add_argument(
        "--output", type=Path, default=paths.GRADES_REPORT, help="report to write"
    )


def _add_utility_report(commands: Any) -> None:
    text = (
        "Compare utility across variants: each metric's seed-averaged mean with a 95% "
        "bootstrap interval over held-out conversations, the paired difference from the "
        "oracle, and the verdict on the 5% target. From the run store (veiltune "
        "utility-profile fills it) when it holds runs, else from DVC experiments (`dvc exp "
        "run -S train.corpus=raw|masked`)."
    )
    short = "Compare utility across variants: 95%% intervals, gap to the oracle, the 5%% target."
    sub = commands.add_parser("utility-report", help=short, description=text)
    _add_params(sub)
    _add_report_folders(sub)


def _add_report_folders(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", type=Path, default=paths.UTILITY_REPORT, help="folder for md/json/png"
    )
    parser.add_argument(
        "--runs",
        type=Path,
        default=RUN_STORE,
        metavar="DIR",
        help=f"run store, DIR/<variant>/seed-<seed>/ (default: {RUN_STORE})",
    )


def _add_utility_profile(commands: Any) -> None:
    text = (
        "Train and evaluate each variant at each seed as a DVC experiment in this workspace "
        "(dvc exp run -S ...), keep each run's evaluation in the run store, then write the "
        "utility report from it. Runs already in the store are skipped. The large profile "
        "takes hours on a CPU; on a GPU, pass a bigger --steps."
    )
    sub = commands.add_parser("utility-profile", help=text.split(" (")[0] + ".", description=text)
    _add_params(sub)
    _add_report_folders(sub)
    sub.add_argument(
        "--variants",
        nargs="+",
        default=list(DEFAULT_VARIANTS),
        metavar="VARIANT",
        help="oracle, masked, placeholder, mask, type, surrogate-realistic|lm|embedding "
        f"(default: {' '.join(DEFAULT_VARIANTS)})",
    )
    sub.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=list(DEFAULT_SEEDS),
        metavar="SEED",
        help=f"train.seed of each run (default: {' '.join(map(str, DEFAULT_SEEDS))})",
    )
    sub.add_argument(
        "--profile",
        choices=PROFILES,
        default="default",
        help="sizes: default keeps params.yaml's; large = 400 steps, 600 conversations, "
        "a fifth held out, up to 120 scored per dataset",
    )
    sub.add_argument("--steps", type=int, help="train.max_steps (overrides the profile)")
    sub.add_argument("--conversations", type=int, help="ingest.n_conversations")
    sub.add_argument("--heldout-fraction", type=float, help="ingest.heldout_fraction")
    sub.add_argument("--max-eval", type=int, help="evaluate.max_conversations")
    sub.add_argument(
        "--tasks",
        nargs="+",
        help="train.tasks for every variant (continuation alone to compare with fragments)",
    )


def _add_utility_pack(commands: Any) -> None:
    text = (
        "Pack what the utility profile's runs read (each variant's training split, the "
        "held-out raw conversations, the train and evaluate params) into one private folder, "
        "to train and evaluate them where there is a GPU with `python -m "
        "veiltune.utility_runner` (docs/utility.md). The oracle comes from "
        "data/raw, masked from the placeholder folder."
    )
    short = "Pack the utility profile's inputs in one private folder, to run them on a GPU."
    sub = commands.add_parser("utility-pack", help=short, description=text)
    _add_params(sub)
    sub.add_argument("output", type=Path, metavar="PACK", help="folder to write (replaced)")
    sub.add_argument(
        "--anonymized",
        action="append",
        default=[],
        metavar="VARIANT=DIR",
        help="an anonymize stage's output folder (corpus.jsonl, spans.jsonl) and the variant "
        "it is, e.g. placeholder=data/anonymized; repeat for each variant",
    )
    sub.add_argument("--steps", type=int, help="train.max_steps (default: params.yaml's)")
    sub.add_argument("--max-eval", type=int, help="evaluate.max_conversations")
    sub.add_argument(
        "--tasks", nargs="+", help="train.tasks (continuation alone to compare with fragments)"
    )
    sub.add_argument(
        "--eval-tasks",
        nargs="*",
        help="evaluate.tasks: the call tasks scored; none at all scores perplexity alone",
    )


def _add_promote_demote(commands: Any) -> None:
    text = (
        "Give the champion alias to a registered version (register.model_name); the previous "
        "champion loses it. Judged by the version's signed evidence, never its tags: evidence "
        "that does not hold, a failed gate or audit needs --force --reason. --check audits "
        "the version holding champion (exit 1 when its evidence does not hold, or none does)."
    )
    short = "Give the champion alias to a registered version, judged by its signed evidence."
    sub = commands.add_parser("promote", help=short, description=text)
    _add_params(sub)
    sub.add_argument("version", metavar="VERSION", nargs="?", help="model version number, e.g. 3")
    sub.add_argument("--force", action="store_true", help="promote despite a failed gate/audit")
    sub.add_argument("--reason", default="", help="why the promotion is forced (recorded as a tag)")
    sub.add_argument(
        "--check", action="store_true", help="check the current champion's evidence; no VERSION"
    )
    text = "Take the champion alias from a version; no version is champion afterwards."
    sub = commands.add_parser("demote", help=text.split(";")[0] + ".", description=text)
    _add_params(sub)
    sub.add_argument("version", metavar="VERSION", help="model version number, e.g. 3")


def _add_flow(commands: Any) -> None:
    text = "Run the Prefect pipeline flow now (each task runs one DVC stage)."
    sub = commands.add_parser("flow", help=text, description=text)
    _add_flow_options(sub)


def _add_purge_raw(commands: Any) -> None:
    text = (
        "Erase every copy of the raw corpus and of conversation text in this checkout "
        "(data/raw with its salt, the PI inventory, the anonymized corpus, the review "
        "sample, and their copies in DVC's cache, run cache and experiments), for an "
        "erasure request. Without --yes it lists what it would erase."
    )
    sub = commands.add_parser("purge-raw", help=text.split(" (")[0] + ".", description=text)
    sub.add_argument("--yes", action="store_true", help="erase (without it: list only)")


def _add_serve(commands: Any) -> None:
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


def _add_flow_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stages", nargs="+", help="stages to run, in pipeline order (default: all)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a param for this run, e.g. --set train.max_steps=5 (YAML value); the "
        "run is then a DVC experiment (dvc exp show) and params.yaml is left as it is",
    )
    parser.add_argument("--corpus", help="path of a JSONL corpus (sets ingest.corpus_path)")


def _run_command(args: argparse.Namespace) -> Any:
    stage = next((s for s in STAGES if s.cli == _words(args)), None)
    if args.command == "export" and args.verify is not None:
        return _verify_bundle(args)
    if args.command == "export" and (args.public_key or args.against_registry):
        from components.core.errors import InputError

        raise InputError("--public-key and --against-registry check a bundle: add --verify BUNDLE")
    one_off = args.command == "anonymize" and bool(args.input or args.output or args.spans)
    if args.command == "anonymize" and not one_off and (args.cluster or args.workers):
        from components.core.errors import ParamsError

        raise ParamsError(
            "--cluster/--workers: for a one-off run with --input/--output; the pipeline "
            "stage reads anonymize.cluster and anonymize.workers from params.yaml"
        )
    if one_off:
        from components.anonymize.commands import anonymize

        context = detection_context(args.params)
        return anonymize(
            _anonymize_config(context, args),
            context,
            args.input or paths.RAW_CORPUS,
            args.output or paths.ANON_CORPUS,
            args.spans,
        )
    if args.command == "review" and args.action == "export":
        from components.review.stage import run as review_export

        context = stage_context(args.params)
        return review_export(context.config(ReviewConfig), context, args.output)
    if stage is not None:  # a pipeline stage: its params file must exist
        return run_stage(stage.name, paths.PARAMS if args.params is None else args.params)
    return _run_tool(args)


def _anonymize_config(context: StageContext, args: argparse.Namespace) -> AnonymizeConfig:
    """The anonymize params, with --cluster and --workers for this run in place of theirs."""
    from dataclasses import replace

    config = context.config(AnonymizeConfig)
    chosen = {"cluster": args.cluster, "workers": args.workers}
    return replace(config, **{key: value for key, value in chosen.items() if value is not None})


def _verify_bundle(args: argparse.Namespace) -> Any:
    """``export --verify``: the checkout's key from its params, unless --public-key names one."""
    from components.export.commands import verify

    configured, base_dir = None, Path()
    if args.public_key is None and args.params.is_file():
        context = stage_context(args.params)
        configured, base_dir = context.config(ExportConfig).signing_key, context.base_dir
    return verify(args.verify, args.public_key, configured, base_dir, args.against_registry)


def _words(args: argparse.Namespace) -> tuple[str, ...]:
    """The command words given: ``("review", "export")``, ``("train",)``."""
    action = getattr(args, "action", None)
    return (args.command, action) if action else (args.command,)


def _run_tool(args: argparse.Namespace) -> Any:
    """The commands that are not a pipeline stage."""
    if args.command == "detect":
        from components.anonymize.commands import detect

        context = detection_context(args.params)
        config = _anonymize_config(context, args)
        return {"records": detect(config, context, args.input, args.output)}
    if args.command == "evaluate-detection":
        from components.anonymize.commands import evaluate_detection, format_false_positives

        context = detection_context(args.params)
        metrics, samples = evaluate_detection(
            _anonymize_config(context, args),
            context,
            args.dataset,
            args.path,
            args.limit,
            args.output,
            args.split,
            args.show_false_positives,
            args.sweep,
            args.detectors,
        )
        if samples:
            print(format_false_positives(samples), file=sys.stderr)
        if "sweep" in metrics:
            from components.anonymize.commands import format_sweep

            print(format_sweep(metrics["sweep"]))
            return 0
        return metrics
    if args.command == "calibrate":
        from components.anonymize.commands import calibrate

        context = stage_context(args.params)
        from components.anonymize.evaluation.datasets import parse_data_spec

        data = [parse_data_spec(spec) for spec in args.data]
        return calibrate(context.config(AnonymizeConfig), context, data, args.output, args.limit)
    if args.command == "review":
        from components.review.commands import review_import

        risk = stage_context(args.params).config(RiskConfig)
        return review_import(risk, args.input, args.output)
    if args.command == "grades" and args.action == "export":
        from components.evaluate.commands import grades_export

        return grades_export(stage_context(args.params), args.output, args.limit)
    if args.command == "grades":
        from components.evaluate.commands import grades_import

        return grades_import(args.input, args.output)
    if args.command == "utility-report":
        from components.evaluate.commands import utility_report

        return utility_report(stage_context(args.params), args.output, args.runs)
    if args.command == "utility-profile":
        return _utility_profile(args)
    if args.command == "utility-pack":
        from components.evaluate.commands import utility_pack

        anonymized = dict(_variant_folder(spec) for spec in args.anonymized)
        return utility_pack(
            stage_context(args.params),
            args.output,
            anonymized,
            args.steps,
            args.max_eval,
            args.tasks,
            args.eval_tasks,
        )
    if args.command in ("promote", "demote"):
        from components.register import commands

        context = stage_context(args.params)
        register = context.config(RegisterConfig)
        if args.command == "promote":
            return _promote(args, register, context)
        return commands.demote(register, args.version)
    if args.command == "flow":
        from flows import pipeline as flow_module
        from flows.prefect_auth import temporary_server_auth

        overrides = flow_module.parse_overrides(args.overrides)
        flow_module.check_flow_arguments(args.stages, overrides, args.corpus)
        with temporary_server_auth():  # the temporary server, if Prefect starts one
            return flow_module.pipeline(stages=args.stages, overrides=overrides, corpus=args.corpus)
    if args.command == "purge-raw":
        from components.core.purge import purge_command

        if not paths.PARAMS.is_file():
            return purge_command(Path.cwd(), args.yes, None)
        context = stage_context(paths.PARAMS)
        key = context.base_dir / context.config(ExportConfig).signing_key
        return purge_command(Path.cwd(), args.yes, context.config(IngestConfig).corpus_path, key)
    if args.command == "serve":
        from flows.pipeline import serve

        return serve(args.name, args.allow_overrides)
    raise AssertionError(f"unhandled command {args.command}")


def _promote(args: argparse.Namespace, register: RegisterConfig, context: Any) -> Any:
    """``promote VERSION``, or ``promote --check``: a verdict line per check, exit 1 unless
    the champion's evidence holds."""
    from components.core.errors import InputError, PromotionRefused
    from components.register import commands

    if args.check == (args.version is not None):
        raise InputError("promote takes a VERSION, or --check alone")
    if not args.check:
        return commands.promote(register, context, args.version, args.force, args.reason)
    if args.force or args.reason:
        raise InputError("--check promotes nothing: --force and --reason do not apply")
    verdict = commands.check_champion(register, context)
    print("\n".join(verdict.lines()))
    if not verdict.holds:
        raise PromotionRefused(verdict.failure())
    return None


def _variant_folder(spec: str) -> tuple[str, Path]:
    variant, sep, folder = spec.partition("=")
    if not sep or not variant or not folder:
        from components.core.errors import InputError

        raise InputError(f"--anonymized {spec!r}: expected VARIANT=DIR")
    return variant, Path(folder)


def _utility_profile(args: argparse.Namespace) -> Any:
    from components.evaluate.commands import utility_profile
    from components.evaluate.profile import Sizes, plan_runs, profile_sizes

    tasks = tuple(args.tasks) if args.tasks else None
    given = Sizes(args.steps, args.conversations, args.heldout_fraction, args.max_eval, tasks)
    planned = plan_runs(args.variants, args.seeds, profile_sizes(args.profile, given))
    context = stage_context(args.params)
    for run in planned:  # a bad override fails now, not after hours of the runs before it
        apply_overrides(context.params, run.overrides)
    return utility_profile(context, planned, args.runs, args.output)


# The packages whose loggers report veiltune's own progress. Every other library logs its
# warnings only: Great Expectations alone logs 200+ INFO lines on import, which buried the
# one-line error of a bad gate param; httpx a line per request to the Prefect API.
OWN_LOGGERS = ("components", "audits", "flows", "veiltune")


def configure_logging(verbose: bool) -> None:
    """veiltune's own loggers at INFO and every other at WARNING, on stderr; all at DEBUG
    with ``-v``."""
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger().setLevel(logging.DEBUG if verbose else logging.WARNING)
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.INFO)
    # MLflow logs a store error with its traceback before raising it; store_errors reports
    # it once, naming the store and what to do.
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)


def main(argv: Sequence[str] | None = None) -> int:
    for key, value in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    silence_library_noise()  # before any library that warns is imported
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose)
    from components.core.errors import VeiltuneError
    from components.core.tracking import store_errors

    try:
        with store_errors():
            result = _run_command(args)
    except VeiltuneError as exc:
        print(f"veiltune {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"veiltune {args.command}: interrupted", file=sys.stderr)
        return 130
    stage = _stage_run(args)
    if stage is not None and isinstance(result, dict) and not args.json:
        print(stage.summary(result))  # its metrics are in metrics/<stage>.json and MLflow
    elif isinstance(result, dict):
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    return 0


def _stage_run(args: argparse.Namespace) -> Stage | None:
    """The stage the command ran, if it ran one (``export --verify`` checks a bundle)."""
    if args.command == "export" and args.verify is not None:
        return None
    return next((s for s in STAGES if s.cli == _words(args)), None)


if __name__ == "__main__":
    sys.exit(main())
