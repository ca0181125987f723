"""``veiltune team up | down | status``: the team stack on one machine (docs/team.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from veiltune.cli.options import Commands
from veiltune.team import stack
from veiltune.team.prefect_server import create_pool

DEFAULT_DIR = Path(".veiltune") / "team"


def add_team(commands: Commands) -> None:
    text = (
        "Start, stop or show the team stack on this machine, for trying it: PostgreSQL, and "
        "on it an MLflow tracking server (basic-auth app, proxied artifacts) and a Prefect "
        "server (basic auth, the work pool `veiltune`) (docs/team.md). Credentials are "
        "generated into the folder, owner-only; `source DIR/pipeline.env` points a pipeline "
        "or a worker at the servers."
    )
    sub = commands.add_parser("team", help=text.split(":")[0] + ".", description=text)
    sub.add_argument(
        "action",
        choices=("up", "down", "status", "pool"),
        help="pool: make the work pool `veiltune` with its locked job template on the server "
        "PREFECT_API_URL names (a stack of your own: infra/team/compose.yaml)",
    )
    sub.add_argument(
        "--dir", type=Path, default=DEFAULT_DIR, help=f"the stack's folder (default: {DEFAULT_DIR})"
    )
    sub.set_defaults(handler=_team)


def _team(args: argparse.Namespace) -> Any:
    if args.action == "up":
        return stack.up(args.dir)
    if args.action == "pool":
        return create_pool(dict(os.environ))
    return stack.down(args.dir) if args.action == "down" else stack.status(args.dir)
