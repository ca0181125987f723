"""params.yaml's JSON schema (components/core/params_schema.py): built from the stages'
config dataclasses, it accepts what the loader accepts and refuses, naming the key path, the
types and keys the loader refuses."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.core.config import build_configs
from components.core.errors import ParamsError
from components.core.params_schema import params_data, params_schema
from components.stages import SECTIONS, STAGES

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = params_schema(SECTIONS, {stage.name: stage.help for stage in STAGES})
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def shipped() -> dict[str, Any]:
    params: dict[str, Any] = yaml.safe_load(REPO_PARAMS.read_text(encoding="utf-8"))
    return params


def test_the_shipped_params_yaml_is_valid(validator: jsonschema.Draft202012Validator) -> None:
    assert list(validator.iter_errors(shipped())) == []


def test_every_default_is_valid_and_reads_back_as_the_same_configs(
    validator: jsonschema.Draft202012Validator,
) -> None:
    defaults = build_configs({}, SECTIONS)
    data = params_data(defaults)
    assert list(data) == [stage.name for stage in STAGES]
    assert list(validator.iter_errors(data)) == []
    assert build_configs(data, SECTIONS) == defaults


@pytest.mark.parametrize(
    ("dotted", "value"),
    [
        ("gate.threshold", "high"),
        ("train.max_steps", 2.5),
        ("anonymize.surrogate.method", 3),
        ("gate.known_contexts", "sales"),
        ("train", ["max_steps"]),
    ],
)
def test_a_wrong_type_is_refused_naming_its_key_path(
    validator: jsonschema.Draft202012Validator, dotted: str, *, value: Any
) -> None:
    params = _with(shipped(), dotted, value=value)
    with pytest.raises(ParamsError):  # the schema agrees with the loader ...
        build_configs(params, SECTIONS)
    errors = list(validator.iter_errors(params))
    assert [error.json_path for error in errors] == [f"$.{dotted}"]  # ... and names the key


@pytest.mark.parametrize("dotted", ["gate.thresold", "anonymize.surrogate.methods", "trian"])
def test_an_unknown_key_is_refused_naming_it(
    validator: jsonschema.Draft202012Validator, dotted: str
) -> None:
    params = _with(shipped(), dotted, value=1)
    (error,) = validator.iter_errors(params)
    assert error.validator == "additionalProperties"
    assert error.json_path == "$" + "".join(f".{key}" for key in dotted.split(".")[:-1])
    assert repr(dotted.rsplit(".", 1)[-1]) in error.message


def test_each_key_is_described_by_its_comment_and_each_stage_by_its_help() -> None:
    schema = params_schema(SECTIONS, {"gate": "the gate's line"})
    gate = schema["$defs"]["GateConfig"]["properties"]
    assert gate["per_context"]["description"] == (
        "also require mu + sigma < threshold within each context"
    )
    assert gate["threshold"]["default"] == 5.0 and gate["threshold"]["type"] == "number"
    assert schema["properties"]["gate"]["description"] == "the gate's line"
    surrogate = schema["$defs"]["SurrogateConfig"]["properties"]
    assert surrogate["method"]["description"] == "realistic | lm | embedding (docs/surrogates.md)"


def _with(params: dict[str, Any], dotted: str, *, value: Any) -> dict[str, Any]:
    """A copy of ``params`` with ``dotted`` set to ``value``."""
    changed = copy.deepcopy(params)
    *parents, last = dotted.split(".")
    section = changed
    for key in parents:
        section = section.setdefault(key, {})
    section[last] = value
    return changed


def test_the_schema_carries_the_ranges_the_loader_checks(
    validator: jsonschema.Draft202012Validator,
) -> None:
    schema = params_schema(SECTIONS)
    gate = schema["$defs"]["GateConfig"]["properties"]["threshold"]
    assert gate["exclusiveMinimum"] == 0
    heldout = schema["$defs"]["IngestConfig"]["properties"]["heldout_fraction"]
    assert (heldout["exclusiveMinimum"], heldout["exclusiveMaximum"]) == (0, 1)
    padding = schema["$defs"]["TrainConfig"]["properties"]["padding"]
    assert padding["enum"] == ["longest", "max_length"]  # a Literal's choices
    errors = list(validator.iter_errors({"train": {"max_steps": 0}}))
    assert [list(e.absolute_path) for e in errors] == [["train", "max_steps"]]
    with pytest.raises(ParamsError, match="'train.max_steps'"):
        build_configs({"train": {"max_steps": 0}}, SECTIONS)
