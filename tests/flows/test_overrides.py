"""The override policy of deployment runs, and the allowance `veiltune serve` hands its runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from prefect.utilities.callables import parameter_schema
from pydantic import ValidationError

from components.core.config import param_field
from components.core.errors import ParamsError
from components.core.params_schema import params_schema
from components.stages import SECTIONS, names_param
from flows import pipeline as pipeline_module
from flows.overrides import (
    ALLOW_OVERRIDES_ENV,
    UI_OVERRIDABLE,
    OverrideChange,
    RunOverrides,
    allowed_from_environment,
    export_allowed,
    override_changes,
    override_values,
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
    arguments: list[str], message: str, *, tmp_path: Path
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
        pipeline_module.check_flow_arguments(None, overrides, corpus=None, params_path=REPO_PARAMS)


def _params_property(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    """The property of ``veiltune params --schema`` that names dotted ``key``."""
    node: dict[str, Any] = schema
    for part in dotted.split("."):
        node = node["properties"][part]
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].rpartition("/")[2]]
    return node


def test_the_ui_form_types_each_overridable_param_as_the_params_schema_does() -> None:
    """The deployment's parameter schema (what the Prefect UI's form is drawn from) offers
    every key of the allow-list, each with the type, range or choices `veiltune params
    --schema` gives it, or empty (null: params.yaml's value)."""
    flow_schema = parameter_schema(pipeline_module.pipeline.fn).model_dump()
    overrides = flow_schema["definitions"]["RunOverrides"]
    assert list(overrides["properties"]) == list(UI_OVERRIDABLE)
    params = params_schema(SECTIONS)
    for key in UI_OVERRIDABLE:
        offered = overrides["properties"][key]
        declared = _params_property(params, key)
        branches = declared.get("anyOf", [declared])
        expected = [
            {k: v for k, v in branch.items() if k not in ("default", "description", "title")}
            for branch in branches
        ]
        assert offered["anyOf"][: len(expected)] == expected, key
        assert {"type": "null"} in offered["anyOf"] and offered["default"] is None, key
    assert "exclusiveMinimum" in overrides["properties"]["train.learning_rate"]["anyOf"][0]
    assert overrides["properties"]["train.padding"]["anyOf"][0]["enum"] == [
        "longest",
        "max_length",
    ]


def test_run_overrides_refuse_a_bad_value_naming_its_key_and_keep_what_is_set() -> None:
    with pytest.raises(ValidationError) as refused:
        RunOverrides.model_validate({"train.max_steps": 0, "train.padding": "both"})
    assert {error["loc"][0] for error in refused.value.errors()} == {
        "train.max_steps",
        "train.padding",
    }
    with pytest.raises(ValidationError, match="train.lora_r"):
        RunOverrides.model_validate({"train.lora_r": "8"})  # strict, as params.yaml is read
    given = RunOverrides.model_validate(
        {"train.max_steps": 5, "train.learning_rate": 1, "evaluate.max_new_tokens": None,
         "gate.threshold": 1000}
    )  # fmt: skip
    # empty fields are left out; a key beyond the list goes on to the run's own checks
    assert override_values(given) == {
        "train.max_steps": 5,
        "train.learning_rate": 1.0,
        "gate.threshold": 1000,
    }
    assert override_values(None) == {}
    # an empty field means "keep params.yaml's value" only while no key of the list is nullable
    nullable = [k for k in UI_OVERRIDABLE if type(None) in get_args(param_field(k, SECTIONS)[2])]
    assert nullable == []
    # the flow run's parameters, as Prefect stores them: the keys set, nothing else
    assert pipeline_module.pipeline.serialize_parameters({"overrides": given}) == {
        "overrides": {"train.max_steps": 5, "train.learning_rate": 1.0, "gate.threshold": 1000}
    }
    nulled = RunOverrides.model_validate({"train.max_steps": 5, "ingest.corpus_path": None})
    assert override_values(nulled) == {"train.max_steps": 5, "ingest.corpus_path": None}
