"""The override policy of deployment runs, and the allowance `veiltune serve` hands its runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.core.errors import ParamsError
from flows import pipeline as pipeline_module
from flows.overrides import (
    ALLOW_OVERRIDES_ENV,
    OverrideChange,
    allowed_from_environment,
    export_allowed,
    override_changes,
    parse_allowed,
    protected_prefix,
    refuse_protected_overrides,
)
from veiltune.cli import main

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


@pytest.mark.parametrize(
    ("key", "prefix"),
    [
        ("gate.threshold", "gate"),
        ("gate.per_context", "gate"),
        ("anonymize.score_threshold", "anonymize"),
        ("anonymize.exclusions.PERSON_NAME", "anonymize"),
        ("risk.scores", "risk"),
        ("audit.max_leaks", "audit"),
        ("train.corpus", "train.corpus"),
        ("export.pi_scan_min_chars", "export.pi_scan_min_chars"),
        ("ingest.n_conversations", None),
        ("train.max_steps", None),
        ("gateway.x", None),  # a prefix of the name is not the stage
        ("train.corpus_extra", None),
    ],
)
def test_privacy_controls_are_protected(key: str, prefix: str | None) -> None:
    assert protected_prefix(key) == prefix


@pytest.mark.parametrize(
    "key",
    [
        "gate.threshold",
        "anonymize.backend",
        "risk.default_score",
        "audit.max_mia_auc",
        "train.corpus",
    ],
)
def test_a_deployment_run_may_not_override_a_privacy_control(key: str) -> None:
    with pytest.raises(ParamsError, match=rf"override '{key}' refused.*--allow-overrides"):
        refuse_protected_overrides(["ingest.seed", key], deployment_run=True, allowed=())


def test_ordinary_params_and_command_line_runs_need_no_allowance() -> None:
    refuse_protected_overrides(
        ["ingest.n_conversations", "train.max_steps"], deployment_run=True, allowed=()
    )
    refuse_protected_overrides(["gate.threshold", "train.corpus"], deployment_run=False, allowed=())


def test_the_allowance_covers_what_it_names_and_nothing_else() -> None:
    allowed = parse_allowed(["gate,anonymize", " risk.scores "])
    assert allowed == ("gate", "anonymize", "risk.scores")
    refuse_protected_overrides(
        ["gate.threshold", "anonymize.exclusions.LOCATION", "risk.scores"],
        deployment_run=True,
        allowed=allowed,
    )
    with pytest.raises(ParamsError, match="'risk.default_score' refused"):
        refuse_protected_overrides(["risk.default_score"], deployment_run=True, allowed=allowed)
    with pytest.raises(ParamsError, match="'audit.max_leaks' refused"):
        refuse_protected_overrides(["audit.max_leaks"], deployment_run=True, allowed=allowed)
    assert parse_allowed(["train"]) == ("train",)  # the stage holding train.corpus
    refuse_protected_overrides(["train.corpus"], deployment_run=True, allowed=("train",))


def test_an_allowance_must_name_a_protected_param() -> None:
    with pytest.raises(ParamsError, match="'ingest': not a protected param"):
        parse_allowed(["gate,ingest"])
    assert parse_allowed([]) == parse_allowed([""]) == ()


def test_the_allowance_travels_in_the_serving_environment_and_nowhere_else() -> None:
    environ = {ALLOW_OVERRIDES_ENV: "gate"}  # left in the shell: must not count
    export_allowed((), environ)
    assert ALLOW_OVERRIDES_ENV not in environ and allowed_from_environment(environ) == ()
    export_allowed(("gate", "anonymize"), environ)
    assert allowed_from_environment(environ) == ("gate", "anonymize")
    with pytest.raises(ParamsError, match="not a protected param"):
        allowed_from_environment({ALLOW_OVERRIDES_ENV: "ingest"})


def test_veiltune_serve_hands_its_allowance_to_the_runs_it_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str | None] = []

    def fake_serve(**_: object) -> None:  # Prefect's served runs inherit os.environ
        seen.append(os.environ.get(ALLOW_OVERRIDES_ENV))

    monkeypatch.setattr(pipeline_module.pipeline, "serve", fake_serve)
    monkeypatch.setenv(ALLOW_OVERRIDES_ENV, "gate")  # from the shell, without the flag
    assert main(["serve"]) == 0
    assert main(["serve", "--allow-overrides", "gate,anonymize"]) == 0
    assert seen == [None, "gate,anonymize"]
    assert main(["serve", "--allow-overrides", "ingest"]) == 1  # refused before serving
    assert len(seen) == 2


def test_each_override_is_described_with_the_value_it_replaces() -> None:
    params = {"gate": {"threshold": 5.0}, "ingest": {"dialogsum": {"path": "a.jsonl"}}}
    overrides = {"gate.threshold": 1000, "ingest.dialogsum.path": None, "ingest.seed": 3}
    assert override_changes(params, overrides) == [
        OverrideChange("gate.threshold", 5.0, 1000),
        OverrideChange("ingest.dialogsum.path", "a.jsonl", None),
        OverrideChange("ingest.seed", None, 3),
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--set", "train.max_steps=-1"],
            "params: bad value for 'train.max_steps': an integer >= 1",
        ),
        (["--stages", "trian"], "unknown stage 'trian'"),
    ],
)
def test_a_bad_flow_argument_is_one_line_before_anything_starts(
    arguments: list[str], message: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(REPO_PARAMS, work / "params.yaml")
    # A process of its own: Prefect's log handlers write to the stderr they found first.
    done = subprocess.run(
        [sys.executable, "-m", "veiltune.cli", "flow", *arguments],
        cwd=work,
        env={**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    # No Prefect server, flow run or MLflow run was started: the error is the only line.
    [line] = done.stderr.splitlines()
    assert line.startswith(f"veiltune flow: error: {message}")
    assert sorted(p.name for p in work.iterdir()) == ["params.yaml"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"gate.threshold": float("inf")}, "'gate.threshold' must be a finite number"),
        ({"trian.max_steps": 2}, "override 'trian.max_steps': expected <stage>.<key>"),
        ({"train.steps": 2}, "unknown key 'train.steps'"),
    ],
)
def test_flow_overrides_are_checked_by_the_config_classes(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ParamsError, match=re.escape(message)):
        pipeline_module.check_flow_arguments(None, overrides, None, REPO_PARAMS)
