"""The training methods' registry, and the worked example of
docs/extending/training-methods.md run as the page shows it: a method added in a module of
its own and one registry line is accepted by the params and trained with by the stage."""

from __future__ import annotations

import re
import types
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from components.core.corpus import Conversation, Turn
from components.core.errors import ParamsError
from components.stages import default_context
from components.train.config import TrainConfig
from components.train.generation import read_generation_settings
from components.train.methods import TRAINING_METHODS
from components.train.stage import TrainingData, _train

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending" / "training-methods.md"
EXAMPLE_MODULE = "# components/train/untrained.py"


def page_blocks(language: str) -> list[str]:
    """The page's fenced ``language`` blocks, dedented (the page indents them in a list)."""
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(rf"^( *)```{language}\n(.*?)^\1```", text, re.MULTILINE | re.DOTALL)
    return [
        "\n".join(line.removeprefix(indent) for line in body.splitlines())
        for indent, body in blocks
    ]


def example_module() -> types.ModuleType:
    """The page's method module, executed as it is written there."""
    (source,) = [b for b in page_blocks("python") if b.startswith(EXAMPLE_MODULE)]
    module = types.ModuleType("untrained_example")
    exec(compile(source, str(PAGE), "exec"), module.__dict__)
    return module


def test_each_method_is_registered_under_its_own_name() -> None:
    assert list(TRAINING_METHODS) == ["sft", "dpo", "orpo"]
    assert all(method.name == name for name, method in TRAINING_METHODS.items())


def test_the_params_accept_exactly_the_registered_methods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ParamsError, match=r"'train\.method': sft \| dpo \| orpo$"):
        TrainConfig(method="untrained")
    example = example_module()
    monkeypatch.setitem(TRAINING_METHODS, "untrained", example.UNTRAINED)
    (params,) = [yaml.safe_load(b) for b in page_blocks("yaml")]
    assert TrainConfig(**params["train"]).method == "untrained"
    with pytest.raises(ParamsError, match=r"'train\.method': sft \| dpo \| orpo \| untrained$"):
        TrainConfig(method="ppo")
    # the method's own check, with the words the page quotes
    with pytest.raises(ParamsError, match=r"'train\.deepspeed': null with train\.method: untr"):
        TrainConfig(method="untrained", deepspeed="infra/deepspeed/zero2.json")


def test_the_stage_trains_with_the_method_train_method_names(
    tmp_path: Path, base_model_dir: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = example_module()
    monkeypatch.setitem(TRAINING_METHODS, "untrained", example.UNTRAINED)
    (tmp_path / "models").mkdir()  # the stage reads models/base of its workspace
    (tmp_path / "models" / "base").symlink_to(base_model_dir)
    config = TrainConfig(method="untrained", lora_r=2, lora_alpha=4)
    calls = [Conversation("c0", (Turn("A", "Hello."),), labels={"summary": "A greeting."})]
    data = TrainingData(tmp_path / "corpus.jsonl", calls)
    context = replace(default_context(), workspace=tmp_path)
    result = _train(config, data, output=tmp_path / "adapter", callbacks=[], context=context)
    assert result.steps == 0 and 0 < result.trainable_parameters < result.total_parameters
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert read_generation_settings(tmp_path / "adapter") == config.generation
