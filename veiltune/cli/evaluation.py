"""The tools around the evaluate stage: human ``grades`` of the private summaries, and the
utility comparison across variants (``utility-report``, ``utility-profile``,
``utility-pack``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from components.core import paths
from components.core.errors import InputError
from components.evaluate.commands import (
    grades_export,
    grades_import,
    utility_pack,
    utility_profile,
    utility_report,
)
from components.evaluate.profile import (
    DEFAULT_SEEDS,
    DEFAULT_VARIANTS,
    PROFILES,
    RUN_STORE,
    Sizes,
    plan_runs,
    profile_sizes,
)
from components.stages import apply_overrides, stage_context
from veiltune.cli.options import Commands, add_params


def add_grades(commands: Commands) -> None:
    text = (
        "Human grading of the privacy-preserving summaries: export the adapter's summaries of "
        "held-out calls for graders (owner-only, under data/raw), then import their Privacy "
        "and Completeness marks (1-5) and report their agreement with the judge (Cohen's kappa)."
    )
    short = "Export private summaries for human grading; import the grades, kappa with the judge."
    sub = commands.add_parser("grades", help=short, description=text)
    actions = sub.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="the graders' file of private summaries")
    add_params(export)
    export.add_argument("--output", type=Path, default=paths.GRADES_EXPORT, help="JSONL to write")
    export.add_argument("--limit", type=int, default=60, help="held-out calls at most")
    export.set_defaults(handler=_grades_export)
    imported = actions.add_parser("import", help="agreement of graders and judge")
    add_params(imported)
    imported.add_argument(
        "--input", type=Path, action="append", required=True, help="a grader's JSONL (repeat)"
    )
    imported.add_argument(
        "--output", type=Path, default=paths.GRADES_REPORT, help="report to write"
    )
    imported.set_defaults(handler=_grades_import)


def _grades_export(args: argparse.Namespace) -> Any:
    return grades_export(stage_context(args.params), args.output, limit=args.limit)


def _grades_import(args: argparse.Namespace) -> Any:
    return grades_import(args.input, args.output)


def add_utility_report(commands: Commands) -> None:
    text = (
        "Compare utility across variants: each metric's seed-averaged mean with a 95% "
        "bootstrap interval over held-out conversations, the paired difference from the "
        "oracle, and the verdict on the 5% target. From the run store (veiltune "
        "utility-profile fills it) when it holds runs, else from DVC experiments (`dvc exp "
        "run -S train.corpus=raw|masked`)."
    )
    short = "Compare utility across variants: 95%% intervals, gap to the oracle, the 5%% target."
    sub = commands.add_parser("utility-report", help=short, description=text)
    add_params(sub)
    _add_report_folders(sub)
    sub.set_defaults(handler=_utility_report)


def _utility_report(args: argparse.Namespace) -> Any:
    return utility_report(stage_context(args.params), args.output, store=args.runs)


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


def add_utility_profile(commands: Commands) -> None:
    text = (
        "Train and evaluate each variant at each seed as a DVC experiment in this workspace "
        "(dvc exp run -S ...), keep each run's evaluation in the run store, then write the "
        "utility report from it. Runs already in the store are skipped. The large profile "
        "takes hours on a CPU; on a GPU, pass a bigger --steps."
    )
    sub = commands.add_parser("utility-profile", help=text.split(" (")[0] + ".", description=text)
    add_params(sub)
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
    sub.set_defaults(handler=_utility_profile)


def _utility_profile(args: argparse.Namespace) -> Any:
    tasks = tuple(args.tasks) if args.tasks else None
    given = Sizes(args.steps, args.conversations, args.heldout_fraction, args.max_eval, tasks)
    planned = plan_runs(args.variants, args.seeds, sizes=profile_sizes(args.profile, given))
    context = stage_context(args.params)
    for run in planned:  # a bad override fails now, not after hours of the runs before it
        apply_overrides(context.params, run.overrides)
    return utility_profile(context, planned, store=args.runs, output_dir=args.output)


def add_utility_pack(commands: Commands) -> None:
    text = (
        "Pack what the utility profile's runs read (each variant's training split, the "
        "held-out raw conversations, the train and evaluate params) into one private folder, "
        "to train and evaluate them where there is a GPU with `python -m "
        "veiltune.utility_runner` (docs/utility.md). The oracle comes from "
        "data/raw, masked from the placeholder folder."
    )
    short = "Pack the utility profile's inputs in one private folder, to run them on a GPU."
    sub = commands.add_parser("utility-pack", help=short, description=text)
    add_params(sub)
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
    sub.set_defaults(handler=_utility_pack)


def _utility_pack(args: argparse.Namespace) -> Any:
    anonymized = dict(_variant_folder(spec) for spec in args.anonymized)
    return utility_pack(
        stage_context(args.params),
        args.output,
        anonymized=anonymized,
        steps=args.steps,
        max_eval=args.max_eval,
        tasks=args.tasks,
        eval_tasks=args.eval_tasks,
    )


def _variant_folder(spec: str) -> tuple[str, Path]:
    """``VARIANT=DIR`` of ``--anonymized``."""
    variant, sep, folder = spec.partition("=")
    if not sep or not variant or not folder:
        raise InputError(f"--anonymized {spec!r}: expected VARIANT=DIR")
    return variant, Path(folder)
