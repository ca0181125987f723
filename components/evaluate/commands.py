"""The evaluate stage's report across runs: utility of every variant DVC experiments hold."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from components.core import paths, tracking
from components.core.dvc_cli import dvc_command
from components.core.errors import InputError
from components.core.jsonio import atomic_path, write_json_atomic, write_text_atomic
from components.core.stage import Metrics, StageContext
from components.evaluate.report import (
    collect_variants,
    comparison,
    report_chart_png,
    report_markdown,
)


def utility_report(context: StageContext, output_dir: Path) -> Metrics:
    """Tabulate the variants' evaluations across DVC experiments; log the report to MLflow."""
    import mlflow

    run = subprocess.run(
        dvc_command("exp", "show", "--json"), capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise InputError(f"dvc exp show failed: {run.stderr.strip()[-500:]}")
    variants = collect_variants(json.loads(run.stdout))
    if not variants:
        raise InputError(
            f"no run has {paths.metrics_file('evaluate')} yet: run the pipeline, then "
            "`dvc exp run -S train.corpus=raw` and `-S train.corpus=masked`"
        )
    verdict = comparison(variants)
    report = {"variants": variants, "comparison": verdict}
    write_json_atomic(output_dir / "utility.json", report)
    write_text_atomic(output_dir / "utility.md", report_markdown(variants, verdict))
    with atomic_path(output_dir / "utility.png") as tmp:
        tmp.write_bytes(report_chart_png(variants))
    experiment_id = tracking.configure_tracking(context.experiment)
    with mlflow.start_run(experiment_id=experiment_id, run_name="utility-report"):
        mlflow.set_tag("veiltune.kind", "utility-report")
        for variant, entry in variants.items():
            tracking.log_numeric_metrics(entry["metrics"], prefix=variant)
        mlflow.log_artifacts(str(output_dir), artifact_path="utility_report")
    return {"variants": sorted(variants), "comparison": verdict, "output": str(output_dir)}
