"""Workers on one DVC remote (flows/repro.py): a second workspace restores from the remote
what the first computed instead of computing it, given the team's salt; without it, the
stage runs; a remote the worker cannot write to is one error naming it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from components.core import paths
from components.core.dvc_cli import Remote, default_remote
from components.core.salt import SALT_FILE_ENV
from flows.repro import push_outputs, repro_stage
from flows.stage_process import Ended, StageFailed
from tests.pipeline_repo import BIN, copy_gated_repo, make_pipeline_repo, pipeline_env

# What the gated repo ran (`dvc repro gate`: review is not upstream of gate), in order.
STAGES = ("ingest", "base_model", "anonymize", "risk", "gate")
# Outputs the second workspace must hold byte for byte as the first: ingest's own (computed
# again from the same corpus and salt), and what each later stage restored.
SAME = (
    paths.RAW_CORPUS, paths.INVENTORY, Path("data/anonymized/corpus.jsonl"),
    Path("data/anonymized/spans.jsonl"), Path("data/risk/risk_table.csv"),
    paths.metrics_file("anonymize"), paths.metrics_file("gate"),
)  # fmt: skip


def add_remote(repo: Path, url: Path | str) -> Remote:
    """``dvc remote add -d --local team URL``, as docs/team.md has each worker do."""
    subprocess.run(
        [str(BIN / "dvc"), "remote", "add", "-d", "--local", "team", str(url)],
        cwd=repo, env=pipeline_env(), check=True, capture_output=True,
    )  # fmt: skip
    remote = default_remote(repo)
    assert remote is not None
    return remote


def team_salt(folder: Path, salt: str) -> Path:
    path = folder / "team-salt"
    path.write_text(salt)
    path.chmod(0o600)
    return path


def run_stages(repo: Path, stages: tuple[str, ...], *, salt: Path) -> dict[str, Ended]:
    env = pipeline_env(**{SALT_FILE_ENV: str(salt)})
    remote = default_remote(repo)
    ended: dict[str, Ended] = {}
    for stage in stages:
        outcome = repro_stage(stage, env, cwd=repo, remote=remote, on_line=lambda _: None)
        ended[stage] = outcome.ended
    return ended


@pytest.mark.slow
def test_a_second_worker_restores_what_the_first_computed_and_no_raw_text_travels(
    tmp_path: Path, gated_repo: Path, *, base_model_dir: Path
) -> None:
    first = copy_gated_repo(gated_repo, tmp_path / "first")
    remote = add_remote(first, tmp_path / "remote")
    # what the first worker computed, pushed as its flow pushes after each stage
    push_outputs(remote, STAGES, env=pipeline_env(), cwd=first, on_line=lambda _: None)
    salt = (first / paths.SALT).read_text().strip()
    second = make_pipeline_repo(tmp_path / "second", base_model_dir)
    add_remote(second, tmp_path / "remote")

    ended = run_stages(second, STAGES, salt=team_salt(tmp_path, salt))

    assert ended == {"ingest": "Ran", **{stage: "Restored" for stage in STAGES[1:]}}
    for path in SAME:
        assert (second / path).read_bytes() == (first / path).read_bytes(), path
    # raw text never reached the remote: not the corpus, not the salt
    stored = [p.read_bytes() for p in (tmp_path / "remote").rglob("*") if p.is_file()]
    raw_line = (first / paths.RAW_CORPUS).read_bytes().splitlines()[0]
    assert stored and not any(raw_line in b or salt.encode() in b for b in stored)

    # The control: another salt makes another corpus, so anonymize computes (the remote
    # holds nothing for its inputs) and its outputs differ. The salt is no dependency of
    # ingest in dvc.yaml (it is a secret): a new one needs ingest run again, here by
    # removing its outputs (docs/team.md: `dvc repro -f -s ingest`).
    other = team_salt(tmp_path / "second", "a" * 32)
    shutil.rmtree(second / paths.RAW_DIR)
    again = run_stages(second, ("ingest", "anonymize"), salt=other)
    assert again == {"ingest": "Ran", "anonymize": "Ran"}
    anonymized = Path("data/anonymized/corpus.jsonl")
    assert (second / anonymized).read_bytes() != (first / anonymized).read_bytes()


def test_a_remote_the_worker_cannot_write_to_fails_the_stage_naming_it(tmp_path: Path) -> None:
    subprocess.run(
        [str(BIN / "dvc"), "init", "--no-scm", "-q"], cwd=tmp_path, check=True, env=pipeline_env()
    )
    (tmp_path / "in.txt").write_text("in\n")
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  hello:\n    cmd: echo hi > out.txt\n    deps: [in.txt]\n    outs: [out.txt]\n"
    )
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    remote = add_remote(tmp_path, blocked / "remote")  # a folder inside a file: unwritable
    with pytest.raises(StageFailed) as raised:
        repro_stage("hello", pipeline_env(), cwd=tmp_path, remote=remote, on_line=lambda _: None)
    message = str(raised.value)
    assert message.startswith("stage hello: its outputs are in this workspace, but pushing")
    assert f"DVC remote 'team' ({blocked / 'remote'})" in message
    assert (tmp_path / "out.txt").read_text() == "hi\n"  # the stage's work is kept


def test_a_remotes_password_is_never_shown(tmp_path: Path) -> None:
    subprocess.run(
        [str(BIN / "dvc"), "init", "--no-scm", "-q"], cwd=tmp_path, check=True, env=pipeline_env()
    )
    remote = add_remote(tmp_path, "https://dana:s3cret@dvc.example.org:8443/store")
    assert str(remote) == "DVC remote 'team' (https://dana@dvc.example.org:8443/store)"
    subprocess.run(
        [str(BIN / "dvc"), "remote", "default", "--local", "--unset"],
        cwd=tmp_path, env=pipeline_env(), check=True,
    )  # fmt: skip
    assert default_remote(tmp_path) is None  # no default remote: the flow pushes nowhere
