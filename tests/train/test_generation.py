"""Generation settings (``train.generation``): saved beside the adapter, read back wherever
it is loaded, and what reaches ``model.generate``: repetition controls on the answer alone,
and an answer that ends at the chat template's end-of-turn token.

The looping model is a tiny Llama (tests/tiny_model.py) that learnt one chat by heart: its
answer repeats a phrase, and its training text goes on after the answer's ``<|im_end|>``.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from components.core.config import build_configs
from components.core.errors import InputError, ParamsError
from components.train import GENERATION_FILE, GenerationSettings, TrainConfig
from components.train.adapter import generate, generation_settings, load_adapter, load_base
from components.train.generation import PLAIN, read_generation_settings, write_generation_settings
from tests.tiny_model import memorize, tiny_memorizer

# The answer copies a phrase of the question: the n-gram ban must let it.
QUESTION = "Summarize the call: the memo is due today."
LOOP = "the memo is due today and " * 6
AFTER_THE_END = "this was never part of the answer"


def _repeated_4gram(text: str) -> bool:
    """Whether four words come twice, from the answer's second word: its first has no space
    before it, so it is another token than the same word later (" the" is not "the")."""
    words = re.findall(r"\w+", text.lower())[1:]
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    return len(grams) != len(set(grams))


@pytest.fixture(scope="module")
def looping_model(base_model_dir: Path) -> tuple[Any, Any]:
    """A tiny model whose greedy answer to ``QUESTION`` is ``LOOP``, and whose training text
    goes on after the answer's end-of-turn token. Its own end token (config and tokenizer)
    is ``<|endoftext|>``: only the chat template marks the end of a turn with ``<|im_end|>``."""
    from transformers import AutoTokenizer

    chat = AutoTokenizer.from_pretrained(base_model_dir).chat_template  # SmolLM2's
    model, tokenizer = tiny_memorizer([QUESTION, LOOP, AFTER_THE_END], chat)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": QUESTION}], tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer(prompt + LOOP.strip() + "<|im_end|>" + AFTER_THE_END)["input_ids"]
    memorize(model, [{"input_ids": ids, "labels": ids}], pad_id=tokenizer.pad_token_id, steps=120)
    tokenizer.eos_token = "<|endoftext|>"
    tokenizer.pad_token = "<|endoftext|>"
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.eos_token_id
    return model, tokenizer


def test_plain_greedy_loops_and_the_ngram_ban_stops_it(looping_model: tuple[Any, Any]) -> None:
    model, tokenizer = looping_model
    (plain,) = generate(model, tokenizer, prompts=[QUESTION], max_new_tokens=40, settings=PLAIN)
    assert _repeated_4gram(plain), plain  # the model learnt the loop
    banned = GenerationSettings(repetition_penalty=1.0, no_repeat_ngram_size=4)
    (answer,) = generate(model, tokenizer, prompts=[QUESTION], max_new_tokens=40, settings=banned)
    assert not _repeated_4gram(answer), answer
    # The ban counts the answer's n-grams alone: a summary may copy its transcript's.
    assert answer.startswith("the memo is due today"), answer


def test_the_answer_ends_at_the_chat_templates_end_of_turn(
    looping_model: tuple[Any, Any],
) -> None:
    model, tokenizer = looping_model
    (answer,) = generate(model, tokenizer, prompts=[QUESTION], max_new_tokens=80, settings=PLAIN)
    assert answer.startswith("the memo is due")
    assert "never" not in answer, answer  # it stopped at <|im_end|>, not at <|endoftext|>


def test_a_model_answers_with_the_settings_it_was_loaded_with(
    looping_model: tuple[Any, Any],
) -> None:
    """What evaluate, the audits and the served model rely on: they call generate() with the
    model load_adapter returned, and no settings of their own."""
    model, tokenizer = looping_model
    try:
        model.veiltune_generation = GenerationSettings(no_repeat_ngram_size=4)
        (answer,) = generate(model, tokenizer, prompts=[QUESTION], max_new_tokens=40)
    finally:
        del model.veiltune_generation
    assert not _repeated_4gram(answer), answer


@pytest.fixture
def adapter(tmp_path: Path, base_model_dir: Path, *, lora_adapter_dir: Path) -> Path:
    """An untrained adapter with its tokenizer, as train saves it (but no settings file)."""
    from transformers import AutoTokenizer

    folder = tmp_path / "adapter"
    shutil.copytree(lora_adapter_dir, folder)
    AutoTokenizer.from_pretrained(base_model_dir).save_pretrained(folder)
    return folder


def test_an_adapter_answers_with_the_settings_saved_beside_it(
    adapter: Path, base_model_dir: Path
) -> None:
    saved = GenerationSettings(repetition_penalty=1.5, no_repeat_ngram_size=3)
    write_generation_settings(adapter, saved)
    model, _ = load_adapter(base_model_dir, adapter)
    assert generation_settings(model) == saved
    base, _ = load_base(base_model_dir)
    assert generation_settings(base) == PLAIN  # a judge or attacker's model: plain greedy


def test_an_old_adapter_answers_with_the_defaults_and_says_so(
    adapter: Path, base_model_dir: Path, *, caplog: pytest.LogCaptureFixture
) -> None:
    assert not (adapter / GENERATION_FILE).exists()
    with caplog.at_level(logging.INFO, logger="components.train.generation"):
        model, _ = load_adapter(base_model_dir, adapter)
    assert generation_settings(model) == GenerationSettings()
    assert f"no {GENERATION_FILE}" in caplog.text and "defaults" in caplog.text


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("repetition_penalty", 0.5),
        ("repetition_penalty", 3),
        ("no_repeat_ngram_size", 1),
        ("no_repeat_ngram_size", -2),
    ],
)
def test_a_bad_generation_param_is_one_error_naming_its_key(key: str, value: Any) -> None:
    with pytest.raises(ParamsError) as raised:
        build_configs({"train": {"generation": {key: value}}}, {"train": TrainConfig})
    message = str(raised.value)
    assert f"train.generation.{key}" in message and "\n" not in message


def test_a_bad_settings_file_beside_an_adapter_names_the_file(tmp_path: Path) -> None:
    (tmp_path / GENERATION_FILE).write_text(json.dumps({"no_repeat_ngram_size": 1}), "utf-8")
    with pytest.raises(InputError, match=rf"{GENERATION_FILE}: .*no_repeat_ngram_size"):
        read_generation_settings(tmp_path)
    (tmp_path / GENERATION_FILE).write_text(json.dumps({"temperature": 0.7}), "utf-8")
    with pytest.raises(InputError, match="the keys repetition_penalty, no_repeat_ngram_size"):
        read_generation_settings(tmp_path)
