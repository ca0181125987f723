"""An example as the model trains on it: chat-formatted token ids, and labels that put the
loss on the assistant's answer only (and, for the masked baseline's Baseline1, not on its
``[MASK]`` tokens)."""

from __future__ import annotations

import re
from typing import Any

from components.core.errors import ParamsError
from components.train.tasks import MASK, Example, fit_prompt


def tokenize_example(
    example: Example, tokenizer: Any, *, max_length: int, mask_loss_weight: float = 1.0
) -> dict[str, list[int]]:
    """Chat-formatted token ids; the loss is computed on the assistant's answer only.

    An example longer than ``max_length`` keeps its whole answer and a prompt cut by
    :func:`fit_prompt` (the instruction, the transcript's start and end), as evaluation
    cuts it; only an answer too long for any prompt cuts the prompt's tokens from the front.
    With ``mask_loss_weight`` 0, the answer's tokens that cover a ``[MASK]`` get no loss
    (see :func:`_mask_free_labels`).
    """
    drop_masks = mask_loss_weight == 0 and MASK in example.target
    prompt_ids, answer, answer_labels = _prompt_and_answer_ids(
        tokenizer, example.prompt, target=example.target, drop_masks=drop_masks
    )
    over = len(prompt_ids) + len(answer) - max_length
    room = len(tokenizer(example.prompt, add_special_tokens=False)["input_ids"]) if over > 0 else 0
    # The chat template adds tokens around the prompt; cut again until the whole fits.
    while over > 0 and room - over > 0:
        room -= over
        fitted = fit_prompt(example.prompt, tokenizer, max_tokens=room)
        prompt_ids, answer, answer_labels = _prompt_and_answer_ids(
            tokenizer, fitted, target=example.target, drop_masks=drop_masks
        )
        over = len(prompt_ids) + len(answer) - max_length
    keep_prompt = max(0, max_length - len(answer))
    prompt_part = prompt_ids[-keep_prompt:] if keep_prompt else []
    input_ids = (prompt_part + answer)[:max_length]
    labels = ([-100] * len(prompt_part) + answer_labels)[:max_length]
    return {"input_ids": input_ids, "attention_mask": [1] * len(input_ids), "labels": labels}


def _prompt_and_answer_ids(
    tokenizer: Any, prompt: str, *, target: str, drop_masks: bool = False
) -> tuple[list[int], list[int], list[int]]:
    """The chat's prompt ids, its answer ids, and the answer's labels."""
    user = [{"role": "user", "content": prompt}]
    prompt_ids = _chat_ids(tokenizer, user, add_generation_prompt=True)
    messages = [*user, {"role": "assistant", "content": target}]
    if not drop_masks:
        full_ids = _chat_ids(tokenizer, messages, add_generation_prompt=False)
        return prompt_ids, full_ids[len(prompt_ids) :], full_ids[len(prompt_ids) :]
    full_ids, labels = _mask_free_labels(tokenizer, messages)
    return prompt_ids, full_ids[len(prompt_ids) :], labels[len(prompt_ids) :]


_MASK_WITH_SPACES = re.compile(rf" *{re.escape(MASK)}")


def _mask_free_labels(
    tokenizer: Any, messages: list[dict[str, str]]
) -> tuple[list[int], list[int]]:
    """The chat's token ids, and as labels the same ids with -100 on every token that
    covers part of a ``[MASK]`` or the spaces before it (found by character offsets: the
    tokenizer cuts ``[MASK]`` into pieces such as `` [``, ``M``, ``ASK``, ``]``, and may
    merge its ``]`` with what follows, which then gets no loss either)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ParamsError(
            "params: train.mask_loss_weight 0 needs a fast tokenizer (character offsets); "
            f"{type(tokenizer).__name__} is not"
        )
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    masks = [m.span() for m in _MASK_WITH_SPACES.finditer(text)]
    ids = list(encoded["input_ids"])
    labels = [
        -100 if any(start < end_m and start_m < end for start_m, end_m in masks) else token
        for token, (start, end) in zip(ids, encoded["offset_mapping"], strict=True)
    ]
    return ids, labels


def _chat_ids(
    tokenizer: Any, messages: list[dict[str, str]], *, add_generation_prompt: bool
) -> list[int]:
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
