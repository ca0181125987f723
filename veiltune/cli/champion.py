"""The champion alias of the registered model: ``promote`` and ``demote``."""

from __future__ import annotations

import argparse
from typing import Any

from components.core.errors import InputError, PromotionRefused
from components.register import commands
from components.register.config import RegisterConfig
from components.stages import stage_context
from veiltune.cli.options import Commands, add_params


def add_promote(commands: Commands) -> None:
    text = (
        "Give the champion alias to a registered version (register.model_name); the previous "
        "champion loses it. Judged by the version's signed evidence, never its tags: evidence "
        "that does not hold, a failed gate or audit needs --force --reason. --check audits "
        "the version holding champion (exit 1 when its evidence does not hold, or none does)."
    )
    short = "Give the champion alias to a registered version, judged by its signed evidence."
    sub = commands.add_parser("promote", help=short, description=text)
    add_params(sub)
    sub.add_argument("version", metavar="VERSION", nargs="?", help="model version number, e.g. 3")
    sub.add_argument("--force", action="store_true", help="promote despite a failed gate/audit")
    sub.add_argument("--reason", default="", help="why the promotion is forced (recorded as a tag)")
    sub.add_argument(
        "--check", action="store_true", help="check the current champion's evidence; no VERSION"
    )
    sub.set_defaults(handler=_promote)


def _promote(args: argparse.Namespace) -> Any:
    """``promote VERSION``, or ``promote --check``: a verdict line per check, exit 1 unless
    the champion's evidence holds."""
    context = stage_context(args.params)
    register = context.config(RegisterConfig)
    if args.check == (args.version is not None):
        raise InputError("promote takes a VERSION, or --check alone")
    if not args.check:
        return commands.promote(
            register, context, version=args.version, force=args.force, reason=args.reason
        )
    if args.force or args.reason:
        raise InputError("--check promotes nothing: --force and --reason do not apply")
    verdict = commands.check_champion(register, context)
    print("\n".join(verdict.lines()))
    if not verdict.holds:
        raise PromotionRefused(verdict.failure())
    return None


def add_demote(commands: Commands) -> None:
    text = "Take the champion alias from a version; no version is champion afterwards."
    sub = commands.add_parser("demote", help=text.split(";")[0] + ".", description=text)
    add_params(sub)
    sub.add_argument("version", metavar="VERSION", help="model version number, e.g. 3")
    sub.set_defaults(handler=_demote)


def _demote(args: argparse.Namespace) -> Any:
    register = stage_context(args.params).config(RegisterConfig)
    return commands.demote(register, args.version)
