"""The risk stage's automatic estimate on a Dask cluster (``anonymize.cluster``, which the
data stages share): the anonymized views in shares, each estimated on a worker, in order.

The estimate is patterns and word lists, about 260 conversations a second in one process
here (measured with other work on the cores): not worth a cluster for a corpus one process
scores in minutes, but many anonymize workers produce conversations faster than that.
Tasks carry the anonymized views (placeholders in place of surrogates) and the salt that
hashes findings, never raw text; the stage's ground-truth scoring, which reads the raw
corpus, stays on the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.core.cluster import TlsFiles, run_shares
from components.core.corpus import Conversation
from components.risk.corpus import Estimator
from components.risk.estimate import estimate_items
from components.risk.scoring import ResidualItem, RiskPolicy


def cluster_estimator(
    cluster: str, workers: int, *, timeout_s: float, tls: TlsFiles | None = None
) -> Estimator:
    """An estimator that runs on ``cluster`` (``local`` or a scheduler address, ``tls://``
    with ``tls``)."""

    def estimate(
        views: Sequence[Conversation], policy: RiskPolicy, *, salt: str
    ) -> list[list[ResidualItem]]:
        arguments = [policy, salt]
        results = run_shares(
            cluster,
            workers,
            timeout_s=timeout_s,
            task=estimate_part,
            items=views,
            arguments=arguments,
            description="estimate",
            tls=tls,
        )
        return [items for result in results for items in result["items"]]

    return estimate


def estimate_part(views: list[Conversation], policy: RiskPolicy, salt: str) -> dict[str, Any]:  # noqa: PLR0917 (run_parts calls task(part, *arguments))
    """A share of the estimate on a worker: each view's residual items, in order."""
    return {"n_records": len(views), "items": [estimate_items(v, policy, salt=salt) for v in views]}
