"""How an adapter answers: its generation settings (``train.generation``), saved beside it
and read back wherever it is loaded, and what they become in ``model.generate``.

The settings travel in the adapter folder (``GENERATION_FILE``), so evaluate, the audits
and the registered model generate alike, whatever params.yaml says where it is loaded.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from components.core.errors import InputError, ParamsError
from components.train.params import GenerationSettings

logger = logging.getLogger(__name__)

GENERATION_FILE = "veiltune_generation.json"
# How models generated before train.generation existed: greedy, no repetition control. The
# base model loaded as a judge or an attacker's reference keeps it (its answers are not
# this project's), and the benchmark's "before" is it.
PLAIN = GenerationSettings(repetition_penalty=1.0, no_repeat_ngram_size=0)
# An assistant turn whose end the chat template marks: what follows the marker in the
# rendered chat is the template's end-of-turn text (``<|im_end|>\n`` for SmolLM2's).
_MARKER = "veiltune-end-of-answer"


def write_generation_settings(adapter_dir: Path, settings: GenerationSettings) -> None:
    """Save ``settings`` beside the adapter (before its folder is hashed: they are part of
    the model promoted, as its weights are)."""
    text = json.dumps(asdict(settings), indent=2, sort_keys=True)
    (adapter_dir / GENERATION_FILE).write_text(text + "\n", encoding="utf-8")


def read_generation_settings(adapter_dir: Path) -> GenerationSettings:
    """The settings saved beside the adapter; ``train.generation``'s defaults for an adapter
    trained before they were saved (and a log line saying so).

    Raises:
        InputError: the file is not a JSON object of the settings' keys and allowed values.
    """
    path = adapter_dir / GENERATION_FILE
    if not path.is_file():
        logger.info(
            "%s: no %s (an adapter trained before generation settings were saved); "
            "generating with train.generation's defaults: %s",
            adapter_dir,
            GENERATION_FILE,
            asdict(GenerationSettings()),
        )
        return GenerationSettings()
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a JSON object of generation settings: {exc}") from exc
    allowed = [f.name for f in fields(GenerationSettings)]
    if not isinstance(saved, dict) or not set(saved) <= set(allowed):
        raise InputError(f"{path}: a JSON object with the keys {', '.join(allowed)}")
    try:
        return GenerationSettings(**saved)
    except ParamsError as exc:
        raise InputError(f"{path}: {exc}") from exc


def end_of_answer_ids(model: Any, tokenizer: Any) -> list[int]:
    """The token ids that end an answer: the model's own end tokens, the tokenizer's, and
    the chat template's end-of-turn token where it is a special token of its own (a model
    whose config ends at ``<|endoftext|>`` would otherwise write past ``<|im_end|>``)."""
    ids: list[int] = []
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for token in (configured, tokenizer.eos_token_id, _end_of_turn_id(tokenizer)):
        for value in token if isinstance(token, list) else [token]:
            if value is not None and int(value) not in ids:
                ids.append(int(value))
    return ids


def _end_of_turn_id(tokenizer: Any) -> int | None:
    """The first token after an assistant's answer in the chat template, if it is special."""
    chat = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _MARKER}]
    text = tokenizer.apply_chat_template(chat, tokenize=False)
    after = text[text.rindex(_MARKER) + len(_MARKER) :]
    ids = tokenizer(after, add_special_tokens=False)["input_ids"] if after else []
    special = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    return int(ids[0]) if ids and ids[0] in special else None


def answer_processors(settings: GenerationSettings, prompt_length: int) -> Any:
    """The logits processors of ``settings``, each looking at the answer alone (the tokens
    after ``prompt_length``, the left-padded batch's common prompt length)."""
    from transformers import (
        LogitsProcessorList,
        NoRepeatNGramLogitsProcessor,
        RepetitionPenaltyLogitsProcessor,
    )

    processors = LogitsProcessorList()
    if settings.repetition_penalty != 1.0:
        processors.append(
            RepetitionPenaltyLogitsProcessor(
                settings.repetition_penalty, prompt_ignore_length=prompt_length
            )
        )
    if settings.no_repeat_ngram_size:
        ngrams = NoRepeatNGramLogitsProcessor(settings.no_repeat_ngram_size)
        processors.append(_OnTheAnswer(ngrams, prompt_length))
    return processors


class _OnTheAnswer:
    """A logits processor applied to the answer's tokens only: transformers' n-gram ban
    counts the prompt's n-grams too, which would forbid a summary every phrase of its
    transcript."""

    def __init__(self, processor: Any, prompt_length: int) -> None:
        self.processor = processor
        self.prompt_length = prompt_length

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        return self.processor(input_ids[:, self.prompt_length :], scores)
