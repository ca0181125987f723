"""The risk stage: score what survived anonymizing in every conversation, by ground truth
where the corpus is labelled (``risk.source: auto``), else by the automatic second-opinion
scan, which also runs on every conversation; the gate reads the chosen scores."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from components.core import paths
from components.core.atomic import atomic_path
from components.core.corpus import load_corpus
from components.core.errors import InputError
from components.core.jsonio import (
    jsonl_by_key,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)
from components.core.lineage import CORPUS_KEY, sha256_file
from components.core.salt import read_salt
from components.core.stage import Metrics, StageContext
from components.risk.config import RiskConfig
from components.risk.corpus import SOURCE_COLUMN, Estimator, conversation_sources, score_corpus
from components.risk.distributed import cluster_estimator
from components.risk.report import risk_histogram_png, risk_report_html, risk_table_markdown
from components.risk.scoring import ResidualItem, RiskPolicy


def run(config: RiskConfig, context: StageContext) -> Metrics:
    threshold: float = context.setting("gate.threshold")
    policy = RiskPolicy(config.scores, config.default_score)
    raw_file, corpus_file = context.input(paths.RAW_CORPUS), context.input(paths.ANON_CORPUS)
    with context.mlflow_run():
        salt = read_salt(context.input(paths.SALT))
        by_conversation = jsonl_by_key(context.input(paths.ANON_SPANS), "conversation_id")
        raw = load_corpus(raw_file)
        anonymized = {c.id: c for c in load_corpus(corpus_file)}
        missing = next((c.id for c in raw if c.id not in anonymized), None)
        if missing is not None:
            raise InputError(f"{corpus_file}: conversation {missing} missing")
        sources = conversation_sources(raw, config.source, where=str(raw_file))
        scored = score_corpus(
            raw,
            anonymized,
            replacements=by_conversation,
            policy=policy,
            salt=salt,
            sources=sources,
            estimate=_estimator(context),
        )
        # The gate checks that the table it judges was computed on the corpus on disk.
        summary = {**scored.to_metrics(), CORPUS_KEY: sha256_file(corpus_file)}
        metrics = headline(summary)
        artifacts = _write_outputs(
            scored.table,
            scored.estimate_table,
            items=scored.items,
            metrics=summary,
            threshold=threshold,
            output=context.output,
        )
        context.record(metrics, artifacts=artifacts)
    return metrics


def _estimator(context: StageContext) -> Estimator | None:
    """The automatic estimate on ``anonymize.cluster`` when one is set (the data stages
    share it); None runs it in this process."""
    cluster: str | None = context.setting("anonymize.cluster")
    if cluster is None:
        return None

    workers: int = context.setting("anonymize.workers")
    timeout_s: float = context.setting("anonymize.cluster_timeout_s")
    tls = context.setting("anonymize.cluster_tls").files_for(cluster, context.base_dir)
    return cluster_estimator(cluster, workers, timeout_s=timeout_s, tls=tls)


def headline(summary: Metrics) -> Metrics:
    """What metrics/risk.json keeps of the full summary, so `dvc metrics show` stays
    readable: all but the statistics of each source and the estimate's by context, which
    data/risk/breakdown.json holds with the rest."""
    metrics = {key: value for key, value in summary.items() if key != "by_source"}
    if isinstance(summary.get("estimate"), dict):
        estimate = summary["estimate"].items()
        metrics["estimate"] = {key: value for key, value in estimate if key != "by_context"}
    return metrics


def _write_outputs(
    table: pd.DataFrame,
    estimate_table: pd.DataFrame,
    *,
    items: Sequence[ResidualItem],
    metrics: Metrics,
    threshold: float,
    output: Callable[[Path], Path],
) -> list[Path]:
    """Write the risk folder's files (each resolved by ``output``: the stage's
    ``StageContext.output``) and return them."""
    png = risk_histogram_png(
        [int(v) for v in table["score"]],
        threshold,
        mean=metrics["mean"],
        std=metrics["std"],
        sources=[str(v) for v in table[SOURCE_COLUMN]],
    )
    markdown = risk_table_markdown(metrics, threshold)
    html = risk_report_html(
        metrics, threshold, histogram_png=png, title=f"Residual risk ({metrics['source']})"
    )
    write_text_atomic(output(paths.RISK_TABLE), table.to_csv(index=False))
    write_text_atomic(output(paths.RISK_ESTIMATE_TABLE), estimate_table.to_csv(index=False))
    write_jsonl_atomic(output(paths.RISK_ITEMS), [item.to_record() for item in items])
    write_text_atomic(output(paths.RISK_REPORT_MD), markdown)
    write_text_atomic(output(paths.RISK_REPORT_HTML), html)
    with atomic_path(output(paths.RISK_HISTOGRAM)) as tmp:
        tmp.write_bytes(png)
    write_json_atomic(output(paths.RISK_BREAKDOWN), metrics)
    return [
        output(path)
        for path in (
            paths.RISK_BREAKDOWN,
            paths.RISK_TABLE,
            paths.RISK_ESTIMATE_TABLE,
            paths.RISK_ITEMS,
            paths.RISK_REPORT_MD,
            paths.RISK_REPORT_HTML,
            paths.RISK_HISTOGRAM,
        )
    ]


def summary(metrics: Metrics) -> str:
    """The line ``veiltune risk`` prints: the statistic the gate judges, and its parts."""
    return (
        f"mu+sigma {metrics['mu_plus_sigma']:g} (mean {metrics['mean']:g}, std "
        f"{metrics['std']:g}, max {metrics['max']:g}) over {metrics['count']} conversations, "
        f"scored by {metrics['source']}"
    )
