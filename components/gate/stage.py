"""The gate stage: a Great Expectations suite over the risk table refuses the corpus unless
mean + std of residual risk < ``gate.threshold``; the verdict is bound to the corpus and the
risk table it judged (``components.gate.binding``)."""

from __future__ import annotations

import json

from components.core import paths, tracking
from components.core.errors import GateFailed
from components.core.jsonio import write_json_atomic
from components.core.stage import Metrics, StageContext, log_stage, read_metrics
from components.gate.binding import gate_digests
from components.gate.config import GateConfig
from components.gate.suite import validate_risk_table
from components.risk import read_risk_table


def run(config: GateConfig, context: StageContext) -> Metrics:
    import mlflow

    risk_file = paths.metrics_file("risk")
    digests = gate_digests(
        read_metrics("risk"), paths.ANON_CORPUS, paths.RISK_TABLE, str(risk_file)
    )
    with tracking.stage_run("gate", context.experiment):
        table = read_risk_table(paths.RISK_TABLE)
        splits = json.loads(paths.SPLITS.read_text(encoding="utf-8"))
        expected_ids = [*splits["train"], *splits["heldout"]]
        result, validation = validate_risk_table(
            table,
            config.threshold,
            known_contexts=config.known_contexts,
            expected_ids=expected_ids,
            per_context=config.per_context,
            data_docs_dir=paths.GATE_DATA_DOCS,
        )
        write_json_atomic(paths.GATE_RESULT, validation)
        metrics = {**result.to_metrics(), **digests}
        write_json_atomic(paths.metrics_file("gate"), metrics)
        log_stage("gate", config, metrics, [paths.metrics_file("gate"), paths.GATE_RESULT])
        mlflow.log_artifacts(str(paths.GATE_DATA_DOCS), artifact_path="data_docs")
    if not result.passed:
        raise GateFailed(f"gate refused the corpus: {result.failure_message()}")
    return metrics
