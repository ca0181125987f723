"""The review stage: a stratified sample of anonymized conversations for reviewers (JSONL
to annotate, HTML to read). The sample is anonymized text that may hold what the anonymizer
missed: it stays a DVC output and is never logged to MLflow; only its counts are."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from components.anonymize import placeholder_view
from components.core import paths
from components.core.atomic import atomic_folder, check_output_folder
from components.core.corpus import Conversation, load_corpus
from components.core.jsonio import (
    jsonl_by_key,
    write_jsonl_atomic,
    write_text_atomic,
)
from components.core.stage import Metrics, StageContext
from components.review.config import ReviewConfig
from components.review.page import review_page_html
from components.review.sample import review_sample
from components.risk import read_risk_table

REVIEW_KIND = "review"  # the sample folder's marker: only a sample replaces a sample


def run(config: ReviewConfig, context: StageContext, *, output_dir: Path | None = None) -> Metrics:
    """The review sample, written to ``output_dir`` (default: the stage's own folder,
    ``data/review``)."""
    threshold: float = context.setting("gate.threshold")
    output_dir = context.output(paths.REVIEW_DIR) if output_dir is None else output_dir
    check_output_folder(output_dir, REVIEW_KIND)
    with context.mlflow_run():
        table = read_risk_table(context.input(paths.RISK_TABLE))
        scores = dict(zip(table["conversation_id"], table["score"].astype(int), strict=True))
        # Reviewers look for what the anonymizer missed: they see placeholders where it
        # put surrogates, so a realistic surrogate is never mistaken for a leak.
        replaced = jsonl_by_key(context.input(paths.ANON_SPANS), "conversation_id")
        corpus = load_corpus(context.input(paths.ANON_CORPUS))
        conversations = [placeholder_view(c, replaced.get(c.id, [])) for c in corpus]
        metrics = write_review_sample(
            conversations, scores, config=config, threshold=threshold, output_dir=output_dir
        )
        context.record(metrics)
    return metrics


def write_review_sample(
    conversations: Sequence[Conversation],
    scores: Mapping[str, int],
    *,
    config: ReviewConfig,
    threshold: float,
    output_dir: Path,
) -> Metrics:
    """Write the sample to the folder ``output_dir`` (owner-only: anonymized text may hold
    what the anonymizer missed), replacing an earlier sample whole; return its counts by
    risk band and context."""
    records = review_sample(
        conversations, scores, size=config.sample_size, threshold=threshold, seed=config.seed
    )
    with atomic_folder(output_dir, REVIEW_KIND, private=True) as tmp:
        write_jsonl_atomic(tmp / "review_sample.jsonl", records)
        write_text_atomic(tmp / "review.html", review_page_html(records))
    bands = Counter(str(record["risk_band"]) for record in records)
    contexts = Counter(str(record["context"]) for record in records)
    return {"sampled": len(records), "by_band": dict(bands), "by_context": dict(contexts)}


def summary(metrics: Metrics) -> str:
    """The line ``veiltune review export`` prints: the sample's size by risk band."""
    bands = ", ".join(f"{band} {n}" for band, n in metrics["by_band"].items())
    return f"{metrics['sampled']} conversations sampled for human review ({bands})"
