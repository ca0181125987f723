"""Two pipeline runs of one corpus side by side: each adapter's utility on the same held-out
conversations with its 95% bootstrap interval, and the paired difference, with each run's
gate and audit verdicts. For one params change measured whole (placeholders against
surrogates, say), where the utility profile's seeds do not fit the time.

    python -m benchmarks.paired_runs --name replacement_default \\
        --run placeholder=../a --run surrogate=../b [--metric summary.rouge1]

Each DIR is a checkout after `make run` (its data/evaluate/per_conversation.jsonl and
metrics/); the first run is the reference. Writes benchmarks/results/<name>.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from benchmarks.results import NOT_CODE, write_result
from components.evaluate.intervals import bootstrap_interval, paired_difference

METRICS = ("summary.rouge1", "action_items.rouge1", "purpose.accuracy", "outcome.accuracy")


def adapter_samples(run: Path, dataset: str = "main") -> dict[str, dict[str, tuple[float, float]]]:
    """Each metric's (score, 1) per held-out conversation the run's adapter was scored on."""
    samples: dict[str, dict[str, tuple[float, float]]] = {}
    path = run / "data" / "evaluate" / "per_conversation.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["model"] != "adapter" or row["dataset"] != dataset:
            continue
        for metric, score in row["scores"].items():
            samples.setdefault(metric, {})[row["id"]] = (float(score), 1.0)
    return samples


def verdicts(run: Path) -> dict[str, Any]:
    """What the run's params chose for replacement and training seed, and its gate's and
    audits' verdicts."""
    params = yaml.safe_load((run / "params.yaml").read_text(encoding="utf-8"))
    gate = json.loads((run / "metrics" / "gate.json").read_text(encoding="utf-8"))
    audit = json.loads((run / "metrics" / "audit.json").read_text(encoding="utf-8"))
    return {
        "commit": _commit(run),
        "replacement": params["anonymize"]["replacement"],
        "train_seed": params["train"]["seed"],
        "gate_mu_plus_sigma": round(gate["mu_plus_sigma"], 4),
        "gate_passed": gate["passed"],
        "audit_passed": audit["passed"],
    }


def compare(runs: dict[str, Path], metrics: tuple[str, ...]) -> dict[str, Any]:
    """Every run's verdicts and metric intervals, and each run's paired difference from the
    first."""
    samples = {name: adapter_samples(path) for name, path in runs.items()}
    reference = next(iter(runs))
    figures: dict[str, Any] = {"reference": reference, "runs": {}}
    for name, path in runs.items():
        row: dict[str, Any] = verdicts(path)
        for metric in metrics:
            interval = bootstrap_interval(samples[name][metric])
            row[metric] = _interval(interval.estimate, interval.low, high=interval.high)
            if name != reference:
                diff = paired_difference(samples[name][metric], samples[reference][metric])
                row[f"{metric} - {reference}"] = _interval(
                    diff.absolute.estimate, diff.absolute.low, high=diff.absolute.high
                )
                row["n_conversations"] = diff.n_conversations
        figures["runs"][name] = row
    return figures


def _commit(run: Path) -> str | None:
    """The commit the run's checkout was at (with "+ changes" when its code differs)."""
    head = subprocess.run(
        ["git", "-C", str(run), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    if head.returncode != 0:
        return None
    changed = subprocess.run(
        ["git", "-C", str(run), "status", "--porcelain", "--untracked-files=no", "--", *NOT_CODE],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head.stdout.strip() + (" + changes" if changed else "")


def _interval(estimate: float, low: float, *, high: float) -> str:
    return f"{estimate:.4f} [{low:.4f}, {high:.4f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--name", required=True, help="the results file's name")
    parser.add_argument("--run", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--metric", action="append", help=f"default: {', '.join(METRICS)}")
    args = parser.parse_args(argv)
    runs = {}
    for spec in args.run:
        name, _, folder = spec.partition("=")
        if not folder or not (Path(folder) / "data" / "evaluate").is_dir():
            print(f"benchmarks: --run {spec}: NAME=DIR, a checkout after make run", file=sys.stderr)
            return 1
        runs[name] = Path(folder)
    figures = compare(runs, tuple(args.metric or METRICS))
    write_result(args.name, figures)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
