"""`make ui`'s script hands the workspace's auth string to the server and to `veiltune serve`.

`prefect`, `curl` and `veiltune` are stand-ins that record what they were given: the real
server with the same settings is tested in test_pipeline_flow.py.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.pipeline_repo import BIN, REPO_ROOT

RECORD = """#!/usr/bin/env bash
{{ echo "args=$*"; env | grep -E '^PREFECT_(SERVER_)?API_AUTH_STRING=' | sort; }} > "{out}/{name}"
{then}
"""


def stand_in(folder: Path, out: Path, *, name: str, then: str) -> None:
    script = folder / name
    script.write_text(RECORD.format(out=out, name=name, then=then))
    script.chmod(0o755)


def test_ui_sh_gives_the_server_and_serve_the_same_private_auth_string(tmp_path: Path) -> None:
    fakes, out, workspace = tmp_path / "bin", tmp_path / "out", tmp_path / "workspace"
    for folder in (fakes, out, workspace):
        folder.mkdir()
    stand_in(fakes, out, name="prefect", then="exec sleep 60")  # the server runs until stopped
    stand_in(fakes, out, name="veiltune", then="exit 0")
    stand_in(fakes, out, name="curl", then="exit 0")  # healthy at once
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PATH"] = f"{fakes}{os.pathsep}{BIN}{os.pathsep}/usr/bin:/bin"
    subprocess.run(
        [
            "bash",
            str(REPO_ROOT / "infra" / "prefect" / "ui.sh"),
            "4299",
            "--allow-overrides",
            "gate",
        ],
        cwd=workspace,
        env=env,
        check=True,
        timeout=60,
    )
    auth_file = workspace / ".prefect" / "auth"
    auth = auth_file.read_text().strip()
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert (out / "prefect").read_text().splitlines() == [
        "args=server start --host 127.0.0.1 --port 4299",
        f"PREFECT_SERVER_API_AUTH_STRING={auth}",
    ]
    assert (out / "veiltune").read_text().splitlines() == [
        "args=serve --allow-overrides gate",
        f"PREFECT_API_AUTH_STRING={auth}",
    ]
