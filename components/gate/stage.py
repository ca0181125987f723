"""The gate stage: a Great Expectations suite over the risk table refuses the corpus unless
mean + std of residual risk < ``gate.threshold``; the verdict is bound to the corpus and the
risk table it judged (``components.gate.binding``). The result is written as GX's JSON and
as veiltune's offline page of it (``components.gate.page``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.core import paths
from components.core.errors import GateFailed
from components.core.jsonio import write_json_atomic, write_text_atomic
from components.core.stage import Metrics, StageContext
from components.gate.binding import gate_digests
from components.gate.config import GateConfig
from components.gate.page import validation_page_html
from components.gate.result import STATISTIC
from components.gate.suite import validate_risk_table
from components.risk import read_risk_table


def run(config: GateConfig, context: StageContext) -> Metrics:
    corpus, table_file = context.input(paths.ANON_CORPUS), context.input(paths.RISK_TABLE)
    risk_file = paths.metrics_file("risk")
    digests = gate_digests(
        context.metrics("risk"), corpus, risk_table=table_file, risk_source=str(risk_file)
    )
    result_file, page_file = context.output(paths.GATE_RESULT), context.output(paths.GATE_PAGE)
    with context.mlflow_run():
        table = read_risk_table(table_file)
        splits = json.loads(context.input(paths.SPLITS).read_text(encoding="utf-8"))
        expected_ids = [*splits["train"], *splits["heldout"]]
        result, validation = validate_risk_table(
            table,
            config.threshold,
            known_contexts=config.known_contexts,
            expected_ids=expected_ids,
            per_context=config.per_context,
        )
        write_validation(validation, result_file, page_file=page_file)
        metrics = {**result.to_metrics(), **digests}
        context.record(metrics, artifacts=[result_file, page_file])
    if not result.passed:
        raise GateFailed(f"gate refused the corpus: {result.failure_message()}")
    return metrics


def write_validation(validation: Mapping[str, Any], result_file: Path, *, page_file: Path) -> None:
    """Write the GX validation result as JSON and as veiltune's offline page of it, and remove
    the GX Data Docs an earlier veiltune wrote beside them (they load their assets from CDNs;
    ``veiltune gate`` run outside ``dvc repro`` would leave them there)."""
    write_json_atomic(result_file, validation)
    write_text_atomic(page_file, validation_page_html(validation))
    legacy = result_file.parent / "data_docs"
    if legacy.is_dir() and not legacy.is_symlink():
        shutil.rmtree(legacy)


def summary(metrics: Metrics) -> str:
    """The line ``veiltune gate`` prints: its verdict and the statistic behind it."""
    statistic = metrics[STATISTIC]
    shown = "undefined" if statistic is None else f"{statistic:g}"
    verdict, sign = ("passed", "<") if metrics["passed"] else ("refused", ">=")
    return (
        f"{verdict} (mu+sigma {shown} {sign} {metrics['threshold']:g}, "
        f"{metrics['n_conversations']} conversations)"
    )
