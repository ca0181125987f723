"""Shared fixtures: the offline environment, the spaCy/Presidio detector and the base model
are built once per session because they are real and slow to load."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from veiltune.cli import OFFLINE_ENVIRONMENT

for _key, _value in OFFLINE_ENVIRONMENT.items():
    os.environ.setdefault(_key, _value)

REPO_ROOT = Path(__file__).resolve().parent.parent
# Optional: the full public data sets, when ../shared is beside the checkout. Tests that
# must always run read the samples vendored in the checkout instead.
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
DIALOGSUM_SAMPLE = REPO_ROOT / "components/ingest/samples/dialogsum/dialogsum.dev.sample.jsonl"
TEST_DATA = REPO_ROOT / "tests" / "data"  # samples of presidio-research and WNUT-17


@pytest.fixture(scope="session")
def detector():  # type: ignore[no-untyped-def]
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.factory import build_detector

    return build_detector(AnonymizeConfig())


@pytest.fixture(scope="session")
def base_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled SmolLM2 converted once into a plain Hugging Face folder."""
    from components.base_model.materialize import BUNDLED_SMOLLM2, materialize_base_model

    folder = tmp_path_factory.mktemp("base") / "model"
    materialize_base_model(BUNDLED_SMOLLM2, folder)
    return folder


@pytest.fixture(scope="session")
def lora_adapter_dir(tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path) -> Path:
    """A real, untrained LoRA adapter on the base model: enough to register a model version."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    folder = tmp_path_factory.mktemp("lora") / "adapter"
    model = AutoModelForCausalLM.from_pretrained(base_model_dir)
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(str(folder))
    return folder
