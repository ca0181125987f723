"""LoRA training on SmolLM2's architecture (the tiny random-init model of tests/tiny_model.py,
a few steps), and the adapter round trip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.core.corpus import Conversation, Turn
from components.core.errors import InputError
from components.train.adapter import generate, generation_settings, load_adapter
from components.train.chat_tokens import tokenize_example
from components.train.checkpoints import resumable_checkpoint
from components.train.config import GenerationSettings, TrainConfig
from components.train.generation import read_generation_settings
from components.train.lora import CountingRows, train_lora, training_fingerprint
from components.train.result import mean_train_loss
from components.train.session import lora_config, read_label_options
from components.train.tasks import (
    Example,
    fit_prompt,
    label_options,
    task_examples,
    training_examples,
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


def test_examples_per_labelled_task_and_continuation_only_when_asked() -> None:
    (conversation,) = conversations(1)
    assert [e.task for e in task_examples(conversation)] == [
        "summary",
        "action_items",
        "purpose",
        "outcome",
    ]
    # Continuation puts the loss on transcript text: never a fallback for missing labels.
    unlabelled = Conversation("u", conversation.turns)
    assert task_examples(unlabelled) == []
    assert (
        task_examples(Conversation("s", conversation.turns, labels={"summary": "x"}), ["purpose"])
        == []
    )
    assert [e.task for e in task_examples(unlabelled, ["summary", "continuation"])] == [
        "continuation"
    ]


def test_conversations_without_labels_for_the_tasks_are_skipped_and_counted() -> None:
    tasks = ["summary", "action_items", "purpose", "outcome"]
    labelled = conversations(3)
    bare = [Conversation(f"u{i}", labelled[0].turns) for i in range(2)]
    split = training_examples(
        [labelled[0], *bare, *labelled[1:]], tasks, eval_fraction=0.0, seed=13
    )
    assert split.skipped == ["u0", "u1"]
    assert split.trained_ids == {"c0", "c1", "c2"} and split.evaluation == []
    assert {e.task for e in split.train} == set(tasks)
    opted_in = training_examples(bare, [*tasks, "continuation"], eval_fraction=0.0, seed=13)
    assert opted_in.skipped == [] and {e.task for e in opted_in.train} == {"continuation"}


def test_no_labels_for_the_tasks_says_why_and_how_to_train_on_transcripts(
    tmp_path: Path, base_model_dir: Path
) -> None:
    bare = [Conversation(f"u{i}", conversations(1)[0].turns) for i in range(3)]
    config = TrainConfig(max_steps=1, batch_size=1, max_seq_length=32, lora_r=2, lora_alpha=4)
    with pytest.raises(InputError, match=r"none of its 3 conversations has a label.*continuation"):
        train_lora(
            base_model_dir, bare, config=config, output_dir=tmp_path / "a", work_dir=tmp_path / "w"
        )
    assert not (tmp_path / "a").exists()


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


def test_zero_mask_loss_weight_takes_the_loss_off_every_mask_token(base_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    target = "[MASK] asked to call [MASK] back about [MASK]."
    example = Example("c", "summary", "Summarize: [MASK] called [MASK].", target)
    today = tokenize_example(example, tokenizer, max_length=512)
    assert tokenize_example(example, tokenizer, max_length=512, mask_loss_weight=1.0) == today
    trained = [i for i, label in enumerate(today["labels"]) if label != -100]
    assert "[MASK] asked" in tokenizer.decode([today["input_ids"][i] for i in trained])
    assert all(today["labels"][i] == today["input_ids"][i] for i in trained)

    baseline1 = tokenize_example(example, tokenizer, max_length=512, mask_loss_weight=0.0)
    assert baseline1["input_ids"] == today["input_ids"]
    ids, labels = baseline1["input_ids"], baseline1["labels"]
    dropped = [i for i in trained if labels[i] == -100]
    # Every piece of each [MASK] (with its space; "]." is one token), and nothing else.
    assert "".join(str(tokenizer.decode([ids[i]])) for i in dropped) == "[MASK] [MASK] [MASK]."
    kept = [i for i in trained if labels[i] != -100]
    assert all(labels[i] == ids[i] for i in kept)
    assert str(tokenizer.decode([ids[i] for i in kept])).startswith(" asked to call back about")
    assert all(labels[i] == -100 for i in range(len(ids)) if i not in trained)  # the prompt
    # A cut prompt keeps the answer's labels where they were.
    short = tokenize_example(example, tokenizer, max_length=24, mask_loss_weight=0.0)
    assert len(short["input_ids"]) == 24 < len(ids)
    assert short["labels"][-len(trained) :] == [labels[i] for i in trained]
    # The resume fingerprint hashes the labels: a checkpoint of one is never resumed by other.
    config = TrainConfig()
    assert training_fingerprint(config, [baseline1]) != training_fingerprint(config, [today])
    assert training_fingerprint(config, [today]) != training_fingerprint(
        TrainConfig(mask_loss_weight=0), [today]
    )


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
    fitted = fit_prompt(example.prompt, tokenizer, max_tokens=200)
    assert len(tokenizer(fitted, add_special_tokens=False)["input_ids"]) <= 200
    assert fitted.startswith("Summarize this call")
    assert "router keeps dropping" in fitted and "replacement ships Friday" in fitted
    assert "step number 60 " not in fitted and "\n...\n" in fitted
    assert fit_prompt(example.prompt, tokenizer, max_tokens=10_000) == example.prompt


def test_a_long_example_is_cut_in_its_prompt_not_its_instruction(base_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir)
    (example,) = task_examples(long_call())
    tokens = tokenize_example(example, tokenizer, max_length=256)
    text = tokenizer.decode(tokens["input_ids"])
    assert isinstance(text, str)
    assert 250 <= len(tokens["input_ids"]) <= 256
    # The chat template's start, the instruction and the call's end survive; the answer
    # is whole and is all the loss is on.
    assert text.startswith("<|im_start|>system")
    assert "Summarize this call" in text and "replacement ships Friday" in text
    answer = [
        t for t, label in zip(tokens["input_ids"], tokens["labels"], strict=True) if label != -100
    ]
    decoded = tokenizer.decode(answer)
    assert isinstance(decoded, str)
    assert decoded.startswith("The router was fixed.")


@pytest.mark.slow
def test_train_save_load_generate(tmp_path: Path, base_model_dir: Path) -> None:
    config = TrainConfig(
        max_steps=2,
        batch_size=2,
        max_seq_length=96,
        lora_r=4,
        lora_alpha=8,
        target_modules=["v_proj", "q_proj", "o_proj", "k_proj"],
        generation=GenerationSettings(repetition_penalty=1.3, no_repeat_ngram_size=5),
    )
    unlabelled = Conversation("u", conversations(1)[0].turns)
    result = train_lora(
        base_model_dir,
        [*conversations(4), unlabelled],
        config=config,
        output_dir=tmp_path / "adapter",
        work_dir=tmp_path / "work",
    )
    assert result.steps == 2 and len(result.loss_history) == 2
    # The unlabelled conversation is skipped (no continuation example), and counted.
    assert result.n_examples == 16
    metrics = result.to_metrics()
    assert (metrics["n_conversations"], metrics["n_conversations_skipped"]) == (4, 1)
    assert metrics["n_conversations_eval"] == 0
    saved = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert saved["target_modules"] == ["k_proj", "o_proj", "q_proj", "v_proj"]
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
    # train.generation is saved beside the adapter, and the loaded model answers with it
    assert read_generation_settings(tmp_path / "adapter") == config.generation
    assert generation_settings(merged) == generation_settings(model) == config.generation
    ids = tokenizer("Thank you for calling.", return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(model(**ids).logits, merged(**ids).logits, atol=1e-4)
    (text,) = generate(merged, tokenizer, prompts=["Say hello."], max_new_tokens=5)
    assert isinstance(text, str) and text  # the new tokens, decoded (a random model's: "\n…")


def test_unknown_target_module_is_refused_before_training(
    tmp_path: Path, base_model_dir: Path
) -> None:
    from components.core.errors import ParamsError

    config = TrainConfig(max_steps=1, target_modules=["q_proj", "query_key_value"])
    with pytest.raises(ParamsError, match=r"train.target_modules \['query_key_value'\].*q_proj"):
        train_lora(
            base_model_dir,
            conversations(2),
            config=config,
            output_dir=tmp_path / "a",
            work_dir=tmp_path / "w",
        )
    assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_killed_training_resumes_from_its_last_checkpoint(
    tmp_path: Path, base_model_dir: Path
) -> None:
    from transformers import TrainerCallback

    class Kill(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]  # noqa: PLR0917 (the Trainer's callback)
            if state.global_step == 3:
                raise KeyboardInterrupt("killed")

    config = TrainConfig(
        max_steps=4, batch_size=1, max_seq_length=64, lora_r=4, lora_alpha=8, save_steps=2
    )
    work = tmp_path / "work"
    whole = train_lora(
        base_model_dir,
        conversations(4),
        config=config,
        output_dir=tmp_path / "u",
        work_dir=tmp_path / "uw",
    )
    with pytest.raises(KeyboardInterrupt):
        train_lora(
            base_model_dir,
            conversations(4),
            config=config,
            output_dir=tmp_path / "a",
            work_dir=work,
            callbacks=[Kill()],
        )
    assert (work / "checkpoint-2").is_dir() and not (work / "checkpoint-4").exists()
    result = train_lora(
        base_model_dir, conversations(4), config=config, output_dir=tmp_path / "a", work_dir=work
    )
    assert result.resumed_from_step == 2 and result.steps == 4
    assert [step for step, _ in result.loss_history] == [1, 2, 3, 4]
    assert (tmp_path / "a" / "adapter_config.json").is_file()
    # The loss of all four steps, as the uninterrupted run reports it, not of the last two.
    assert [loss for _, loss in result.loss_history] == pytest.approx(
        [loss for _, loss in whole.loss_history], abs=1e-4
    )
    assert result.train_loss == pytest.approx(whole.train_loss, abs=1e-4)
    assert result.train_loss == pytest.approx(
        mean_train_loss([{"step": step, "loss": loss} for step, loss in whole.loss_history])
    )
    # A finished run's checkpoints are removed once its adapter is saved.
    assert not list(work.glob("checkpoint-*"))
    # Another config is another run: its stale checkpoints are not resumed.
    other = TrainConfig(**{**config.__dict__, "learning_rate": 1e-4, "max_steps": 1})
    fresh = train_lora(
        base_model_dir, conversations(4), config=other, output_dir=tmp_path / "b", work_dir=work
    )
    assert fresh.resumed_from_step == 0 and fresh.steps == 1


def test_mean_train_loss_weighs_each_logged_loss_by_the_steps_it_covers() -> None:
    history = [
        {"step": 2, "loss": 1.0},
        {"step": 2, "eval_loss": 9.0},
        {"step": 3, "loss": 4.0},
        {"train_runtime": 1.0, "step": 3, "train_loss": 4.0},
    ]
    assert mean_train_loss(history) == pytest.approx(2.0)
    assert mean_train_loss([]) == 0.0


def _checkpoint(work: Path, step: int, *, max_steps: int, should_training_stop: bool) -> Path:
    folder = work / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    control = {"args": {"should_training_stop": should_training_stop}, "attributes": {}}
    state = {
        "global_step": step,
        "max_steps": max_steps,
        "stateful_callbacks": {"TrainerControl": control},
    }
    (folder / "trainer_state.json").write_text(json.dumps(state))
    return folder


@pytest.mark.parametrize(
    ("step", "max_steps", "stopped", "resumed"),
    [
        (4, 8, False, True),  # killed mid-run: resume
        (8, 8, True, False),  # the end of the run: train afresh, never past max_steps
        (8, 8, False, False),
        (4, 8, True, False),  # stopped early
    ],
)
def test_only_an_unfinished_run_is_resumed(
    tmp_path: Path, step: int, *, max_steps: int, stopped: bool, resumed: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "fingerprint").write_text("f", encoding="utf-8")
    _checkpoint(work, 2, max_steps=max_steps, should_training_stop=False)
    newest = _checkpoint(work, step, max_steps=max_steps, should_training_stop=stopped)
    assert resumable_checkpoint(work, "f") == (newest if resumed else None)
    assert newest.is_dir() == resumed  # a finished run's checkpoints are cleared
    assert (work / "fingerprint").read_text(encoding="utf-8") == "f"


@pytest.mark.slow
def test_rerunning_a_finished_training_never_trains_past_max_steps(
    tmp_path: Path, base_model_dir: Path
) -> None:
    from transformers import TrainerCallback

    class KillBeforeSave(TrainerCallback):
        def on_train_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]  # noqa: PLR0917 (the Trainer's callback)
            raise KeyboardInterrupt("killed after the last checkpoint")

    config = TrainConfig(
        max_steps=2, batch_size=1, max_seq_length=48, lora_r=2, lora_alpha=4, save_steps=2
    )
    work = tmp_path / "work"
    with pytest.raises(KeyboardInterrupt):
        train_lora(
            base_model_dir,
            conversations(2),
            config=config,
            output_dir=tmp_path / "k",
            work_dir=work,
            callbacks=[KillBeforeSave()],
        )
    assert (work / "checkpoint-2").is_dir()  # the final checkpoint, no adapter yet
    first = train_lora(
        base_model_dir, conversations(2), config=config, output_dir=tmp_path / "a", work_dir=work
    )
    again = train_lora(
        base_model_dir, conversations(2), config=config, output_dir=tmp_path / "b", work_dir=work
    )
    for result in (first, again):
        assert result.steps == 2 and result.resumed_from_step == 0
        assert [step for step, _ in result.loss_history] == [1, 2]
    assert first.loss_history == again.loss_history
    assert {
        k: v for k, v in first.to_metrics().items() if k not in ("runtime_s", "tokens_per_second")
    } == {
        k: v for k, v in again.to_metrics().items() if k not in ("runtime_s", "tokens_per_second")
    }
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


_SAVE_ADAPTER = """
import sys
from pathlib import Path
from components.train.config import TrainConfig
from components.core.corpus import Conversation, Turn
from components.train.lora import train_lora
call = Conversation("c", (Turn("A", "My card was charged twice."), Turn("B", "Refunded.")),
                    labels={"summary": "A refund."})
