"""Preference tuning (train.method dpo | orpo): the pairs, the params, and TRL training a
LoRA adapter on the real base model."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from components.core.corpus import Conversation, Turn
from components.core.errors import InputError, ParamsError
from components.ingest.generate import generate_sensitive_corpus
from components.train.config import TrainConfig
from components.train.generation import read_generation_settings
from components.train.lora import corpus_examples
from components.train.methods import TRAINING_METHODS
from components.train.preference import DPO, ORPO, preference_pairs
from components.train.tasks import task_examples
from components.train.training_method import TrainingJob


def test_pairs_are_the_private_and_the_leaking_summary_of_the_private_summary_prompt() -> None:
    calls = generate_sensitive_corpus(3, seed=13)
    plain = Conversation("plain", (Turn("A", "hello"),), labels={"summary": "A greeting."})
    pairs = preference_pairs([*calls, plain], "corpus.jsonl")
    assert [p.conversation_id for p in pairs] == [c.id for c in calls]
    for pair, call in zip(pairs, calls, strict=True):
        assert (pair.chosen, pair.rejected) == (
            call.labels["summary_private"],
            call.labels["summary_leaking"],
        )
        (example,) = task_examples(call, ["private_summary"])
        assert pair.prompt == example.prompt  # asked exactly as SFT and evaluate ask it
        row = pair.to_row()
        assert row["chosen"] == [{"role": "assistant", "content": pair.chosen}]


def test_a_corpus_without_pairs_is_one_clear_error() -> None:
    plain = Conversation("plain", (Turn("A", "hello"),), labels={"summary": "A greeting."})
    with pytest.raises(InputError, match=r"data/anonymized/corpus.jsonl: train.method needs"):
        preference_pairs([plain], "data/anonymized/corpus.jsonl")


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"method": "ppo"}, "train.method"),
        ({"method": "dpo"}, "train.tasks"),  # the default call tasks have no pairs
        ({"method": "orpo", "tasks": ["private_summary"], "corpus": "masked"}, "train.corpus"),
        ({"method": "dpo", "tasks": ["private_summary"], "beta": 0}, "train.beta"),
        ({"method": "dpo", "tasks": ["private_summary"], "only_good": True}, "train.only_good"),
        ({"tasks": ["summary", "dual_summary"], "only_good": True}, "train.only_good"),
        ({"tasks": ["purpose", "outcome"], "only_good": True}, "train.only_good"),  # no summary
    ],
)
def test_bad_preference_params_name_their_key(params: dict[str, object], key: str) -> None:
    with pytest.raises(ParamsError, match=key.replace(".", r"\.")):
        TrainConfig(**params)  # type: ignore[arg-type]


def test_only_good_trains_the_summary_task_on_the_private_summary() -> None:
    (call,) = generate_sensitive_corpus(1, seed=13)
    (normal,) = task_examples(call, ["summary"])
    (good,) = task_examples(call, ["summary"], only_good=True)
    assert normal.target == call.labels["summary"]
    assert good.target == call.labels["summary_private"] != normal.target
    plain = Conversation("plain", (Turn("A", "hello"),), labels={"summary": "A greeting."})
    assert task_examples(plain, ["summary"], only_good=True)[0].target == "A greeting."


def test_only_good_on_a_corpus_without_private_summaries_is_refused() -> None:
    # It used to train every conversation on its ordinary summary without a word.
    plain = [
        Conversation(f"c{i}", (Turn("A", "hello"),), labels={"summary": "A greeting."})
        for i in range(3)
    ]
    config = TrainConfig(tasks=["summary", "purpose"], only_good=True)
    with pytest.raises(ParamsError, match=r"train\.only_good: none of the 3 conversations") as err:
        corpus_examples(plain, config)
    assert "labels.summary_private" in str(err.value)
    (call,) = generate_sensitive_corpus(1, seed=13)
    examples = corpus_examples([*plain, call], config)  # one is enough: the others keep theirs
    assert [e.target for e in examples.train if e.task == "summary"].count(
        call.labels["summary_private"]
    ) == 1


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dpo", "orpo"])
def test_preference_tuning_trains_a_lora_adapter(
    method: str, tmp_path: Path, *, base_model_dir: Path
) -> None:
    config = TrainConfig(
        method=method,
        tasks=["private_summary"],
        max_steps=3,
        batch_size=2,
        learning_rate=2e-3,
        max_seq_length=320,
        lora_r=4,
        lora_alpha=8,
        eval_fraction=0.0,
    )
    calls = generate_sensitive_corpus(2, seed=13)
    job = TrainingJob(base_model_dir, calls, config, tmp_path / "a", tmp_path / "w")
    result = TRAINING_METHODS[method].train(job)
    assert result.steps == 3 and len(result.loss_history) == 3
    assert result.n_examples == 2 and 0 < result.trainable_parameters < result.total_parameters
    metrics = result.to_metrics()
    assert {"preference.rewards_accuracies", "preference.rewards_margins"} <= set(metrics)
    if method == "dpo":
        # Steps over the same pairs: the chosen (private) summary gains on the leaking one
        # relative to the base model, which is what DPO optimizes.
        assert float(metrics["preference.rewards_margins"]) > 0
    else:
        # ORPO is mostly the chosen answer's language-modelling loss: it falls.
        assert result.loss_history[-1][1] < result.loss_history[0][1]
    saved = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert saved["r"] == 4 and saved["target_modules"] == sorted(saved["target_modules"])
    assert read_generation_settings(tmp_path / "a") == config.generation  # saved beside it
    assert not list((tmp_path / "w").glob("checkpoint-*"))  # a finished run leaves none


@pytest.mark.parametrize("method", ["dpo", "orpo"])
def test_trl_config_turns_checkpointing_off_without_a_deprecation_warning(
    method: str, tmp_path: Path
) -> None:
    # gradient_checkpointing=False warned "`gradient_checkpointing` is deprecated" on every
    # preference run (issue 39)
    config = TrainConfig(method=method, tasks=["private_summary"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        args = {"dpo": DPO, "orpo": ORPO}[method].arguments(
            config, tmp_path, deepspeed=None, evaluating=False
        )
    assert args.activation_checkpointing is False and args.gradient_checkpointing is False
