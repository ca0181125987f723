"""``veiltune``: a subcommand per pipeline stage (from the registry, ``components.stages``),
plus the tools around them: detect, evaluate-detection, calibrate, review import, grades
export/import, utility-report, utility-profile, utility-pack, promote/demote, flow, serve,
purge-raw, params. No stage logic lives here.

Each command is one function that builds its parser and names its handler
(``set_defaults(handler=...)``) beside it: the stages' in ``stage_commands``, the tools' in
the module of their kind; ``app`` lists them and runs the handler the words given chose.
"""

from __future__ import annotations

from veiltune.cli.app import (
    OFFLINE_ENVIRONMENT,
    OWN_LOGGERS,
    build_parser,
    configure_logging,
    main,
)

__all__ = ["OFFLINE_ENVIRONMENT", "OWN_LOGGERS", "build_parser", "configure_logging", "main"]
