"""Progress bars of the long loops: on stderr, with their total."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.anonymize.stage import count_records
from components.core.progress import counted


def test_counted_yields_every_item_and_shows_the_total(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(counted(["a", "b", "c"], "audit canary", unit="canaries")) == ["a", "b", "c"]
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "audit canary" in captured.err and "3/3" in captured.err


def test_a_bar_not_shown_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(counted([1, 2], "", unit="texts", shown=False)) == [1, 2]
    assert capsys.readouterr().err == ""


def test_anonymize_counts_the_records_of_its_input_for_its_total(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a"}\n\n{"id": "b"}\n   \n{"id": "c"}')
    assert count_records(corpus) == 3
    assert count_records(tmp_path / "missing.jsonl") is None
