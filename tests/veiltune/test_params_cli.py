"""``veiltune params``: the params the stages read, defaults filled in; ``--schema``: the
JSON schema of params.yaml, which the shipped file passes and a wrong type fails by key."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.core.config import build_configs
from components.stages import BY_NAME, SECTIONS, STAGES, stage_context
from veiltune.cli import main

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


def printed_schema(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["params", "--schema"]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def test_the_schema_passes_the_shipped_params_and_names_a_wrong_types_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    validator = jsonschema.Draft202012Validator(printed_schema(capsys))
    params = yaml.safe_load(REPO_PARAMS.read_text(encoding="utf-8"))
    assert list(validator.iter_errors(params)) == []
    params["train"]["lora_r"] = "eight"
    (error,) = validator.iter_errors(params)
    assert error.json_path == "$.train.lora_r"
    assert "'eight' is not of type 'integer'" in error.message


def test_the_schema_lists_the_stages_in_pipeline_order_each_with_its_help(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no params.yaml: the schema reads none
    schema = printed_schema(capsys)
    assert list(schema["properties"]) == [stage.name for stage in STAGES]
    assert schema["properties"]["gate"]["description"] == BY_NAME["gate"].help
    assert schema["additionalProperties"] is False


def test_params_prints_every_key_with_the_defaults_filled_in(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "params.yaml").write_text("gate: {threshold: 3.0}\ntrain: {max_steps: 7}\n")
    assert main(["params", "--params", str(tmp_path / "params.yaml")]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert list(printed) == [stage.name for stage in STAGES]
    assert printed["gate"]["threshold"] == 3.0 and printed["train"]["max_steps"] == 7
    assert printed["gate"]["per_context"] is False  # a default the file leaves out
    # what it prints is a params file the stages read as the one it came from
    assert build_configs(printed, SECTIONS) == stage_context(tmp_path / "params.yaml").configs


def test_params_of_a_bad_file_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "params.yaml").write_text("gate: {threshold: high}\n")
    assert main(["params", "--params", str(tmp_path / "params.yaml")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "veiltune params: error: params: 'gate.threshold' must be float, got 'high'"
    ]


@pytest.mark.parametrize("command", [stage.cli[0] for stage in STAGES])
def test_a_stage_commands_help_lists_its_params_with_defaults_and_comments(command: str) -> None:
    from veiltune.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = commands.choices[command].format_help()
    assert f"params.yaml's {BY_NAME[command.replace('-', '_')].name} (every stage's" in text
    if command == "train":
        assert "  lora_r: 32  # an integer >= 1\n" in text  # the range its type declares
        assert "  seed: 13\n" in text and "max_steps: 40" in text
        assert "save_steps: 20  # checkpoint every N steps" in text  # a base class's comment
        assert "a re-run resumes from the… (an integer >= 1)\n" in text  # the range kept
        assert "target_modules: [q_proj, k_proj, v_proj, o_proj]" in text
    if command == "gate":
        assert "  threshold: 5.0  # a number > 0\n" in text
