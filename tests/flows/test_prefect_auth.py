"""The Prefect server's basic-auth string: generated once per workspace, private, reused."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.core.errors import InputError
from flows.prefect_auth import AUTH_FILE, AUTH_USER, ensure_auth_string

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=[0o000, 0o022, 0o077])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    yield int(request.param)
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_auth_string_is_generated_private_and_reused(tmp_path: Path, umask: int) -> None:
    path = tmp_path / ".prefect" / "auth"
    auth = ensure_auth_string(path)
    user, _, password = auth.partition(":")
    assert user == AUTH_USER and len(password) >= 40 and ":" not in password
    assert mode(path.parent) == 0o700 and mode(path) == 0o600
    assert ensure_auth_string(path) == auth
    assert ensure_auth_string(tmp_path / "other" / "auth") != auth  # random per workspace


def test_an_existing_file_is_made_private_again_and_a_deleted_one_rotates(tmp_path: Path) -> None:
    path = tmp_path / ".prefect" / "auth"
    path.parent.mkdir(mode=0o755)
    path.write_text("me:secret-password\n")
    path.chmod(0o644)
    assert ensure_auth_string(path) == "me:secret-password"
    assert mode(path.parent) == 0o700 and mode(path) == 0o600
    path.unlink()
    assert ensure_auth_string(path) != "me:secret-password"


@pytest.mark.parametrize("content", ["", "no-colon\n", ":password", "user:", "a b:c"])
def test_a_malformed_file_is_refused_with_how_to_fix_it(tmp_path: Path, content: str) -> None:
    path = tmp_path / "auth"
    path.write_text(content)
    with pytest.raises(InputError, match="delete it"):
        ensure_auth_string(path)


def test_the_module_creates_the_file_for_ui_sh_without_printing_it(tmp_path: Path) -> None:
    path = tmp_path / ".prefect" / "auth"
    result = subprocess.run(
        [sys.executable, "-m", "flows.prefect_auth", str(path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert path.is_file() and path.read_text().strip() not in result.stdout + result.stderr


def test_the_auth_file_is_kept_out_of_git() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(AUTH_FILE)], cwd=REPO_ROOT, check=False
    )
    assert ignored.returncode == 0, f"{AUTH_FILE} is not git-ignored"
