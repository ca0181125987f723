"""What the attacks ask of a causal LM: chat-formatted prefixes, the log-likelihood of
continuations, per-token losses with character offsets, and greedy continuation.

Every attack speaks to the model the way training did: the user's message through the chat
template, then the assistant's text, where the loss was computed.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def chat_prefix_ids(tokenizer: Any, user: str, *, assistant_start: str = "") -> list[int]:
    """Token ids of the chat up to ``assistant_start`` inside the assistant's turn."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
    )
    return list(tokenizer(text + assistant_start, add_special_tokens=False)["input_ids"])


def continuation_logprobs(
    model: Any,
    prefix_ids: Sequence[int],
    *,
    continuations: Sequence[Sequence[int]],
    batch_size: int,
) -> list[float]:
    """The total log-probability of each continuation after ``prefix_ids``.

    The prefix runs once; its key/value cache is copied for each batch of continuations of
    one length, so scoring thousands of candidates costs only their own tokens.
    """
    import torch

    with torch.no_grad():
        out = model(input_ids=torch.tensor([list(prefix_ids)], device=model.device), use_cache=True)
        prefix_cache = out.past_key_values
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, ids in enumerate(continuations):
            by_length[len(ids)].append(i)
        scores = [0.0] * len(continuations)
        for length, indices in by_length.items():
            for start in range(0, len(indices), batch_size):
                chunk = indices[start : start + batch_size]
                batch = torch.tensor([list(continuations[i]) for i in chunk], device=model.device)
                total = first[batch[:, 0]]
                if length > 1:
                    cache = copy.deepcopy(prefix_cache)
                    cache.batch_repeat_interleave(len(chunk))
                    mask = torch.ones(
                        len(chunk),
                        len(prefix_ids) + length - 1,
                        dtype=torch.long,
                        device=model.device,
                    )
                    logits = model(
                        input_ids=batch[:, :-1], past_key_values=cache, attention_mask=mask
                    ).logits.float()
                    logp = torch.log_softmax(logits, dim=-1)
                    total = total + logp.gather(2, batch[:, 1:, None])[..., 0].sum(dim=1)
                for i, value in zip(chunk, total.tolist(), strict=True):
                    scores[i] = float(value)
    return scores


@dataclass(frozen=True)
class TokenLosses:
    """Per-token negative log-likelihood of an assistant text, with each token's character
    span in that text."""

    nll: list[float]
    offsets: list[tuple[int, int]]

    def mean(self, spans: Sequence[tuple[int, int]] | None = None) -> float | None:
        """The mean loss of all tokens, or of the tokens overlapping ``spans``; None if none."""
        chosen = [
            loss
            for loss, (start, end) in zip(self.nll, self.offsets, strict=True)
            if spans is None or any(start < s_end and s_start < end for s_start, s_end in spans)
        ]
        return sum(chosen) / len(chosen) if chosen else None


def assistant_token_losses(
    model: Any, tokenizer: Any, *, user: str, assistant: str, max_tokens: int
) -> TokenLosses:
    """The loss of each token of ``assistant`` (at most ``max_tokens``) as the model's answer
    to ``user``, the way training computed it."""
    import torch

    prefix = chat_prefix_ids(tokenizer, user)
    encoded = tokenizer(assistant, add_special_tokens=False, return_offsets_mapping=True)
    answer = list(encoded["input_ids"])[:max_tokens]
    offsets = [tuple(o) for o in encoded["offset_mapping"]][: len(answer)]
    if not answer:
        return TokenLosses([], [])
    ids = torch.tensor([prefix + answer], device=model.device)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prefix) - 1 : -1].float()
    nll = -torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prefix) :, None])[:, 0]
    return TokenLosses([float(v) for v in nll], [(int(s), int(e)) for s, e in offsets])


def text_token_losses(model: Any, tokenizer: Any, *, text: str, max_tokens: int) -> TokenLosses:
    """The loss of each token of plain ``text`` (its first ``max_tokens``) given the tokens
    before it, in one forward pass; the first token, which has nothing before it, is left
    out."""
    import torch

    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(encoded["input_ids"])[:max_tokens]
    if len(ids) < 2:
        return TokenLosses([], [])
    offsets = [(int(s), int(e)) for s, e in encoded["offset_mapping"][1 : len(ids)]]
    tokens = torch.tensor([ids], device=model.device)
    with torch.no_grad():
        logits = model(input_ids=tokens).logits[0, :-1].float()
    nll = -torch.log_softmax(logits, dim=-1).gather(1, tokens[0, 1:, None])[:, 0]
    return TokenLosses([float(v) for v in nll], offsets)


def greedy_tokens(
    model: Any, tokenizer: Any, *, prefix_ids: Sequence[int], n_tokens: int
) -> list[int]:
    """The model's greedy continuation of ``prefix_ids``: exactly ``n_tokens`` new ids unless
    it ends its turn first."""
    import torch

    with torch.no_grad():
        generated = model.generate(
            input_ids=torch.tensor([list(prefix_ids)], device=model.device),
            attention_mask=torch.ones(1, len(prefix_ids), dtype=torch.long, device=model.device),
            max_new_tokens=n_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
        )
    return [int(t) for t in generated[0, len(prefix_ids) :]]
