"""veiltune's packing against TRL's (``trl.pack_dataset``, best-fit decreasing) on the same
tokenized training examples: rows, padding in batches, time to pack, and what each does at
an example's boundary.

Both keep every example whole in one row (``train.max_seq_length`` already cut the longer
ones) and restart positions per example. The difference that matters for the loss: veiltune
never trains an example's first token on the example before it in the row (its label is
ignored); TRL's packed ``labels`` keep it, and leave the boundary to its own collator's
padding-free path. Counted here as ``cross_example_labels``::

    python -m benchmarks.packing
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.results import REPO, write_result

LENGTHS = (768, 2048)
BATCH_SIZES = (2, 16)


def run(conversations: int = 300, dialogues: int = 200) -> dict[str, Any]:
    from components.base_model.materialize import BUNDLED_SMOLLM2, materialize_base_model
    from components.ingest.config import DialogSumConfig
    from components.ingest.dialogsum import read_dialogsum
    from components.ingest.generate import generate_corpus
    from components.train.chat_tokens import tokenize_example
    from components.train.config import TrainConfig
    from components.train.lora import corpus_examples
    from components.train.session import seeded_tokenizer
    from components.train.tasks import label_options

    corpus = generate_corpus(conversations, 1)
    dialogsum = REPO / str(DialogSumConfig().path)
    if dialogsum.is_file():
        corpus += read_dialogsum(dialogsum, dialogues)
    figures: dict[str, Any] = {"conversations": len(corpus)}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        materialize_base_model(BUNDLED_SMOLLM2, base)
        tokenizer = seeded_tokenizer(base, 13)
        for length in LENGTHS:
            config = TrainConfig(max_seq_length=length, eval_fraction=0.0)
            examples = corpus_examples(corpus, config, options=label_options(corpus)).train
            rows = [tokenize_example(e, tokenizer, max_length=length) for e in examples]
            figures[f"max_seq_length_{length}"] = compare(rows, length)
    return figures


def compare(rows: list[dict[str, list[int]]], length: int) -> dict[str, Any]:
    """Both packers on ``rows``: their row counts, padding at each batch size, seconds, and
    the labels each trains across an example boundary."""
    from datasets import Dataset
    from trl import pack_dataset

    from components.train.packing import IGNORE_INDEX, pack_examples, padding_share

    started = time.perf_counter()
    ours = pack_examples(rows, length)
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    packed = pack_dataset(Dataset.from_list(rows), length, strategy="bfd")
    theirs = [dict(row) for row in packed]
    theirs_s = time.perf_counter() - started
    tokens = sum(len(row["input_ids"]) for row in rows)
    result: dict[str, Any] = {"examples": len(rows), "tokens": tokens}
    for name, packed_rows, seconds in (("veiltune", ours, ours_s), ("trl_bfd", theirs, theirs_s)):
        kept = sum(len(row["input_ids"]) for row in packed_rows)
        result[name] = {
            "rows": len(packed_rows),
            "tokens_kept": kept,
            "seconds": round(seconds, 3),
            **{
                f"padding_share_batch_{b}": round(padding_share(packed_rows, b, seed=13), 4)
                for b in BATCH_SIZES
            },
            "cross_example_labels": _cross_example_labels(packed_rows, IGNORE_INDEX),
        }
    return result


def _cross_example_labels(rows: list[dict[str, Any]], ignore: int) -> int:
    """Examples after the first of a row whose first token is a training target: learnt
    from the end of another example."""
    count = 0
    for row in rows:
        starts = _example_starts(row)
        count += sum(1 for start in starts[1:] if row["labels"][start] != ignore)
    return count


def _example_starts(row: dict[str, Any]) -> list[int]:
    if "position_ids" in row:
        return [i for i, position in enumerate(row["position_ids"]) if position == 0]
    starts, at = [], 0
    for size in row["seq_lengths"]:
        starts.append(at)
        at += size
    return starts


def main() -> int:
    figures = run()
    write_result("packing", figures)
    for length in LENGTHS:
        cell = figures[f"max_seq_length_{length}"]
        for name in ("veiltune", "trl_bfd"):
            row = cell[name]
            print(
                f"{length} {name}: {row['rows']} rows, padding {row['padding_share_batch_2']:.2%}"
                f" (batch 2), {row['seconds']} s, {row['cross_example_labels']} cross-example"
                " labels",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
