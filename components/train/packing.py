"""Sequence packing: several short examples per training sequence, attention kept within each.

Padded batches of short conversations spend most of their compute on padding. Packing puts
examples side by side in rows of at most ``max_length`` tokens (first-fit decreasing) and
restarts ``position_ids`` at 0 at every example. With ``position_ids`` given and no
``attention_mask``, transformers builds a block-diagonal causal mask from where positions
restart (``masking_utils.find_packed_sequence_indices``), so no token attends to another
example and each example is trained exactly as it would be alone. Labels at example
boundaries need nothing special: the model shifts labels inside each row, and an example's
first label is its prompt, which is masked (-100) already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

IGNORE_INDEX = -100


def pack_examples(
    examples: Sequence[dict[str, list[int]]], max_length: int
) -> list[dict[str, list[int]]]:
    """Rows of whole examples, each at most ``max_length`` tokens, first-fit decreasing.

    Each row has ``input_ids``, ``labels`` and ``position_ids`` (restarting at 0 for every
    example it holds). An example longer than ``max_length`` is a row of its own, cut.
    """
    order = sorted(range(len(examples)), key=lambda i: -len(examples[i]["input_ids"]))
    rows: list[list[int]] = []  # example indices per row
    room: list[int] = []
    for index in order:
        size = min(len(examples[index]["input_ids"]), max_length)
        for slot, free in enumerate(room):
            if size <= free:
                rows[slot].append(index)
                room[slot] -= size
                break
        else:
            rows.append([index])
            room.append(max_length - size)
    packed = []
    for row in rows:
        input_ids: list[int] = []
        labels: list[int] = []
        position_ids: list[int] = []
        for index in row:
            example = examples[index]
            ids = example["input_ids"][:max_length]
            input_ids += ids
            # The token before an example belongs to another one: never learn to predict
            # an example's first token from it (it is prompt, masked, unless truncated away).
            labels += [IGNORE_INDEX, *example["labels"][1 : len(ids)]]
            position_ids += list(range(len(ids)))
        packed.append({"input_ids": input_ids, "labels": labels, "position_ids": position_ids})
    return packed


@dataclass(frozen=True)
class PackedCollator:
    """Pads packed rows to the longest in the batch; the padding is a sequence of its own
    (positions from 0, labels ignored), so no attention mask is needed."""

    pad_token_id: int

    def __call__(self, rows: Sequence[dict[str, list[int]]]) -> dict[str, Any]:
        import torch

        width = max(len(row["input_ids"]) for row in rows)
        batch: dict[str, list[list[int]]] = {"input_ids": [], "labels": [], "position_ids": []}
        for row in rows:
            pad = width - len(row["input_ids"])
            batch["input_ids"].append(row["input_ids"] + [self.pad_token_id] * pad)
            batch["labels"].append(row["labels"] + [IGNORE_INDEX] * pad)
            batch["position_ids"].append(row["position_ids"] + list(range(pad)))
        return {key: torch.tensor(value, dtype=torch.long) for key, value in batch.items()}


def padding_share(
    rows: Sequence[dict[str, list[int]]],
    batch_size: int,
    *,
    seed: int = 0,
    width: int | None = None,
) -> float:
    """The fraction of token slots that are padding when ``rows`` are batched as a
    shuffling sampler would (a seeded shuffle), each batch padded to its longest row, or
    to ``width`` when given (fixed-length padding)."""
    import random

    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    total = padded = 0
    for start in range(0, len(order), batch_size):
        lengths = [len(rows[i]["input_ids"]) for i in order[start : start + batch_size]]
        slots = (width or max(lengths)) * len(lengths)
        total += slots
        padded += slots - sum(lengths)
    return padded / total if total else 0.0
