"""LoRA training on the real SmolLM2 base model (a few steps), and the adapter round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.adapter_model import generate, load_adapter
from components.config import TrainConfig
from components.corpus import Conversation, Turn
from components.tasks import Example, fit_prompt, label_options, task_examples
from components.train import (
    CountingRows,
    lora_config,
    read_label_options,
    tokenize_example,
    train_lora,
)


def conversations(n: int) -> list[Conversation]:
    return [
        Conversation(
            f"c{i}",
            (
                Turn("[PERSON_NAME_1]", "Hi, I was charged twice this month."),
                Turn("[PERSON_NAME_2]", "Sorry about that, I have refunded the second charge."),
            ),
            "customer_support",
            labels={
                "summary": "A double charge was refunded.",
                "purpose": "billing_question",
                "outcome": "resolved",
                "action_items": ["Agent refunds the charge"],
            },
        )
        for i in range(n)
    ]


def test_lora_config_from_params() -> None:
    config = lora_config(
        TrainConfig(lora_r=8, lora_alpha=16, lora_dropout=0.05, target_modules=["q_proj"])
    )
    assert (config.r, config.lora_alpha, config.lora_dropout) == (8, 16, 0.05)
    assert set(config.target_modules) == {"q_proj"}
    assert config.task_type == "CAUSAL_LM"


def test_examples_per_labelled_task_and_continuation_without_labels() -> None:
    (conversation,) = conversations(1)
    assert [e.task for e in task_examples(conversation)] == [
        "summary",
        "action_items",
        "purpose",
        "outcome",
    ]
    unlabelled = Conversation("u", conversation.turns)
    assert [e.task for e in task_examples(unlabelled)] == ["continuation"]


def test_loss_only_on_the_answer(base_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    example = Example("c", "summary", "Summarize: hello there", "A greeting.")
    tokens = tokenize_example(example, tokenizer, max_length=512)
    answer = [
        t for t, label in zip(tokens["input_ids"], tokens["labels"], strict=True) if label != -100
    ]
    assert "A greeting." in tokenizer.decode(answer)
    assert "Summarize" not in tokenizer.decode(answer)
    short = tokenize_example(example, tokenizer, max_length=8)
    assert len(short["input_ids"]) == 8 and short["labels"][-1] != -100


def test_classification_prompts_list_the_labels_the_training_corpus_uses() -> None:
    calls = conversations(2)
    other = Conversation("x", calls[0].turns, labels={"purpose": "address_change"})
    options = label_options([*calls, other])
    assert options == {
        "purpose": ["address_change", "billing_question"],
        "outcome": ["resolved"],
    }
    examples = {e.task: e for e in task_examples(calls[0], options=options)}
    assert examples["purpose"].prompt.startswith(
        "What was the purpose of this call? Answer with one label. "
        "Choose from: address_change, billing_question.\n\n"
    )
    assert "Choose from: resolved." in examples["outcome"].prompt
    assert "Choose from" not in examples["summary"].prompt
    # Without options (an adapter trained before them), the prompt asks as it did.
    (plain,) = [e for e in task_examples(calls[0]) if e.task == "purpose"]
    assert "Choose from" not in plain.prompt


def test_counting_rows_counts_the_rows_trained_on_not_the_ones_fetched_ahead() -> None:
    rows = CountingRows([{"input_ids": [1] * n} for n in (3, 5, 7, 11)])
    assert len(rows) == 4
    fetched = [rows[i] for i in (2, 0, 3)]  # a sampler's order; the last is a lookahead
    assert [len(r["input_ids"]) for r in fetched] == [7, 3, 11]
    assert rows.tokens(2) == 10 and rows.tokens(10) == 21


def long_call(n_turns: int = 120) -> Conversation:
    turns = [Turn("[PERSON_NAME_1]", "I am calling because my router keeps dropping.")]
    turns += [
        Turn("[PERSON_NAME_2]", f"Let us try step number {i} together.") for i in range(n_turns)
    ]
    turns += [Turn("[PERSON_NAME_1]", "It works now, the replacement ships Friday.")]
    return Conversation("long", tuple(turns), labels={"summary": "The router was fixed."})


def test_a_long_prompt_keeps_its_instruction_opening_and_end(base_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    (example,) = task_examples(long_call())
    assert len(tokenizer(example.prompt)["input_ids"]) > 400
    fitted = fit_prompt(example.prompt, tokenizer, 200)
    assert len(tokenizer(fitted, add_special_tokens=False)["input_ids"]) <= 200
    assert fitted.startswith("Summarize this call")
    assert "router keeps dropping" in fitted and "replacement ships Friday" in fitted
    assert "step number 60 " not in fitted and "\n...\n" in fitted
    assert fit_prompt(example.prompt, tokenizer, 10_000) == example.prompt


def test_a_long_example_is_cut_in_its_prompt_not_its_instruction(base_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    (example,) = task_examples(long_call())
    tokens = tokenize_example(example, tokenizer, max_length=256)
    text = tokenizer.decode(tokens["input_ids"])
    assert 250 <= len(tokens["input_ids"]) <= 256
    # The chat template's start, the instruction and the call's end survive; the answer
    # is whole and is all the loss is on.
    assert text.startswith("<|im_start|>system")
    assert "Summarize this call" in text and "replacement ships Friday" in text
    answer = [
        t for t, label in zip(tokens["input_ids"], tokens["labels"], strict=True) if label != -100
    ]
    assert tokenizer.decode(answer).startswith("The router was fixed.")


@pytest.mark.slow
def test_train_save_load_generate(tmp_path: Path, base_model_dir: Path) -> None:
    config = TrainConfig(max_steps=2, batch_size=2, max_seq_length=96, lora_r=4, lora_alpha=8)
    result = train_lora(
        base_model_dir, conversations(4), config, tmp_path / "adapter", tmp_path / "work"
    )
    assert result.steps == 2 and len(result.loss_history) == 2
    # two steps of two rows of at most 96 tokens, counted as fetched
    assert 0 < result.tokens_trained <= 2 * 2 * 96
    assert result.tokens_per_second == pytest.approx(result.tokens_trained / result.runtime_s)
    assert 0 < result.trainable_parameters < result.total_parameters / 50
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert read_label_options(tmp_path / "adapter") == {
        "purpose": ["billing_question"],
        "outcome": ["resolved"],
    }
    import torch

    model, tokenizer = load_adapter(base_model_dir, tmp_path / "adapter", merge=False)
    assert model.peft_config["default"].r == 4
    merged, _ = load_adapter(base_model_dir, tmp_path / "adapter")
    assert not hasattr(merged, "peft_config")  # a plain model: LoRA folded into its weights
    ids = tokenizer("Thank you for calling.", return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(model(**ids).logits, merged(**ids).logits, atol=1e-4)
    (text,) = generate(merged, tokenizer, ["Say hello."], max_new_tokens=5)
    assert isinstance(text, str) and text.strip()


def test_unknown_target_module_is_refused_before_training(
    tmp_path: Path, base_model_dir: Path
) -> None:
    from components.errors import ParamsError

    config = TrainConfig(max_steps=1, target_modules=["q_proj", "query_key_value"])
    with pytest.raises(ParamsError, match=r"train.target_modules \['query_key_value'\].*q_proj"):
        train_lora(base_model_dir, conversations(2), config, tmp_path / "a", tmp_path / "w")
    assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_killed_training_resumes_from_its_last_checkpoint(
    tmp_path: Path, base_model_dir: Path
) -> None:
    from transformers import TrainerCallback

    class Kill(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if state.global_step == 3:
                raise KeyboardInterrupt("killed")

    config = TrainConfig(max_steps=4, batch_size=1, max_seq_length=64, lora_r=4, lora_alpha=8,
                         save_steps=2)  # fmt: skip
    work = tmp_path / "work"
    with pytest.raises(KeyboardInterrupt):
        train_lora(base_model_dir, conversations(4), config, tmp_path / "a", work, [Kill()])
    assert (work / "checkpoint-2").is_dir() and not (work / "checkpoint-4").exists()
    result = train_lora(base_model_dir, conversations(4), config, tmp_path / "a", work)
    assert result.resumed_from_step == 2 and result.steps == 4
    assert [step for step, _ in result.loss_history] == [1, 2, 3, 4]
    assert (tmp_path / "a" / "adapter_config.json").is_file()
    # Another config is another run: its stale checkpoints are not resumed.
    other = TrainConfig(**{**config.__dict__, "learning_rate": 1e-4, "max_steps": 1})
    fresh = train_lora(base_model_dir, conversations(4), other, tmp_path / "b", work)
    assert fresh.resumed_from_step == 0 and fresh.steps == 1


def test_eval_split_keeps_each_conversation_on_one_side() -> None:
    from components.train import eval_conversations

    ids = [f"c{i}" for i in range(200)]
    held = eval_conversations(ids, 0.1, seed=13)
    assert 5 <= len(held) <= 40 and held == eval_conversations(ids, 0.1, seed=13)
    assert eval_conversations(ids[:9], 0.1, seed=13) == set()  # too few to spare any
    assert eval_conversations(ids, 0.0, seed=13) == set()


@pytest.mark.slow
def test_training_stops_early_when_eval_loss_stops_improving(
    tmp_path: Path, base_model_dir: Path
) -> None:
    # A learning rate far too high makes the eval loss worse after the first evaluation.
    config = TrainConfig(max_steps=8, batch_size=2, max_seq_length=96, lora_r=4, lora_alpha=8,
                         learning_rate=5.0, save_steps=2, eval_fraction=0.3,
                         early_stopping_patience=1,
                         tasks=["summary", "action_items", "purpose", "outcome"])  # fmt: skip
    many = [
        Conversation(f"e{i}", c.turns, c.context, labels=c.labels)
        for i, c in enumerate(conversations(12))
    ]
    result = train_lora(base_model_dir, many, config, tmp_path / "a", tmp_path / "w")
    assert result.n_eval_examples > 0 and len(result.eval_history) >= 2
    assert result.steps < 8  # stopped before max_steps
    losses = [loss for _, loss in result.eval_history]
    assert losses[-1] >= min(losses[:-1])  # it stopped at an evaluation that did not improve
    assert result.to_metrics()["best_eval_loss"] == pytest.approx(min(losses), abs=1e-4)
