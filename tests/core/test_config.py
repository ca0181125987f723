from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from components.core.config import OpenUnit, param_field, stage_config
from components.core.errors import ParamsError
from components.ingest.config import DialogSumConfig, IngestConfig
from components.stages import SECTIONS, apply_overrides, load_params, stage_context
from components.train.config import TrainConfig

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


def test_repo_params_build_every_stage_config() -> None:
    params = load_params(REPO_PARAMS)
    assert set(params) == set(SECTIONS)
    for stage, cls in SECTIONS.items():
        assert isinstance(stage_config(params, stage, cls=cls), cls)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"max_step": 3}, "unknown key 'train.max_step'; allowed: max_steps"),
        ({"max_steps": "ten"}, "'train.max_steps' must be int"),
        ({"max_steps": 0}, "bad value for 'train.max_steps'"),
        ({"lora_dropout": 1.5}, "bad value for 'train.lora_dropout'"),
        ({"target_modules": "q_proj"}, "'train.target_modules' must be list"),
        ({"max_steps": True}, "'train.max_steps' must be int"),
        ({"padding": "right"}, "bad value for 'train.padding': one of: longest, max_length"),
    ],
)
def test_bad_train_params_name_the_key(section: dict[str, object], message: str) -> None:
    with pytest.raises(ParamsError, match=message):
        stage_config({"train": section}, "train", cls=TrainConfig)


