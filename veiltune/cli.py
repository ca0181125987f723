"""``veiltune``: a subcommand per pipeline stage, plus detect, anonymize, flow and serve."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from components.core import paths

# Nothing downloads at run time; Prefect and Great Expectations send no analytics.
OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "GX_ANALYTICS_ENABLED": "false",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
}

STAGE_HELP = {
    "ingest": "Validate a user corpus, or generate the embedded one; split train/held-out.",
    "base-model": "Turn the bundled SmolLM2 GGUF (or a named folder) into a HF model folder.",
    "risk": "Score the residual risk of each conversation (ground truth and automatic scan).",
    "gate": "Great Expectations gate: refuse the corpus unless mean + std of risk < threshold.",
    "train": "LoRA fine-tune the base model on the anonymized corpus.",
    "evaluate": "Utility on held-out raw text: ROUGE, accuracy/macro-F1, perplexity; base too.",
    "audit": "Attack the trained model: PI in outputs, canary exposure, extraction, membership.",
    "register": "Register the adapter in MLflow as candidate; champion if gate and audits "
    "passed, it learnt from the anonymized corpus and its utility is at least the champion's.",
    "export": "Write the compliance bundle (report, model card, manifest with sha256 of "
    "every file, zip); with --verify BUNDLE, check a bundle folder or zip instead.",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veiltune",
        description="Fine-tune language models on sensitive conversations without leaking "
        "the people in them. Each pipeline stage reads its own key of params.yaml; "
        "`dvc repro` runs them in order.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    # The `deepspeed` launcher passes --local_rank to every process it starts; the rank
    # also arrives in LOCAL_RANK, which is what training reads.
    parser.add_argument("--local_rank", "--local-rank", type=int, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in STAGE_HELP.items():
        stage = commands.add_parser(name, help=text, description=text)
        _add_params(stage)
    commands.choices["export"].add_argument(
        "--verify", type=Path, metavar="BUNDLE",
        help="check a bundle folder or .zip against its manifest (exit 5 when not intact)",
    )  # fmt: skip
    _add_anonymize(commands)
    _add_detect(commands)
    _add_evaluate_detection(commands)
    _add_review(commands)
    _add_utility_report(commands)
    _add_promote_demote(commands)
    _add_flow(commands)
    _add_serve(commands)
    _add_purge_raw(commands)
    return parser


def _add_params(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--params", type=Path, default=paths.PARAMS, help="params file (default: params.yaml)"
    )


def _add_anonymize(commands: Any) -> None:
    text = (
        "Replace personal information with placeholders numbered within each conversation. "
        "With --spans/--metrics it runs as the pipeline stage (and logs to MLflow)."
    )
    sub = commands.add_parser("anonymize", help=text.split(". ")[0] + ".", description=text)
    _add_params(sub)
    sub.add_argument("--input", type=Path, default=paths.RAW_CORPUS, help="JSONL corpus")
    sub.add_argument("--output", type=Path, default=paths.ANON_CORPUS, help="JSONL to write")
    sub.add_argument("--spans", type=Path, help="also write one record per replaced span")
    sub.add_argument("--metrics", type=Path, help="also write stage metrics (stage mode)")


def _add_detect(commands: Any) -> None:
    text = (
        'Detect personal information: for each {"id", "text"} record write {"id", "spans"} '
        "with character offsets (per-turn spans, tagged with turn, for records with turns)."
    )
    sub = commands.add_parser("detect", help="Detect personal information spans.", description=text)
    _add_params(sub)
    sub.add_argument("--input", type=Path, required=True, help="JSONL records")
    sub.add_argument("--output", type=Path, required=True, help="JSONL spans to write")


def _add_evaluate_detection(commands: Any) -> None:
    text = (
        "Score detection on labelled data: character precision/recall (label-agnostic, "
        "neutral types excluded) and entity recall per type; logged to MLflow."
    )
    sub = commands.add_parser("evaluate-detection", help=text.split(":")[0] + ".", description=text)
    _add_params(sub)
    sub.add_argument(
        "--dataset", required=True, choices=["embedded", "presidio_research", "wnut17", "jsonl"],
        help="format of the labelled data",
    )  # fmt: skip
    sub.add_argument("--path", type=Path, help="file of labelled data (not for embedded)")
    sub.add_argument("--limit", type=int, help="score only the first N texts")
    sub.add_argument(
        "--output", type=Path, default=paths.METRICS_DIR / "evaluate_detection.json",
        help="metrics file to write",
    )  # fmt: skip


def _add_review(commands: Any) -> None:
    text = (
        "The human review loop: export a stratified sample of anonymized conversations for "
        "reviewers, then import their (missed text)[MISSED_TYPE] annotations and score them."
    )
    sub = commands.add_parser("review", help=text.split(":")[0] + ".", description=text)
    actions = sub.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export", help="write review_sample.jsonl (to annotate) and review.html (to read)"
    )
    _add_params(export)
    export.add_argument("--output", type=Path, default=paths.REVIEW_DIR, help="folder to write")
    imported = actions.add_parser("import", help="score annotations next to the automatic estimate")
    _add_params(imported)
    imported.add_argument("--input", type=Path, required=True, help="annotated review JSONL")
    imported.add_argument(
        "--output", type=Path, default=paths.REVIEW_DIR / "annotated_risk.json",
        help="report to write",
    )  # fmt: skip


def _add_utility_report(commands: Any) -> None:
    text = (
        "Tabulate utility across DVC experiments: base zero-shot, masked, anonymized and "
        "oracle adapters (run them with `dvc exp run -S train.corpus=raw|masked`)."
    )
    sub = commands.add_parser("utility-report", help=text.split(":")[0] + ".", description=text)
    _add_params(sub)
    sub.add_argument(
        "--output", type=Path, default=paths.UTILITY_REPORT, help="folder for md/json/png"
    )


def _add_promote_demote(commands: Any) -> None:
    text = (
        "Give the champion alias to a registered version (register.model_name); the previous "
        "champion loses it. A version whose gate or audit failed needs --force --reason."
    )
    sub = commands.add_parser("promote", help=text.split(";")[0] + ".", description=text)
    _add_params(sub)
    sub.add_argument("version", metavar="VERSION", help="model version number, e.g. 3")
    sub.add_argument("--force", action="store_true", help="promote despite a failed gate/audit")
    sub.add_argument("--reason", default="", help="why the promotion is forced (recorded as a tag)")
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
    from flows.overrides import PROTECTED_PARAMS

    sub.add_argument(
        "--allow-overrides", action="append", default=[], metavar="PARAMS",
        help="let runs started from the UI override these privacy controls, e.g. "
        f"gate,anonymize (protected: {', '.join(PROTECTED_PARAMS)}; others need no allowance)",
    )  # fmt: skip


def _add_flow_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stages", nargs="+", help="stages to run, in pipeline order (default: all)"
    )
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a param for this run, e.g. --set train.max_steps=5 (YAML value)",
    )  # fmt: skip
    parser.add_argument("--corpus", help="path of a JSONL corpus (sets ingest.corpus_path)")


def _run_command(args: argparse.Namespace) -> Any:
    from veiltune import stages

    stage_entries: dict[str, Callable[[Path], Any]] = {
        "ingest": stages.ingest,
        "base-model": stages.base_model,
        "risk": stages.risk,
        "gate": stages.gate,
        "train": stages.train,
        "evaluate": stages.evaluate,
        "audit": stages.audit,
        "register": stages.register,
        "export": stages.export,
    }
    if args.command == "export" and args.verify is not None:
        return stages.export_verify(args.verify)
    if args.command in stage_entries:
        return stage_entries[args.command](args.params)
    if args.command == "anonymize":
        return stages.anonymize(args.params, args.input, args.output, args.spans, args.metrics)
    if args.command == "detect":
        return {"records": stages.detect(args.params, args.input, args.output)}
    if args.command == "evaluate-detection":
        return stages.evaluate_detection(
            args.params, args.dataset, args.path, args.limit, args.output
        )
    if args.command == "utility-report":
        return stages.utility_report(args.params, args.output)
    if args.command == "promote":
        return stages.promote(args.params, args.version, args.force, args.reason)
    if args.command == "demote":
        return stages.demote(args.params, args.version)
    if args.command == "review" and args.action == "export":
        return stages.review_export(args.params, args.output)
    if args.command == "review":
        return stages.review_import(args.params, args.input, args.output)
    if args.command == "flow":
        from flows.pipeline import parse_overrides, pipeline

        overrides = parse_overrides(args.overrides)
        return pipeline(stages=args.stages, overrides=overrides, corpus=args.corpus)
    if args.command == "purge-raw":
        return stages.purge_raw(Path.cwd(), args.yes)
    if args.command == "serve":
        from flows.pipeline import serve

        return serve(args.name, args.allow_overrides)
    raise AssertionError(f"unhandled command {args.command}")


def main(argv: Sequence[str] | None = None) -> int:
    for key, value in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for chatty in ("httpx", "httpcore"):  # a line per HTTP request to the Prefect API
        logging.getLogger(chatty).setLevel(logging.WARNING)
    # MLflow logs a store error with its traceback before raising it; store_errors reports
    # it once, naming the store and what to do.
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
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
    if isinstance(result, dict):
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
