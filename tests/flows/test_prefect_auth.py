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


@pytest.fixture
def no_api_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace in ``tmp_path`` whose Prefect settings name no API: a flow run there makes
    Prefect start a temporary server of its own."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    monkeypatch.chdir(tmp_path)
    with temporary_settings(restore_defaults={PREFECT_API_URL, PREFECT_API_AUTH_STRING}):
        yield tmp_path


def refused_without_auth(auth: str | None) -> list[int]:
    """The status the Prefect API app, built from the current settings as the temporary
    server builds it, answers to a request without the auth string, then with a wrong one.
    In process, through ASGI: no server is started."""
    import asyncio
    import base64

    import httpx
    from prefect.server.api.server import create_app

    app = create_app(ephemeral=True, final=True, ignore_cache=True)
    wrong = base64.b64encode(f"{AUTH_USER}:wrong".encode()).decode()

    async def ask() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            statuses = []
            for headers in ({}, {"Authorization": f"Basic {wrong}"}):
                response = await client.post("/api/flow_runs/filter", json={}, headers=headers)
                statuses.append(response.status_code)
            return statuses

    return asyncio.run(ask())


def test_veiltune_flow_gives_its_temporary_prefect_server_the_workspace_auth(
    no_api_configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.settings import (
        PREFECT_API_AUTH_STRING,
        PREFECT_SERVER_API_AUTH_STRING,
        get_current_settings,
    )

    from flows import pipeline as pipeline_module
    from veiltune.cli import main

    seen: dict[str, object] = {}

    def fake_pipeline(**_: object) -> list[str]:  # where the flow run would start the server
        # what Prefect starts its temporary server (uvicorn) with, and what its clients send
        server_env = get_current_settings().to_environment_variables(exclude_unset=True)
        seen["server"] = server_env.get("PREFECT_SERVER_API_AUTH_STRING")
        seen["client"] = PREFECT_API_AUTH_STRING.value()
        seen["statuses"] = refused_without_auth(PREFECT_SERVER_API_AUTH_STRING.value())
        return []

    monkeypatch.setattr(pipeline_module, "pipeline", fake_pipeline)
    assert main(["flow", "--stages", "ingest"]) == 0
    auth = (no_api_configured / AUTH_FILE).read_text(encoding="utf-8").strip()
    assert seen == {"server": auth, "client": auth, "statuses": [401, 401]}
    assert mode(no_api_configured / AUTH_FILE) == 0o600
    assert PREFECT_SERVER_API_AUTH_STRING.value() is None  # for this run only


def test_a_configured_prefect_api_keeps_its_own_auth(
    no_api_configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace's password goes to no server veiltune did not start."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    from flows import pipeline as pipeline_module
    from veiltune.cli import main

    seen: list[str | None] = []
    monkeypatch.setattr(
        pipeline_module, "pipeline", lambda **_: seen.append(PREFECT_API_AUTH_STRING.value())
    )
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:4200/api"}):
        assert main(["flow", "--stages", "ingest"]) == 0
    assert seen == [None] and not (no_api_configured / AUTH_FILE).exists()
