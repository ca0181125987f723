"""The team stack under load (docs/team.md): ``--clients`` clients at once against the MLflow
server of a stack started for the benchmark, each opening runs, logging metrics and
registering a version of one shared model, through the server's basic-auth app with the
pipeline's account. Throughput and latency (median, p95, worst) per kind of call.

    python -m benchmarks.team_load [--clients 20] [--rounds 5]

Clients are threads of this process, each with its own MLflow client; on a 2-core machine
they share its cores with the server and PostgreSQL, so the figures bound what one small
machine serves, not what a team's servers would.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.results import write_result

MODEL = "load-test-adapter"
CALLS = ("create_run", "log_batch", "create_model_version")


def client_work(uri: str, experiment: str, *, rounds: int, metrics: int) -> dict[str, list[float]]:
    """One client's rounds: a run, a batch of ``metrics`` metrics, a model version."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    seconds: dict[str, list[float]] = defaultdict(list)
    for round_ in range(rounds):
        started = time.perf_counter()
        run = client.create_run(experiment)
        seconds["create_run"].append(time.perf_counter() - started)
        batch = [Metric(f"m{i}", float(round_ + i), 0, round_) for i in range(metrics)]
        started = time.perf_counter()
        client.log_batch(run.info.run_id, metrics=batch)
        seconds["log_batch"].append(time.perf_counter() - started)
        started = time.perf_counter()
        client.create_model_version(MODEL, f"runs:/{run.info.run_id}/model", run.info.run_id)
        seconds["create_model_version"].append(time.perf_counter() - started)
    return seconds


def measure(uri: str, clients: int, *, rounds: int, metrics: int) -> dict[str, Any]:
    """Run ``clients`` clients at once against the server at ``uri``; their figures."""
    from mlflow import MlflowClient

    setup = MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = setup.create_experiment(f"load-{time.time_ns()}")
    if not setup.search_registered_models(f"name = '{MODEL}'"):
        setup.create_registered_model(MODEL)
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        done = list(
            pool.map(
                lambda _: client_work(uri, experiment, rounds=rounds, metrics=metrics),
                range(clients),
            )
        )
    wall = time.perf_counter() - started
    calls = {name: [s for d in done for s in d[name]] for name in CALLS}
    total = sum(len(v) for v in calls.values())
    return {
        "clients": clients,
        "rounds_per_client": rounds,
        "metrics_per_batch": metrics,
        "wall_s": round(wall, 2),
        "calls": total,
        "calls_per_s": round(total / wall, 1),
        "versions_registered": len(calls["create_model_version"]),
        "latency_ms": {name: _latency(values) for name, values in calls.items()},
    }


def _latency(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered) * 1000, 1),
        "p95": round(p95 * 1000, 1),
        "max": round(ordered[-1] * 1000, 1),
    }


def run(clients: int = 20, rounds: int = 5, *, metrics: int = 20) -> dict[str, Any]:
    """Start a stack in a temporary folder, measure it, stop it; the figures."""
    from veiltune.team import stack

    # PostgreSQL runs as `postgres` when this runs as root: a folder it can enter.
    parent = Path(tempfile.mkdtemp(prefix="veiltune-load-"))
    parent.chmod(0o711)
    folder = parent / "stack"
    try:
        state = stack.up(folder)
        os.environ["MLFLOW_TRACKING_USERNAME"] = "pipeline"
        os.environ["MLFLOW_TRACKING_PASSWORD"] = stack.credentials(folder)["pipeline"]
        figures = measure(state["mlflow_tracking_uri"], clients, rounds=rounds, metrics=metrics)
    finally:
        if (folder / stack.STATE_FILE).is_file():
            stack.down(folder)
        shutil.rmtree(parent, ignore_errors=True)
    return figures | {"stack": "`veiltune team up`: MLflow's basic-auth server on PostgreSQL"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5, help="runs and versions per client")
    parser.add_argument("--metrics", type=int, default=20, help="metrics per batch")
    args = parser.parse_args(argv)
    figures = run(args.clients, args.rounds, metrics=args.metrics)
    write_result("team_load", figures)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
