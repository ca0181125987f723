"""Shared fixtures: the offline environment, the spaCy/Presidio detector and the base model
are built once per session because they are real and slow to load."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

# `make test` runs one pytest-xdist worker per core: each worker, and every process it starts
# (the e2e's `dvc repro` stages), computes on one thread, so two workers never fight over the
# cores. Set before anything imports torch, which reads these once.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

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


# The longest modules (the audit controls train three adapters; the e2e runs `dvc repro` and
# a DVC experiment; the flow's tests start a Prefect server) are collected first. `make test`
# schedules whole modules in collection order (`--dist loadfile --no-loadscope-reorder`),
# so each of two workers starts on one of them and the rest fill in around them.
LONGEST_FIRST = (
    "tests/audits/test_controls.py",
    "tests/test_pipeline_e2e.py",
    "tests/flows/test_pipeline_flow.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


@pytest.fixture(autouse=True)
def _mlflow_store_restored() -> Iterator[None]:
    """The MLflow store as it was before each test: a test that points MLflow at a store in
    its tmp_path (``set_tracking_uri`` sets the process's ``MLFLOW_TRACKING_URI`` too) would
    otherwise leave the next test in this worker a store that was removed with its folder."""
    utils = "mlflow.tracking._tracking_service.utils"
    before = getattr(sys.modules.get(utils), "_tracking_uri", None)
    before_env = os.environ.get("MLFLOW_TRACKING_URI")
    yield
    module = sys.modules.get(utils)
    if module is not None and module._tracking_uri != before:
        module.set_tracking_uri(before)  # None falls back to the environment's
    if os.environ.get("MLFLOW_TRACKING_URI") != before_env:
        if before_env is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = before_env


@pytest.fixture(scope="session")
def detector():  # type: ignore[no-untyped-def]
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.factory import build_detector

    return build_detector(AnonymizeConfig(), Path(__file__).resolve().parent.parent)


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
