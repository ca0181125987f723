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


# The longest modules are collected first, the longest of all first (measured 2026-11-28:
# the end-to-end module about 5 minutes; two DeepSpeed ranks 2, gated repo included; the
# team stack's about 3). `make
# test` schedules whole modules (`--dist loadfile --no-loadscope-reorder`): one worker starts
# on the end-to-end module, the other on the next, and each takes the next module in this
# order whenever it runs low, so the rest fill in around the longest.
LONGEST_FIRST = (
    "tests/test_pipeline_e2e.py",
    "tests/test_train_two_ranks.py",
    "tests/team/test_stack.py",
    "tests/test_pipeline_cluster.py",
    "tests/anonymize/test_distributed.py",
    "tests/flows/test_pipeline_flow.py",
    "tests/test_pipeline_gate.py",
    "tests/core/test_raw_data_at_rest.py",
    "tests/audits/test_controls.py",
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
def smollm2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled SmolLM2-135M-Instruct as a plain Hugging Face folder, converted once for
    the whole run: only for claims that depend on a pretrained model (tests/tiny_model.py)."""
    from tests.tiny_model import build_real_smollm2, shared_folder

    return shared_folder(_shared_root(tmp_path_factory), "smollm2", build=build_real_smollm2)


@pytest.fixture(scope="session")
def base_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plumbing tests' base model: SmolLM2's architecture and tokenizer, random-init at
    two layers of width 64 (tests/tiny_model.py), built once for the whole run."""
    from tests.tiny_model import build_tiny_smollm2, shared_folder

    return shared_folder(_shared_root(tmp_path_factory), "tiny-smollm2", build=build_tiny_smollm2)


@pytest.fixture(scope="session")
def gated_repo(tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path) -> Path:
    """A pipeline repo on the tiny params, run through ``gate`` once for the whole run: the
    tests that go on from there (two ranks, the cluster, a refused corpus) each take a copy
    (``tests.pipeline_repo.copy_gated_repo``) instead of running ingest to gate again."""
    from tests.pipeline_repo import build_gated_repo
    from tests.tiny_model import shared_folder

    return shared_folder(
        _shared_root(tmp_path_factory),
        "gated-repo",
        build=lambda folder: build_gated_repo(folder, base_model_dir),
    )


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary root, shared by its pytest-xdist workers (each has a folder
    below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def lora_adapter_dir(tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path) -> Path:
    """An untrained LoRA adapter on the (tiny) base model: enough to register a version."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    folder = tmp_path_factory.mktemp("lora") / "adapter"
    model = AutoModelForCausalLM.from_pretrained(base_model_dir)
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(str(folder))
    return folder