def test_unknown_stage_key_in_file(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("ingest: {}\ntrian: {max_steps: 3}\n")
    with pytest.raises(ParamsError, match="unknown key 'trian'"):
        stage_context(path)


def test_overrides_are_validated_and_applied() -> None:
    params = load_params(REPO_PARAMS)
    updated = apply_overrides(params, {"train.max_steps": 2, "gate.threshold": 4.0})
    assert updated["train"]["max_steps"] == 2 and updated["gate"]["threshold"] == 4.0
    assert params["train"]["max_steps"] != 2  # the input is not mutated
    with pytest.raises(ParamsError, match="unknown key 'train.steps'"):
        apply_overrides(params, {"train.steps": 2})
    with pytest.raises(ParamsError, match="expected <stage>.<key>"):
        apply_overrides(params, {"nothing": 1})


def _float_keys(cls: type, where: str) -> list[str]:
    """Every dotted key of ``cls`` typed as a float (or a float or null), nested configs too."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    keys: list[str] = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint):
            keys += _float_keys(hint, f"{where}.{field.name}")  # type: ignore[arg-type]
        elif float in (hint, *typing.get_args(hint)):
            keys.append(f"{where}.{field.name}")
    return keys


FLOAT_KEYS = [key for stage, cls in SECTIONS.items() for key in _float_keys(cls, stage)]


def _nested(dotted: str, value: object) -> dict[str, object]:
    stage, *keys = dotted.split(".")
    section: object = value
    for key in reversed(keys):
        section = {key: section}
    return {stage: section}


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")], ids=str)
@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_every_float_param_refuses_nan_and_infinity_naming_the_key(key: str, value: float) -> None:
    # gate.threshold: .inf was a gate that cannot fail; each config's range checks let
    # infinity through wherever they only bound a value from below.
    stage = key.split(".")[0]
    with pytest.raises(ParamsError, match=f"'{re.escape(key)}' must be a finite number"):
        stage_config(_nested(key, value), stage, cls=SECTIONS[stage])


def test_float_keys_cover_the_configs() -> None:
    assert {"gate.threshold", "ingest.heldout_fraction", "train.learning_rate"} <= set(FLOAT_KEYS)
    assert "anonymize.dlp.timeout" in FLOAT_KEYS  # a nested config's


def test_nan_or_infinity_inside_a_list_or_mapping_names_its_place() -> None:
    from components.risk.config import RiskConfig

    scores = {"risk": {"scores": {"a": 1, "b": float("inf")}}}
    with pytest.raises(ParamsError, match=r"'risk.scores.b' must be a finite number, got inf"):
        stage_config(scores, "risk", cls=RiskConfig)
    repetitions = {"ingest": {"canary_repetitions": [1, float("nan")]}}
    with pytest.raises(
        ParamsError, match=r"'ingest.canary_repetitions\[1\]' must be a finite number, got nan"
    ):
        stage_config(repetitions, "ingest", cls=IngestConfig)


def test_an_infinite_threshold_from_yaml_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("gate: {threshold: .inf}\n")
    with pytest.raises(ParamsError, match="'gate.threshold' must be a finite number, got inf"):
        stage_context(path)


def test_an_empty_heldout_split_is_refused_by_its_key() -> None:
    with pytest.raises(ParamsError, match=r"bad value for 'ingest.heldout_fraction': 0 < x < 1"):
        stage_config({"ingest": {"heldout_fraction": 0}}, "ingest", cls=IngestConfig)


def _config_classes(cls: type, seen: dict[type, None]) -> dict[type, None]:
    """``cls`` and every config class nested in it, however deep."""
    import dataclasses
    import typing

    seen[cls] = None
    for field in dataclasses.fields(cls):
        hint = typing.get_type_hints(cls)[field.name]
        if dataclasses.is_dataclass(hint) and hint not in seen:
            _config_classes(hint, seen)  # type: ignore[arg-type]
    return seen


def test_every_config_class_is_read_strictly() -> None:
    # a nested config without PARAMS would be read by pydantic's defaults: unknown keys
    # dropped without a word, "3" taken for 3
    from components.core.config import PARAMS

    classes: dict[type, None] = {}
    for cls in SECTIONS.values():
        _config_classes(cls, classes)
    assert len(classes) > len(SECTIONS)  # nested ones too
    for cls in classes:
        assert getattr(cls, "__pydantic_config__", None) == PARAMS, cls.__name__


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"anonymize": {"ner": {"threads": 0}}},
            "params: bad value for 'anonymize.ner.threads': null or an integer >= 1, got 0",
        ),
        (
            {"anonymize": {"surrogate": {"radius": 2.5}}},
            "params: bad value for 'anonymize.surrogate.radius': 0 < x <= 2, got 2.5",
        ),
        ({"anonymize": {"mask_char": "**"}}, "'anonymize.mask_char': a single character, got"),
        (
            {"anonymize": {"detectors": []}},
            "'anonymize.detectors': a non-empty list of: entities, lm_probability, allow_list, "
            "vocab_threshold, got []",
        ),
        ({"train": {"padding": "right"}}, "'train.padding': one of: longest, max_length, got"),
        ({"gate": {"threshold": 0}}, "params: bad value for 'gate.threshold': a number > 0, got 0"),
        ({"train": {"generation": {"no_repeat_ngram_size": "6"}}}, "must be int, got '6'"),
        ({"train": {"fragments": {"sources": "raw"}}}, "unknown key 'train.fragments.sources'"),
        (
            {"ingest": {"canary_types": ["PHONE_NUMBER", "EMAIL_ADDRESS"]}},
            "'ingest.canary_types': a list of: PHONE_NUMBER, FINANCIAL_ACCOUNT_NUMBER, got",
        ),
    ],
)
def test_a_declared_range_or_type_is_refused_naming_the_key_path(
    params: dict[str, Any], message: str
) -> None:
    (stage,) = params
    with pytest.raises(ParamsError) as refused:
        stage_config(params, stage, cls=SECTIONS[stage])
    assert message in str(refused.value)


def test_code_that_builds_a_config_is_held_to_the_same_ranges() -> None:
    # a command-line option's value reaches a config through dataclasses.replace
    import dataclasses

    with pytest.raises(ParamsError, match=r"bad value for 'train.max_steps': an integer >= 1"):
        dataclasses.replace(TrainConfig(), max_steps=0)
    with pytest.raises(ParamsError, match=r"'ingest.dialogsum.max_dialogues'"):
        IngestConfig(dialogsum=DialogSumConfig(max_dialogues=0))


def test_what_json_cannot_hold_is_refused_naming_the_key() -> None:
    import datetime

    dated = {"ingest": {"corpus_path": datetime.date(2026, 11, 28)}}  # YAML's 2026-11-28
    with pytest.raises(ParamsError, match=r"'ingest.corpus_path' holds datetime.date"):
        stage_config(dated, "ingest", cls=IngestConfig)
    numbered = {"risk": {"scores": {5: 1}}}
    with pytest.raises(ParamsError, match=r"'risk.scores' has a key that is not a string: 5"):
        stage_config(numbered, "risk", cls=SECTIONS["risk"])


def test_param_field_finds_a_nested_field_with_its_ranges() -> None:
    assert param_field("ingest.dialogsum.max_dialogues", SECTIONS)[:2] == (
        DialogSumConfig,
        "max_dialogues",
    )
    assert param_field("ingest.heldout_fraction", SECTIONS) == (
        IngestConfig,
        "heldout_fraction",
        OpenUnit,
    )
    for not_a_field in ("train", "train.colour", "anonymize.exclusions.PERSON_NAME", "x.y"):
        with pytest.raises(ParamsError, match=re.escape(f"'{not_a_field}' names no field")):
            param_field(not_a_field, SECTIONS)
