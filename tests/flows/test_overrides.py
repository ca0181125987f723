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
from components.stages import names_param
from flows import pipeline as pipeline_module
from flows.overrides import (
    ALLOW_OVERRIDES_ENV,
    UI_OVERRIDABLE,
    OverrideChange,
    allowed_from_environment,
    export_allowed,
    override_changes,
    parse_allowed,
    refuse_unallowed_overrides,
    ui_may_override,
)
from veiltune.cli import main

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"
# What the review of issue 36 changed from the UI: each sends held-out raw facts elsewhere,
# reads another corpus, or weakens what promotion checks.
REVIEW_36 = [
    "evaluate.judge.model",
    "evaluate.judge.allow_remote",
    "ingest.corpus_path",
    "ingest.canary_types",
    "export.signing_key",
    "register.utility_metric",
    "base_model.source",
]


@pytest.mark.parametrize(
    ("key", "allowed"),
    [
        ("train.max_steps", True),
        ("train.learning_rate", True),
        ("train.seed", True),
        ("evaluate.max_conversations", True),
        ("ingest.n_conversations", True),
        ("ingest.dialogsum.max_dialogues", True),
        *[(key, False) for key in REVIEW_36],
        ("gate.threshold", False),
        ("anonymize.score_threshold", False),
        ("anonymize.exclusions.PERSON_NAME", False),
        ("risk.scores", False),
        ("audit.max_leaks", False),
        ("train.corpus", False),
        ("train.deepspeed", False),  # a path
        ("train.tasks", False),  # continuation trains on transcript text itself
        ("train.fragments.source", False),  # raw
        ("ingest.dialogsum.path", False),
        ("ingest.dialogsum", False),  # a whole mapping would set its path too
        ("evaluate.judge.max_new_tokens", False),
        ("export.pi_scan_min_chars", False),
        ("train.max_steps_extra", False),
        ("train", False),
    ],
)
def test_ui_runs_may_change_what_the_allow_list_names_and_nothing_else(
    key: str, allowed: bool
) -> None:
    assert ui_may_override(key) is allowed


def test_the_allow_list_names_real_params() -> None:
    assert [key for key in UI_OVERRIDABLE if not names_param(key)] == []


@pytest.mark.parametrize(
    "key",
    [
        *REVIEW_36,
        "gate.threshold",
        "anonymize.backend",
        "risk.default_score",
        "audit.max_mia_auc",
        "train.corpus",
        "train.colour",  # unknown: refused before it is even validated
    ],
)
def test_a_deployment_run_may_not_override_what_the_allow_list_leaves_out(key: str) -> None:
    with pytest.raises(ParamsError) as refused:
        refuse_unallowed_overrides(["train.max_steps", key], deployment_run=True, allowed=())
    message = str(refused.value)
    assert f"override '{key}' refused" in message
    assert "may change only" in message and "train: max_steps, learning_rate" in message
    assert f"veiltune serve --allow-overrides {key}" in message
    assert "\n" not in message


def test_allowed_params_and_command_line_runs_need_no_allowance() -> None:
    refuse_unallowed_overrides(list(UI_OVERRIDABLE), deployment_run=True, allowed=())
    refuse_unallowed_overrides(REVIEW_36, deployment_run=False, allowed=())


def test_the_allowance_covers_what_it_names_and_nothing_else() -> None:
    allowed = parse_allowed(["gate,anonymize", " risk.scores ", "evaluate.judge"])
    assert allowed == ("gate", "anonymize", "risk.scores", "evaluate.judge")
    refuse_unallowed_overrides(
        ["gate.threshold", "anonymize.exclusions.LOCATION", "risk.scores"],
        deployment_run=True,
        allowed=allowed,
    )
    refuse_unallowed_overrides(
        ["evaluate.judge.model", "evaluate.judge.allow_remote"],
        deployment_run=True,
        allowed=allowed,
    )
    with pytest.raises(ParamsError, match="'risk.default_score' refused"):
        refuse_unallowed_overrides(["risk.default_score"], deployment_run=True, allowed=allowed)
    with pytest.raises(
        ParamsError, match="'audit.max_leaks' refused.*the operator's allowance: gate, "
    ):
        refuse_unallowed_overrides(["audit.max_leaks"], deployment_run=True, allowed=allowed)
    assert parse_allowed(["train"]) == ("train",)
    refuse_unallowed_overrides(["train.corpus"], deployment_run=True, allowed=("train",))


@pytest.mark.parametrize("entry", ["ingest.colour", "nosuch", "gate.threshold.x", "train."])
def test_an_allowance_must_name_a_param(entry: str) -> None:
    with pytest.raises(ParamsError, match=rf"--allow-overrides '{entry}': not a param"):
        parse_allowed([f"gate,{entry}"])


def test_an_allowance_may_name_a_key_of_a_mapping_param() -> None:
    assert parse_allowed(["anonymize.exclusions.PERSON_NAME"]) == (
        "anonymize.exclusions.PERSON_NAME",
    )
    assert parse_allowed(["ingest", "evaluate.judge.model"]) == ("ingest", "evaluate.judge.model")
    assert parse_allowed([]) == parse_allowed([""]) == ()


def test_the_allowance_travels_in_the_serving_environment_and_nowhere_else() -> None:
    environ = {ALLOW_OVERRIDES_ENV: "gate"}  # left in the shell: must not count
    export_allowed((), environ)
    assert ALLOW_OVERRIDES_ENV not in environ and allowed_from_environment(environ) == ()
    export_allowed(("gate", "anonymize"), environ)
    assert allowed_from_environment(environ) == ("gate", "anonymize")
    with pytest.raises(ParamsError, match="not a param"):
        allowed_from_environment({ALLOW_OVERRIDES_ENV: "ingest.colour"})


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
    assert main(["serve", "--allow-overrides", "ingest.colour"]) == 1  # refused before serving
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
