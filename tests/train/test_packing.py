"""Sequence packing: rows of whole examples, and attention that never crosses an example."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.train.packing import IGNORE_INDEX, PackedCollator, pack_examples, padding_share


def example(length: int, prompt: int, *, first: int = 1) -> dict[str, list[int]]:
    ids = list(range(first, first + length))
    return {"input_ids": ids, "labels": [IGNORE_INDEX] * prompt + ids[prompt:]}


def test_rows_hold_whole_examples_within_the_limit() -> None:
    examples = [example(n, 2, first=100 * i) for i, n in enumerate([7, 3, 5, 2, 8, 4])]
    rows = pack_examples(examples, max_length=10)
    assert all(len(row["input_ids"]) <= 10 for row in rows)
    assert len(rows) == 3  # 29 tokens, first-fit decreasing: [8, 2], [7, 3], [5, 4]
    assert sorted(t for row in rows for t in row["input_ids"]) == sorted(
        t for e in examples for t in e["input_ids"]
    )
    for row in rows:
        starts = [i for i, p in enumerate(row["position_ids"]) if p == 0]
        assert starts[0] == 0
        assert all(row["labels"][i] == IGNORE_INDEX for i in starts)  # never across examples


def test_a_too_long_example_is_cut_to_a_row_of_its_own() -> None:
    rows = pack_examples([example(15, 3), example(4, 1)], max_length=10)
    assert [len(r["input_ids"]) for r in rows] == [10, 4]


def test_collator_pads_as_a_separate_sequence() -> None:
    batch = PackedCollator(pad_token_id=0)(
        [
            {"input_ids": [5, 6, 7], "labels": [-100, 6, 7], "position_ids": [0, 1, 0]},
            {"input_ids": [8], "labels": [-100], "position_ids": [0]},
        ]
    )
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["labels"].tolist() == [[-100, 6, 7], [-100, -100, -100]]
    assert batch["position_ids"].tolist() == [[0, 1, 0], [0, 0, 1]]
    assert "attention_mask" not in batch


def test_packing_removes_most_padding() -> None:
    examples = [example(n, 1) for n in [60, 8, 12, 9, 50, 7, 11, 10] * 4]
    padded = padding_share(examples, batch_size=4)
    packed = padding_share(pack_examples(examples, max_length=64), batch_size=4)
    assert packed < padded / 2


def test_padding_share_to_a_fixed_width() -> None:
    rows = [example(n, 1) for n in (10, 30)]
    assert padding_share(rows, batch_size=2) == 20 / 60
    assert padding_share(rows, batch_size=2, width=40) == 40 / 80


@pytest.mark.slow
def test_packed_logits_equal_each_example_alone(base_model_dir: Path) -> None:
    """The real model sees each packed example exactly as if it were alone."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32).eval()
    a, b = [101, 2054, 2003, 1996, 3007], [7592, 2088, 999]
    rows = pack_examples(
        [
            example(0, 0) | {"input_ids": a, "labels": a},
            example(0, 0) | {"input_ids": b, "labels": b},
        ],
        max_length=16,
    )
    (row,) = rows
    batch = PackedCollator(pad_token_id=0)([row])
    with torch.no_grad():
        # As in training: no KV cache (a cache turns packed-sequence masking off).
        packed = model(
            input_ids=batch["input_ids"], position_ids=batch["position_ids"], use_cache=False
        ).logits[0]
        alone = {tuple(ids): model(input_ids=torch.tensor([ids])).logits[0] for ids in (a, b)}
    offset = 0
    for start in [i for i, p in enumerate(row["position_ids"]) if p == 0]:
        ids = row["input_ids"][start : start + len(a if row["input_ids"][start] == a[0] else b)]
        reference = alone[tuple(ids)]
        assert torch.allclose(packed[start : start + len(ids)], reference, atol=1e-4)
        offset += len(ids)
    assert offset == len(a) + len(b)
    # Without restarting positions the second example would see the first: logits differ.
    with torch.no_grad():
        unpacked = model(input_ids=batch["input_ids"], use_cache=False).logits[0]
    second = [i for i, p in enumerate(row["position_ids"]) if p == 0][1]
    assert not torch.allclose(unpacked[second:], packed[second:], atol=1e-3)
