"""The packing comparison's mechanism on rows small enough to read: both packers keep every
token, and only TRL's trains an example's first token on the example before it."""

from __future__ import annotations

from benchmarks.packing import compare


def test_both_keep_every_token_and_only_trl_trains_across_a_boundary() -> None:
    rows = [{"input_ids": list(range(n)), "labels": [-100, *range(1, n)]} for n in (5, 2, 3, 1)]
    # the one-token example's label is its token: a target wherever it lands
    rows[3]["labels"] = [7]
    result = compare(rows, 6)
    assert result["tokens"] == 11
    for name in ("veiltune", "trl_bfd"):
        assert result[name]["tokens_kept"] == 11 and result[name]["rows"] == 2
    assert result["veiltune"]["cross_example_labels"] == 0
    assert result["trl_bfd"]["cross_example_labels"] == 1
