"""Streaming anonymization: several worker processes give exactly the one-process output."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.anonymize.config import AnonymizeConfig
from components.anonymize.stream import AnonymizationTally, anonymize_stream
from components.ingest.generate import generate_corpus

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_workers_give_the_same_output_in_the_same_order() -> None:
    corpus = generate_corpus(24, seed=5)
    config = AnonymizeConfig(batch_size=4, replacement="placeholder")
    single = [
        (o.id, a.to_record(), [r.to_record() for r in rs])
        for o, (a, rs) in anonymize_stream(corpus, config, base_dir=REPO, workers=1)
    ]
    double = [
        (o.id, a.to_record(), [r.to_record() for r in rs])
        for o, (a, rs) in anonymize_stream(iter(corpus), config, base_dir=REPO, workers=2)
    ]
    assert [i for i, _, _ in single] == [c.id for c in corpus]
    assert double == single


def test_tally_counts_without_keeping_text() -> None:
    tally = AnonymizationTally()
    (conversation,) = generate_corpus(1, seed=1)
    tally.add(conversation, [])
    metrics = tally.to_metrics(seconds=2.0, workers=1)
    assert metrics["n_conversations"] == 1 and metrics["n_replacements"] == 0
    assert metrics["chars_per_second"] > 0