config = TrainConfig(max_steps=1, batch_size=1, max_seq_length=32, lora_r=2, lora_alpha=4)
out = Path(sys.argv[2])
train_lora(
    Path(sys.argv[1]), [call], config=config, output_dir=out / "adapter", work_dir=out / "work"
)
"""


@pytest.mark.slow
def test_adapter_config_is_the_same_whatever_the_hash_seed(
    tmp_path: Path, base_model_dir: Path
) -> None:
    # peft keeps target_modules as a set: unsorted, its order follows PYTHONHASHSEED, and
    # DVC would see a changed adapter on every run.
    saved = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [sys.executable, "-c", _SAVE_ADAPTER, str(base_model_dir), str(out)],
            check=True,
            env=env,
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
        )
        saved.append((out / "adapter" / "adapter_config.json").read_bytes())
    assert json.loads(saved[0])["target_modules"] == ["k_proj", "o_proj", "q_proj", "v_proj"]
    assert saved[0] == saved[1]


def test_eval_split_keeps_each_conversation_on_one_side() -> None:
    from components.train.tasks import eval_conversations

    ids = [f"c{i}" for i in range(200)]
    held = eval_conversations(ids, 0.1, seed=13)
    assert 5 <= len(held) <= 40 and held == eval_conversations(ids, 0.1, seed=13)
    assert eval_conversations(ids[:9], 0.1, seed=13) == set()  # too few to spare any
    assert eval_conversations(ids, 0.0, seed=13) == set()


@pytest.mark.slow
def test_training_stops_early_when_eval_loss_stops_improving(
    tmp_path: Path, base_model_dir: Path
) -> None:
    # A learning rate of 1e-30 leaves the adapter's output below float32's resolution: the eval
    # loss stays where it was, and the second evaluation is one without improvement. (A rate far
    # too high, 5.0, made it worse in most runs, not all: it improved in a full run on 2026-12-06.)
    config = TrainConfig(
        max_steps=8,
        batch_size=2,
        max_seq_length=96,
        lora_r=4,
        lora_alpha=8,
        learning_rate=1e-30,
        save_steps=2,
        eval_fraction=0.3,
        early_stopping_patience=1,
        tasks=["summary", "action_items", "purpose", "outcome"],
    )
    many = [
        Conversation(f"e{i}", c.turns, c.context, labels=c.labels)
        for i, c in enumerate(conversations(12))
    ]
    result = train_lora(
        base_model_dir, many, config=config, output_dir=tmp_path / "a", work_dir=tmp_path / "w"
    )
    assert result.n_eval_examples > 0 and len(result.eval_history) >= 2
    assert result.steps < 8  # stopped before max_steps
    losses = [loss for _, loss in result.eval_history]
    assert losses[-1] >= min(losses[:-1])  # it stopped at an evaluation that did not improve
    assert result.to_metrics()["best_eval_loss"] == pytest.approx(min(losses), abs=1e-4)
