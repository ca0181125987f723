"""The risk stage's automatic estimate on a real Dask cluster: the same tables and items as
in one process."""

from __future__ import annotations

import pytest

from components.ingest.generate import generate_corpus
from components.risk.config import DEFAULT_RISK_SCORES
from components.risk.corpus import conversation_sources, score_corpus
from components.risk.distributed import cluster_estimator
from components.risk.scoring import RiskPolicy


@pytest.mark.slow
def test_the_estimate_on_a_local_cluster_scores_what_one_process_scores() -> None:
    raw = generate_corpus(40, seed=5)
    # Scored against itself, as if nothing had been anonymized: many findings to agree on.
    anonymized = {c.id: c for c in raw}
    sources = conversation_sources(raw, "estimate", where="corpus")
    policy = RiskPolicy(DEFAULT_RISK_SCORES, 3)
    one = score_corpus(
        raw, anonymized, replacements={}, policy=policy, salt="salt", sources=sources
    )
    many = score_corpus(
        raw,
        anonymized,
        replacements={},
        policy=policy,
        salt="salt",
        sources=sources,
        estimate=cluster_estimator("local", 2, timeout_s=30),
    )
    assert len(one.items) > 40  # the generated calls' names, numbers and addresses
    assert many.items == one.items
    assert many.table.equals(one.table) and many.estimate_table.equals(one.estimate_table)
