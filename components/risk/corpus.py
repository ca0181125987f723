"""Residual risk of a whole corpus, each conversation scored by a source that can score it.

A corpus may be labelled in part: the embedded corpus carries ground-truth PI spans,
DialogSum's dialogues (or a user's unlabelled conversations) carry none. With
``risk.source: auto`` a conversation with ground-truth spans is scored by them and one
without by the automatic estimate, never as zero; ``ground_truth`` insists that every
conversation is labelled; ``estimate`` scores every one by the estimate. The estimate is
computed for every conversation whatever the source, and its agreement with ground truth is
measured on the labelled ones. The estimate reads each conversation with its surrogates back
to their placeholders (``anonymize.replacement: surrogate``): a realistic fake name is no
leak, while a real surname left beside one (``[PERSON_NAME_1] Halpert``) still is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from components.anonymize import placeholder_view
from components.core.corpus import Conversation
from components.core.errors import InputError
from components.risk.estimate import (
    Agreement,
    estimate_items,
    score_agreement,
    suspected_leaks,
)
from components.risk.scoring import (
    RISK_COLUMNS,
    ResidualItem,
    RiskPolicy,
    leaked_fragments,
    residual_items,
    risk_row,
    summarize_risk,
    summarize_scores,
)

GROUND_TRUTH, ESTIMATE, MIXED = "ground_truth", "estimate", "mixed"
SOURCE_COLUMN = "source"


def conversation_sources(
    conversations: Sequence[Conversation], wanted: str, *, where: str
) -> dict[str, str]:
    """Conversation id → the source that scores it (``ground_truth`` or ``estimate``).

    A conversation counts as labelled when it carries at least one ground-truth PI span.

    Raises:
        InputError: ``wanted`` is ``ground_truth`` and some conversation is unlabelled
            (``where`` names the corpus).
    """
    if wanted == ESTIMATE:
        return {c.id: ESTIMATE for c in conversations}
    unlabelled = [c.id for c in conversations if not c.pi]
    if wanted == GROUND_TRUTH and unlabelled:
        raise InputError(
            f"{where}: risk.source is ground_truth but {len(unlabelled)} of "
            f"{len(conversations)} conversations carry no labelled PI ('pi'), the first "
            f"{unlabelled[0]}; use risk.source: auto (the estimate scores those) or estimate"
        )
    return {c.id: GROUND_TRUTH if c.pi else ESTIMATE for c in conversations}


@dataclass
class CorpusRisk:
    """Per-conversation risk tables and the distinct items behind them (no text)."""

    table: pd.DataFrame  # the gate's: each conversation at its own source, in a source column
    estimate_table: pd.DataFrame  # every conversation by the estimate
    truth_table: pd.DataFrame  # the labelled conversations by ground truth
    items: list[ResidualItem] = field(default_factory=list)
    agreement: Agreement = field(default_factory=Agreement)

    def to_metrics(self) -> dict[str, Any]:
        """Corpus statistics of the gate's table, how many conversations each source
        scored, the estimate over the whole corpus, and its agreement with ground truth."""
        counts = self.table[SOURCE_COLUMN].value_counts()
        n_truth, n_estimate = int(counts.get(GROUND_TRUTH, 0)), int(counts.get(ESTIMATE, 0))
        source = GROUND_TRUTH if not n_estimate else ESTIMATE if not n_truth else MIXED
        metrics: dict[str, Any] = {
            **summarize_risk(self.table[RISK_COLUMNS]),
            "source": source,
            "n_ground_truth": n_truth,
            "n_estimate": n_estimate,
            "by_source": {
                str(name): summarize_scores(group["score"])
                for name, group in self.table.groupby(SOURCE_COLUMN, sort=True)
            },
            "estimate": summarize_risk(self.estimate_table),
        }
        if len(self.truth_table):
            metrics["estimator_agreement"] = {
                **self.agreement.to_metrics(),
                **score_agreement(self.truth_table, self.estimate_table),
            }
        return metrics


class Estimator(Protocol):
    """Runs the automatic estimate over anonymized views, in order."""

    def __call__(
        self, views: Sequence[Conversation], policy: RiskPolicy, *, salt: str
    ) -> list[list[ResidualItem]]: ...


def estimate_all(
    views: Sequence[Conversation], policy: RiskPolicy, *, salt: str
) -> list[list[ResidualItem]]:
    """The automatic estimate of each anonymized view, in this process."""
    return [estimate_items(view, policy, salt=salt) for view in views]


def score_corpus(
    raw: Sequence[Conversation],
    anonymized: Mapping[str, Conversation],
    *,
    replacements: Mapping[str, Sequence[Mapping[str, Any]]],
    policy: RiskPolicy,
    salt: str,
    sources: Mapping[str, str],
    estimate: Estimator | None = None,
) -> CorpusRisk:
    """Score every raw conversation against its anonymized version.

    Args:
        anonymized: conversation id → anonymized conversation (every raw id present).
        replacements: conversation id → the anonymize stage's span records (they locate
            the surrogates the estimate must not flag).
        sources: conversation id → source, from :func:`conversation_sources`.
        estimate: runs the automatic estimate over the anonymized views, in order
            (:func:`estimate_all` in this process by default; a Dask cluster's in
            ``components/risk/distributed.py``).
    """
    rows, estimate_rows, truth_rows = [], [], []
    items: list[ResidualItem] = []
    agreement = Agreement()
    views = [placeholder_view(anonymized[c.id], replacements.get(c.id, [])) for c in raw]
    estimates = (estimate or estimate_all)(views, policy, salt=salt)
    for conversation, clear, estimated in zip(raw, views, estimates, strict=True):
        replaced = replacements.get(conversation.id, [])
        estimate_rows.append(risk_row(conversation, estimated))
        items += estimated
        chosen = estimated
        if conversation.pi:
            truth = residual_items(conversation, replaced, scores=policy)
            truth_rows.append(risk_row(conversation, truth))
            items += truth
            agreement.add(leaked_fragments(conversation, replaced), suspected_leaks(clear))
            chosen = truth if sources[conversation.id] == GROUND_TRUTH else estimated
        rows.append({**risk_row(conversation, chosen), SOURCE_COLUMN: sources[conversation.id]})
    return CorpusRisk(
        pd.DataFrame(rows, columns=[*RISK_COLUMNS, SOURCE_COLUMN]),
        pd.DataFrame(estimate_rows, columns=RISK_COLUMNS),
        pd.DataFrame(truth_rows, columns=RISK_COLUMNS),
        items,
        agreement,
    )
