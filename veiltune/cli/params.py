"""``veiltune params``: the params the stages read, every default filled in; with
``--schema``, the JSON schema of params.yaml (from the stages' config dataclasses)."""

from __future__ import annotations

import argparse
import json

import yaml

from components.core.params_schema import params_data, params_schema
from components.stages import SECTIONS, STAGES, stage_context
from veiltune.cli.options import Commands, add_params


def add_params_command(commands: Commands) -> None:
    text = (
        "Print the params the stages read from params.yaml, as YAML: every stage's key, "
        "with the defaults filled in for what the file leaves out. With --schema, print "
        "instead the JSON schema of params.yaml (each key's type, default and meaning; no "
        "key outside them), for an editor or the Prefect deployment to check a params file "
        "with. The ranges each stage checks when it reads its key are not in the schema."
    )
    short = "Print the params every stage reads, defaults filled in; --schema: their JSON schema."
    sub = commands.add_parser("params", help=short, description=text)
    add_params(sub)
    sub.add_argument(
        "--schema",
        action="store_true",
        help="print the JSON schema (draft 2020-12) of params.yaml; reads no params file",
    )
    sub.set_defaults(handler=_params)


def _params(args: argparse.Namespace) -> None:
    """Printed here, not returned: the schema's keys and the params' stages keep their order."""
    if args.schema:
        stage_help = {stage.name: stage.help for stage in STAGES}
        print(json.dumps(params_schema(SECTIONS, stage_help), indent=2, ensure_ascii=False))
        return
    configs = stage_context(args.params).configs
    print(yaml.safe_dump(params_data(configs), sort_keys=False, allow_unicode=True), end="")
