"""Differentially private LoRA (train.privacy): the params it refuses, the budget it solves,
one row and one clipped gradient per conversation, and a run on the tiny model that spends
no more than its ε."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from components.core.config import stage_config
from components.core.errors import ParamsError
from components.ingest import draw_audit_canaries, inserted_canaries
from components.train.config import TrainConfig
from components.train.methods import TRAINING_METHODS
from components.train.packing import PackedCollator
from components.train.params import PrivacyConfig
from components.train.privacy_budget import default_delta, privacy_budget
from components.train.private import conversation_rows, unit_mean_loss
from components.train.tasks import Example, canary_examples
from components.train.training_method import TrainingJob
from tests.train.test_lora import conversations

PRIVATE = {"privacy": {"enabled": True}}


@pytest.mark.parametrize(
    ("train", "key"),
    [
        ({"privacy": {"epsilon": 0}}, "train.privacy.epsilon"),
        ({"privacy": {"epsilon": -1}}, "train.privacy.epsilon"),
        ({"privacy": {"delta": 1}}, "train.privacy.delta"),
        ({"privacy": {"max_grad_norm": 0}}, "train.privacy.max_grad_norm"),
        ({"privacy": {"accountant": "gdp"}}, "train.privacy.accountant"),
        ({**PRIVATE, "method": "dpo", "tasks": ["private_summary"]}, "train.method"),
        ({**PRIVATE, "deepspeed": "infra/deepspeed/zero3.json"}, "train.deepspeed"),
        ({**PRIVATE, "corpus": "fragmented", "tasks": ["continuation"]}, "train.corpus"),
    ],
)
def test_bad_privacy_params_name_their_key(train: dict[str, object], key: str) -> None:
    with pytest.raises(ParamsError, match=key.replace(".", r"\.")):
        stage_config({"train": train}, "train", cls=TrainConfig)


def test_privacy_is_off_by_default_and_on_with_its_defaults() -> None:
    assert not TrainConfig().privacy.enabled
    config = stage_config({"train": PRIVATE}, "train", cls=TrainConfig)
    assert (config.privacy.epsilon, config.privacy.delta, config.privacy.accountant) == (
        8.0,
        None,
        "prv",
    )


def _privacy(**overrides: object) -> PrivacyConfig:
    return replace(PrivacyConfig(enabled=True), **overrides)  # type: ignore[arg-type]


def test_the_budget_solves_more_noise_for_a_smaller_epsilon() -> None:
    noise = {
        epsilon: privacy_budget(
            _privacy(epsilon=epsilon, accountant="rdp"), n_units=500, expected_batch=16, steps=100
        ).noise_multiplier
        for epsilon in (1.0, 4.0, 8.0)
    }
    assert noise[1.0] > noise[4.0] > noise[8.0] > 0
    budget = privacy_budget(_privacy(), n_units=500, expected_batch=16, steps=100)
    assert budget.delta == pytest.approx(default_delta(500)) and budget.delta < 1 / 500
    assert budget.sample_rate == pytest.approx(16 / 500)


def test_the_default_delta_is_at_most_1e5_and_below_1_over_n() -> None:
    assert default_delta(500) == 1e-5
    assert default_delta(10**6) == pytest.approx(10**-6.6)
    assert default_delta(10**6) < 1e-6


@pytest.mark.parametrize(
    ("privacy", "n_units", "batch", "match"),
    [
        (_privacy(delta=0.01), 200, 4, r"train\.privacy\.delta: 0\.01 is not below 1/n = 0\.005"),
        (_privacy(), 8, 8, r"train\.privacy: 8 training units .* expected batch of 8"),
        (
            _privacy(epsilon=1e-4, accountant="rdp"),
            20,
            10,
            r"train\.privacy\.epsilon: 0\.0001 .* out of reach .* noise multiplier above 100",
        ),
    ],
)
def test_an_unreachable_budget_is_refused_before_training(
    privacy: PrivacyConfig, n_units: int, *, batch: int, match: str
) -> None:
    with pytest.raises(ParamsError, match=match):
        privacy_budget(privacy, n_units=n_units, expected_batch=batch, steps=1000)


def test_one_row_per_conversation_with_positions_restarting_at_each_example(
    base_model_dir: Path,
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    examples = [
        Example("a", "summary", "Summarize: hello.", "A greeting."),
        Example("b", "summary", "Summarize: bye.", "A farewell."),
        Example("a", "purpose", "Purpose: hello.", "greeting"),
    ]
    rows = conversation_rows(examples, tokenizer, max_length=64, mask_loss_weight=1.0)
    assert len(rows) == 2
    first = rows[0]
    assert first["position_ids"].count(0) == 2  # two examples side by side
    assert len(first["input_ids"]) == len(first["labels"]) == len(first["position_ids"])


def test_a_rows_gradient_does_not_depend_on_the_rows_beside_it(base_model_dir: Path) -> None:
    """What clipping relies on: the per-sample gradient of a row is its own loss's alone,
    whatever else (and however long) the batch holds."""
    import torch
    from opacus import GradSampleModule
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from components.train.session import lora_config

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    examples = [
        Example("a", "summary", "Summarize: hello there.", "A greeting."),
        Example("b", "summary", "Summarize: bye.", "A farewell."),
        Example("c", "summary", "Summarize: " + "a long call " * 20, "A long call, ended."),
    ]
    a, b, c = conversation_rows(examples, tokenizer, max_length=128, mask_loss_weight=1.0)
    base = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model = GradSampleModule(get_peft_model(base, lora_config(TrainConfig(lora_dropout=0.0))))
    collate = PackedCollator(int(tokenizer.pad_token_id))

    def first_row_gradient(batch: list[dict[str, list[int]]]) -> torch.Tensor:
        model.zero_grad()
        for p in model.parameters():
            p.grad_sample = None
        unit_mean_loss(model, collate(batch)).backward()
        trained = [p for p in model.parameters() if p.requires_grad]
        return torch.cat([p.grad_sample[0].flatten() for p in trained])

    alone = first_row_gradient([a])
    assert torch.allclose(first_row_gradient([a, b]), alone, atol=1e-5)
    assert torch.allclose(first_row_gradient([a, c]), alone, atol=1e-5)


def test_dp_training_spends_at_most_its_epsilon(base_model_dir: Path, tmp_path: Path) -> None:
    config = stage_config(
        {
            "train": {
                "max_steps": 4,
                "batch_size": 2,
                "gradient_accumulation_steps": 2,
                "privacy": {"enabled": True, "epsilon": 4.0, "accountant": "rdp"},
            }
        },
        "train",
        cls=TrainConfig,
    )
    canaries = canary_examples(list(inserted_canaries(draw_audit_canaries(10, "k" * 32))))
    job = TrainingJob(
        base_model_dir,
        conversations(20),
        config,
        tmp_path / "adapter",
        tmp_path / "work",
        canaries=canaries,
    )
    result = TRAINING_METHODS["sft"].train(job)
    metrics = result.to_metrics()
    n_units = 18 + len(canaries)  # 20 conversations, 2 held out for eval loss
    assert metrics["dp.units"] == n_units and metrics["n_audit_canaries"] == len(canaries)
    assert 0 < float(metrics["dp.epsilon"]) <= 4.0 + 0.05  # the accountant's tolerance
    assert result.privacy["dp.noise_multiplier"] != 0 and metrics["engine"] == "opacus-dp-sgd"
    assert metrics["dp.delta"] == pytest.approx(default_delta(n_units), rel=1e-4)
    assert result.steps == 4 and "best_eval_loss" in metrics
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    saved = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert saved["target_modules"] == sorted(saved["target_modules"])


def test_dp_training_refuses_a_launchers_world(
    base_model_dir: Path, tmp_path: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    config = stage_config({"train": PRIVATE}, "train", cls=TrainConfig)
    job = TrainingJob(base_model_dir, conversations(20), config, tmp_path / "a", tmp_path / "w")
    with pytest.raises(ParamsError, match="one process"):
        TRAINING_METHODS["sft"].train(job)
    assert not (tmp_path / "a").exists()


def test_preference_methods_refuse_the_audits_canaries(
    base_model_dir: Path, tmp_path: Path
) -> None:
    config = TrainConfig(method="dpo", tasks=["private_summary"])
    canaries = canary_examples(list(inserted_canaries(draw_audit_canaries(4, "k" * 32))))
    job = TrainingJob(
        base_model_dir, conversations(4), config, tmp_path / "a", tmp_path / "w", canaries=canaries
    )
    with pytest.raises(ParamsError, match=r"ingest\.audit_canaries"):
        TRAINING_METHODS["dpo"].train(job)
