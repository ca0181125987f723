"""``python -m veiltune.cli``: what the launchers start (deepspeed --module, torchrun -m)."""

from __future__ import annotations

import sys

from veiltune.cli.app import main

sys.exit(main())
