"""A PostgreSQL cluster of the team stack's own: ``initdb`` into a folder, ``pg_ctl`` to start
and stop it on a loopback port, password (SCRAM) authentication for every TCP client.

PostgreSQL refuses to run as root. When veiltune runs as root (a container, CI), the cluster's
programs run as the ``postgres`` system user (Debian's package creates it), which must be able
to enter the folder; the error says so when it cannot.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from components.core.errors import BackendError

SUPERUSER = "postgres"
SYSTEM_USER = "postgres"  # who runs the cluster when veiltune runs as root
START_TIMEOUT_S = 60
DEBIAN_BIN = Path("/usr/lib/postgresql")  # Debian keeps initdb and pg_ctl off PATH


def _program(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(DEBIAN_BIN.glob(f"*/bin/{name}"), reverse=True)
    if versions:
        return str(versions[0])
    raise BackendError(
        f"PostgreSQL's {name} is not installed (Debian: apt-get install postgresql; "
        "veiltune team needs PostgreSQL 13 or newer)"
    )


@dataclass(frozen=True)
class Cluster:
    """A cluster in ``folder`` (data in ``folder/data``, its log ``folder/postgres.log``)."""

    folder: Path
    port: int

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    def url(self, user: str, password: str, *, database: str, driver: str = "") -> str:
        """A connection URL; ``driver`` names SQLAlchemy's (``psycopg2``), none for libpq."""
        scheme = f"postgresql+{driver}" if driver else "postgresql"
        return f"{scheme}://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def init(self, superuser_password: str) -> None:
        """``initdb``: a new cluster whose superuser has ``superuser_password``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        _own(self.folder)
        password_file = self.folder / ".pwfile"
        password_file.write_text(superuser_password + "\n", encoding="utf-8")
        password_file.chmod(0o600)
        try:
            _own(password_file)
            self._run(
                _program("initdb"),
                "--pgdata",
                str(self.data),
                "--username",
                SUPERUSER,
                f"--pwfile={password_file}",
                "--auth-host=scram-sha-256",
                "--auth-local=scram-sha-256",
                "--encoding=UTF8",
                "--no-instructions",
            )
        finally:
            password_file.unlink(missing_ok=True)

    def start(self) -> None:
        """Start the cluster on 127.0.0.1:``port`` (its socket in the folder, not /run)."""
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder}"
        self._run(
            _program("pg_ctl"),
            "start",
            "--pgdata",
            str(self.data),
            "--log",
            str(self.log),
            "--wait",
            f"--timeout={START_TIMEOUT_S}",
            "-o",
            options,
        )

    def stop(self) -> None:
        if self.running():
            self._run(_program("pg_ctl"), "stop", "--pgdata", str(self.data), "--mode=fast")

    def running(self) -> bool:
        if not self.data.is_dir():
            return False
        done = subprocess.run(
            [*_as_cluster_user(), _program("pg_ctl"), "status", "--pgdata", str(self.data)],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.returncode == 0

    def create_database(
        self, name: str, owner: str, *, owner_password: str, superuser_password: str
    ) -> None:
        """A role ``owner`` (password ``owner_password``) and a database ``name`` it owns."""
        import psycopg2

        try:
            connection = psycopg2.connect(
                self.url(SUPERUSER, superuser_password, database="postgres")
            )
        except psycopg2.Error as exc:
            raise BackendError(f"PostgreSQL on 127.0.0.1:{self.port}: {_first_line(exc)}") from exc
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (owner,))
                if cursor.fetchone() is None:
                    cursor.execute(f'CREATE ROLE "{owner}" LOGIN PASSWORD %s', (owner_password,))
                cursor.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        finally:
            connection.close()

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*_as_cluster_user(), *command], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise BackendError(
                f"PostgreSQL: {Path(command[0]).name} failed in {self.folder}: "
                f"{tail[0]} (log: {self.log})"
            )


def _as_cluster_user() -> list[str]:
    return ["runuser", "-u", SYSTEM_USER, "--"] if os.geteuid() == 0 else []


def _own(path: Path) -> None:
    """As root: give the folder (or file) to the cluster's user, and check it can reach it."""
    if os.geteuid() != 0:
        path.chmod(0o700 if path.is_dir() else 0o600)
        return
    try:
        shutil.chown(path, SYSTEM_USER, SYSTEM_USER)
    except LookupError as exc:
        raise BackendError(
            f"PostgreSQL refuses to run as root, and there is no {SYSTEM_USER!r} user to run it "
            "as: install Debian's postgresql package, or run veiltune team as an ordinary user"
        ) from exc
    if not path.is_dir():
        return
    folder = path
    folder.chmod(0o700)
    reach = subprocess.run(
        [*_as_cluster_user(), "test", "-w", str(folder)], capture_output=True, check=False
    )
    if reach.returncode != 0:
        raise BackendError(
            f"{folder}: PostgreSQL refuses to run as root, and the {SYSTEM_USER!r} user it runs "
            "as cannot enter this folder (a parent folder is closed to it): choose a --dir it "
            "can reach, or run veiltune team as an ordinary user"
        )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
