"""The headline results of the last pipeline run in this checkout (``make run`` or
``dvc repro``): the gate's verdict, every audit's, the adapter's utility beside the base
model's, and what the registry decided, copied from ``metrics/`` (counts, scores and hashes,
never text) into a results file, so the README and the results page show them.

    make run && python -m benchmarks.default_run

Writes benchmarks/results/default_run.json; run it again after each pipeline run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.results import REPO, write_result
from components.core import paths
from components.core.audit_record import with_details

METRICS = REPO / "metrics"
STAGES_READ = ("gate", "audit", "evaluate", "register", "train", "ingest")


def headline_figures(metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a reader of the default run wants first, from the stages' metrics files."""
    gate, audit, evaluate = metrics["gate"], metrics["audit"], metrics["evaluate"]
    return {
        "conversations": metrics["ingest"].get("n_conversations"),
        "train_steps": metrics["train"].get("steps"),
        "gate": {key: gate.get(key) for key in ("passed", "mu_plus_sigma", "threshold")},
        "audit_passed": audit.get("passed"),
        "audits": {
            name: {"passed": result.get("passed"), **result.get("figures", {})}
            for name, result in audit.get("audits", {}).items()
        },
        "adapter": evaluate.get("adapter", {}),
        "base": evaluate.get("base", {}),
        "register": {
            key: metrics["register"].get(key)
            for key in ("model_version", "champion", "decision_reason")
        },
    }


def main() -> int:
    missing = [s for s in STAGES_READ if not (METRICS / f"{s}.json").is_file()]
    if missing:
        names = ", ".join(f"metrics/{s}.json" for s in missing)
        print(f"benchmarks: {names} missing: run `make run` first", file=sys.stderr)
        return 1
    metrics = {s: _read(METRICS / f"{s}.json") for s in STAGES_READ}
    details = REPO / paths.AUDIT_DETAILS  # the audits' per-item figures (per canary, ...)
    if details.is_file():
        metrics["audit"] = with_details(metrics["audit"], _read(details))
    figures = headline_figures(metrics)
    write_result("default_run", figures)
    print(json.dumps(figures, indent=2))
    return 0


def _read(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return record


if __name__ == "__main__":
    sys.exit(main())
