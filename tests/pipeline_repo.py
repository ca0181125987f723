"""A throwaway git + DVC repository holding the project's pipeline, for end-to-end tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from components.ingest.config import DialogSumConfig

REPO_ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# What dvc.yaml names as code dependencies, copied so the stages' deps exist.
PIPELINE_FILES = (
    "dvc.yaml",
    "params.yaml",
    "components",
    "audits",
    "veiltune",  # for its policy/; whole, so no half package shadows the installed one
    ".gitignore",
    ".dvcignore",  # keeps the signing key, made beside the salt, out of data/raw's hash
)

# DialogSum's first dialogues from the sample that ships in components/ (copied above),
# by params.yaml's relative path: the temporary repo needs nothing beside it.
TINY_DIALOGSUM = 6

TINY_PARAMS: dict[str, dict[str, Any]] = {
    "ingest": {"n_conversations": 14, "heldout_fraction": 0.2,
               "dialogsum": {"path": DialogSumConfig().path, "max_dialogues": TINY_DIALOGSUM},
               "canary_repetitions": [1, 2], "audit_canaries": 24},
    "train": {"max_steps": 2, "batch_size": 2, "max_seq_length": 160, "lora_r": 4,
              "lora_alpha": 8},
    "evaluate": {"max_conversations": 2, "max_new_tokens": 8, "max_prompt_tokens": 128},
    "audit": {"n_prompts": 2, "max_new_tokens": 12, "canary_candidates": 20,
              "extraction_prefixes": 2, "mia_conversations": 3, "plain_sight_conversations": 3,
              "dp_guesses": 6},
}  # fmt: skip


def make_pipeline_repo(root: Path, base_model_dir: Path, **overrides: dict[str, Any]) -> Path:
    """A git repo with DVC initialised, the pipeline, and tiny params (base model pre-built)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    for name in PIPELINE_FILES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / name)
    update_params(repo, {**TINY_PARAMS, **overrides})
    update_params(repo, {"base_model": {"source": str(base_model_dir)}})
    for command in (
        ["git", "init", "-q"],
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty",
         "-m", "init"],
        [str(BIN / "dvc"), "init", "-q"],
        [str(BIN / "dvc"), "config", "core.analytics", "false"],
    ):  # fmt: skip
        subprocess.run(command, cwd=repo, check=True, env=pipeline_env())
    # The plots' templates and the offline page `dvc plots show` writes (.dvc/config names it).
    shutil.copytree(REPO_ROOT / ".dvc" / "plots", repo / ".dvc" / "plots")
    shutil.copy2(REPO_ROOT / ".dvc" / "config", repo / ".dvc" / "config")
    return repo


# What a copy of a repo leaves behind: the MLflow store (its experiment names the original's
# artifact folder by absolute path), the original's open pipeline run, DVC's state.
NOT_COPIED = ("mlflow.db", "mlartifacts", ".veiltune/pipeline_run.json", ".dvc/tmp")


def build_gated_repo(root: Path, base_model_dir: Path) -> None:
    """``root / "repo"``: a pipeline repo on the tiny params, run through ``gate``."""
    repo = make_pipeline_repo(root, base_model_dir)
    gated = dvc_repro(repo, "gate")
    assert gated.returncode == 0, gated.stdout[-3000:] + gated.stderr[-3000:]


def copy_gated_repo(template: Path, root: Path, **overrides: dict[str, Any]) -> Path:
    """A repo of its own holding what ``build_gated_repo`` computed, ``overrides`` applied to
    its params: `dvc repro` there reruns only what they change (and what follows ``gate``)."""
    repo = root / "repo"
    shutil.copytree(template / "repo", repo, symlinks=True)
    for name in NOT_COPIED:
        path = repo / name
        if path.is_dir():
            shutil.rmtree(path)
        path.unlink(missing_ok=True)
    update_params(repo, overrides)
    return repo


def update_params(repo: Path, sections: dict[str, dict[str, Any]]) -> None:
    """Set ``sections``' keys in the repo's params.yaml, each in its stage's section."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    for stage, values in sections.items():
        params[stage].update(values)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def pipeline_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_"))}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        DVC_NO_ANALYTICS="1",
        HF_HUB_OFFLINE="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )
    env.update(extra)
    return env


def dvc_repro(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "dvc"), "repro", *args], cwd=repo, env=pipeline_env(),
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
