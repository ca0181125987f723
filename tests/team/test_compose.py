"""infra/team/compose.yaml, the team stack as containers: the same servers and versions as
`veiltune team up` and the constraints, and no secret in the file. (Not run here: no
container engine; `docker-compose config` validated it by hand, docs/team.md.)"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "infra" / "team" / "compose.yaml"


def _pins() -> dict[str, str]:
    lines = (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
    return dict(line.lower().split("==", 1) for line in lines if "==" in line)


def test_compose_runs_the_stacks_servers_at_the_pinned_versions() -> None:
    compose = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"postgres", "mlflow", "prefect-server", "worker"} <= set(services)
    pins = _pins()
    mlflow = services["mlflow"]["command"]
    assert f"mlflow[auth]=={pins['mlflow']}" in mlflow and "--app-name basic-auth" in mlflow
    assert f"psycopg2-binary=={pins['psycopg2-binary']}" in mlflow
    assert "--artifacts-destination" in mlflow  # artifacts proxied by the server
    assert services["prefect-server"]["image"].startswith(f"prefecthq/prefect:{pins['prefect']}-")
    assert "PREFECT_SERVER_API_AUTH_STRING" in services["prefect-server"]["command"]
    assert "veiltune team pool" in services["worker"]["command"]  # the locked job template
    # the team's salt and DVC remote: each stage restores what another worker computed
    assert services["worker"]["environment"]["VEILTUNE_SALT_FILE"] == "/run/veiltune-salt"
    assert "dvc remote add -f -d --local team /srv/dvc-remote" in services["worker"]["command"]


def test_compose_holds_no_secret_and_names_each_one_it_needs() -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    assert not re.search(r"(?i)password\s*[:=]\s*[A-Za-z0-9]", text.replace("$$", "$"))
    example = (COMPOSE.parent / "team.env.example").read_text(encoding="utf-8")
    named = set(re.findall(r"^([A-Z_]+)=$", example, flags=re.MULTILINE))
    used = set(re.findall(r"\$\$?\{?([A-Z_]+(?:PASSWORD|SECRET_KEY|SALT))", text))
    assert used <= named, used - named
    assert "infra/team/team.env" in (REPO / ".gitignore").read_text(encoding="utf-8")
