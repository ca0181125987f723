"""The ``veiltune`` command: its parser, built from each command's own builder, and
``main``, which runs the handler the parsed words chose and prints its result."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from components.core.errors import VeiltuneError
from components.core.library_noise import silence_library_noise
from components.core.tracking import store_errors
from veiltune.cli import champion, detection, evaluation, operations, team
from veiltune.cli.options import Commands, StageRun
from veiltune.cli.params import add_params_command
from veiltune.cli.stage_commands import add_stage_commands

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

# The tools beside the stages, in the order --help lists them: each builds its command's
# parser and names its handler. A new command is one such function, added here.
TOOLS: tuple[Callable[[Commands], None], ...] = (
    detection.add_detect,
    detection.add_evaluate_detection,
    detection.add_calibrate,
    detection.add_train_ner,
    evaluation.add_grades,
    evaluation.add_utility_report,
    evaluation.add_utility_profile,
    evaluation.add_utility_pack,
    champion.add_promote,
    champion.add_demote,
    operations.add_flow,
    operations.add_serve,
    operations.add_deploy,
    operations.add_purge_raw,
    team.add_team,
    add_params_command,
)


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
    add_stage_commands(commands)  # the stages first, in pipeline order, then the tools
    for add_tool in TOOLS:
        add_tool(commands)
    return parser


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

    try:
        with store_errors():
            result = args.handler(args)
    except VeiltuneError as exc:
        print(f"veiltune {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"veiltune {args.command}: interrupted", file=sys.stderr)
        return 130
    print_result(result, json_wanted=getattr(args, "json", False))
    return 0


def print_result(result: Any, *, json_wanted: bool) -> None:
    """A stage's one summary line (its metrics are in metrics/<stage>.json and MLflow), or
    with --json its metrics; a tool's dict as JSON; nothing for anything else."""
    if isinstance(result, StageRun) and not json_wanted:
        print(result.stage.summary(result.metrics))
        return
    data = result.metrics if isinstance(result, StageRun) else result
    if isinstance(data, dict):
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
