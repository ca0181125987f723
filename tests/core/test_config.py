from __future__ import annotations

from pathlib import Path

import pytest

from components.core.config import stage_config
from components.core.errors import ParamsError
from components.stages import SECTIONS, apply_overrides, load_params, stage_context
from components.train.config import TrainConfig

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


def test_repo_params_build_every_stage_config() -> None:
    params = load_params(REPO_PARAMS)
    assert set(params) == set(SECTIONS)
    for stage, cls in SECTIONS.items():
        assert isinstance(stage_config(params, stage, cls), cls)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"max_step": 3}, "unknown key 'train.max_step'; allowed: max_steps"),
        ({"max_steps": "ten"}, "'train.max_steps' must be int"),
        ({"max_steps": 0}, "bad value for 'train.max_steps'"),
        ({"lora_dropout": 1.5}, "bad value for 'train.lora_dropout'"),
        ({"target_modules": "q_proj"}, "'train.target_modules' must be list"),
        ({"max_steps": True}, "'train.max_steps' must be int"),
        ({"padding": "right"}, "bad value for 'train.padding'.*longest | max_length"),
    ],
)
def test_bad_train_params_name_the_key(section: dict[str, object], message: str) -> None:
    with pytest.raises(ParamsError, match=message):
        stage_config({"train": section}, "train", TrainConfig)


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
