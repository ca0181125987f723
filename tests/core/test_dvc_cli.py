"""DVC runs from the interpreter veiltune runs on, and the stage commands it starts find
``veiltune`` though the shell never activated the virtual environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from components.core.dvc_cli import dvc_command, dvc_environment


def test_a_bare_path_still_finds_this_environments_commands() -> None:
    bare = {"PATH": "/usr/bin:/bin", "HOME": "/h"}
    env = dvc_environment(bare)
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert env["HOME"] == "/h" and bare["PATH"] == "/usr/bin:/bin"  # the base is not changed
    found = subprocess.run(
        ["sh", "-c", "command -v veiltune"], env=env, capture_output=True, text=True, check=False
    )
    assert found.stdout.strip() == str(Path(sys.executable).parent / "veiltune")
    assert dvc_command("exp", "show")[:3] == [sys.executable, "-m", "dvc"]
