"""The salt an ingest writes: fresh each time, or the team's from ``VEILTUNE_SALT_FILE``,
which is a secret: refused unless owner-only, and never quoted in an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from components.core.errors import InputError
from components.core.salt import SALT_FILE_ENV, ingest_salt

TEAM_SALT = "3f1c" * 8  # 32 characters, as `openssl rand -hex 16` writes


def _salt_file(folder: Path, text: str, *, mode: int = 0o600) -> Path:
    path = folder / "salt"
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_without_a_team_salt_each_ingest_draws_a_fresh_one() -> None:
    salts = {ingest_salt({}) for _ in range(3)} | {ingest_salt({SALT_FILE_ENV: " "})}
    assert len(salts) == 4 and all(len(s) == 32 for s in salts)


def test_the_team_salt_is_read_from_an_owner_only_file(tmp_path: Path) -> None:
    path = _salt_file(tmp_path, TEAM_SALT + "\n")
    assert ingest_salt({SALT_FILE_ENV: str(path)}) == TEAM_SALT


@pytest.mark.parametrize(
    ("text", "mode", "expected"),
    [
        (TEAM_SALT, 0o640, "readable by others than its owner; `chmod 600"),
        (TEAM_SALT, 0o604, "readable by others than its owner"),
        (TEAM_SALT[:20], 0o600, "at least 32 characters on one line"),
        (f"{TEAM_SALT} {TEAM_SALT}", 0o600, "at least 32 characters on one line"),
        ("", 0o600, "at least 32 characters"),
    ],
)
def test_a_bad_team_salt_is_one_error_naming_the_file_never_its_content(
    tmp_path: Path, text: str, *, mode: int, expected: str
) -> None:
    path = _salt_file(tmp_path, text, mode=mode)
    with pytest.raises(InputError, match=expected) as raised:
        ingest_salt({SALT_FILE_ENV: str(path)})
    assert f"VEILTUNE_SALT_FILE={path}" in str(raised.value)
    assert TEAM_SALT[:20] not in str(raised.value)


def test_a_missing_team_salt_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no such file \(`umask 077; openssl rand -hex 16"):
        ingest_salt({SALT_FILE_ENV: str(tmp_path / "absent")})
