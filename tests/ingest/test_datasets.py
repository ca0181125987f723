"""The datasets of the corpus: counted by ingest, named with their source and licence."""

from __future__ import annotations

from pathlib import Path

from components.ingest import DATASET, MAIN, corpus_datasets
from components.ingest.config import DialogSumConfig, IngestConfig
from components.ingest.datasets import (
    DIALOGSUM_LICENCE,
    GENERATED_LICENCE,
    USER_LICENCE,
    mixed_in_statement,
)
from components.ingest.sources import corpus_metrics, ingest_corpus, split_ids
from tests.conftest import DIALOGSUM_SAMPLE, REPO_ROOT


def test_ingest_counts_the_conversations_of_each_dataset() -> None:
    config = IngestConfig(n_conversations=6, dialogsum=DialogSumConfig(max_dialogues=4))
    conversations = ingest_corpus(config, REPO_ROOT)
    splits = split_ids([c.id for c in conversations], 0.2, seed=1)

    metrics = corpus_metrics(conversations, splits)

    assert metrics["by_dataset"] == {DATASET: 4, MAIN: 6}
    off = ingest_corpus(IngestConfig(n_conversations=6, dialogsum=DialogSumConfig(None)), REPO_ROOT)
    assert corpus_metrics(off, split_ids([c.id for c in off], 0.2, seed=1))["by_dataset"] == {
        MAIN: 6
    }


def test_ingest_records_the_public_datasets_it_mixed_in_with_their_licence(
    tmp_path: Path,
) -> None:
    """``public_datasets`` of ``metrics/ingest.json``: DialogSum with its licence when it was
    mixed in, nothing when a user's corpus was ingested without asking for it."""
    (tmp_path / "mine.jsonl").write_text('{"id": "u1", "text": "hello"}\n')
    recorded = {}
    for append in ("auto", "always"):
        dialogsum = DialogSumConfig(str(DIALOGSUM_SAMPLE), 2, append)
        config = IngestConfig(corpus_path="mine.jsonl", dialogsum=dialogsum)
        conversations = ingest_corpus(config, tmp_path)
        splits = split_ids([c.id for c in conversations], 0.2, seed=1)
        recorded[append] = corpus_metrics(conversations, splits)["public_datasets"]

    assert recorded == {
        "auto": {},
        "always": {DATASET: "CC BY-NC-SA 4.0, non-commercial use only"},
    }


def test_the_statement_names_each_public_dataset_mixed_in_or_says_none() -> None:
    ingest = {"corpus_path": "calls.jsonl"}
    assert mixed_in_statement(corpus_datasets(ingest, {MAIN: 6})) == (
        "Public datasets mixed into the corpus: none."
    )
    assert mixed_in_statement(corpus_datasets(ingest, {MAIN: 6, DATASET: 4})) == (
        "Public datasets mixed into the corpus: DialogSum (4 conversations; CC BY-NC-SA 4.0, "
        "non-commercial use only)."
    )


def test_the_counted_datasets_are_named_with_source_and_licence() -> None:
    ingest = {"seed": 13, "dialogsum": {"path": "dialogsum.jsonl", "max_dialogues": 4}}

    main, dialogsum = corpus_datasets(ingest, {MAIN: 6, DATASET: 4})

    assert (main.name, main.n_conversations, main.licence) == (MAIN, 6, GENERATED_LICENCE)
    assert "generated" in main.title and "ingest.seed 13" in main.source
    assert (dialogsum.name, dialogsum.n_conversations) == (DATASET, 4)
    assert dialogsum.licence == DIALOGSUM_LICENCE and "CC BY-NC-SA 4.0" in dialogsum.licence
    assert "dialogsum.jsonl, its first 4 records" in dialogsum.source
    assert [d.name for d in corpus_datasets(ingest, {MAIN: 6})] == [MAIN]


def test_uncounted_datasets_come_from_the_params() -> None:
    """Metrics written before ingest counted datasets: the params say which there are."""
    assert [d.name for d in corpus_datasets({}, None)] == [MAIN, DATASET]  # the defaults
    (user,) = corpus_datasets({"corpus_path": "calls.jsonl", "dialogsum": {"path": None}}, None)
    assert user.licence == USER_LICENCE and "calls.jsonl" in user.source
    assert user.n_conversations is None
