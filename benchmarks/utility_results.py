"""A utility profile's runs as a results file: the figures ``veiltune utility-report`` gives
for a run store (means with 95% intervals, paired differences from the oracle), in the
envelope every results file has, naming the machine that trained and scored the runs.

The runs usually come from a GPU node (``python -m veiltune.utility_runner``, docs/utility.md)
and the report is made here, so the envelope's machine is the runs' own: the device their
``evaluate.json`` recorded. ``--commit`` names the code the runs ran (the node may have no git
checkout); it defaults to this checkout's HEAD::

    python -m benchmarks.utility_results --runs reports/utility/runs --name utility_large \\
        --commit babcdc1 --command "python -m veiltune.utility_runner PACK ..."
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.results import REPO, machine, write_result
from components.evaluate.runs import collect_runs
from components.evaluate.summary import summarize

# The metrics the results page shows, in its columns' order.
KEY_METRICS = (
    "summary.rouge1",
    "action_items.rouge1",
    "purpose.accuracy",
    "outcome.accuracy",
    "perplexity_raw",
    "dialogsum.summary.rouge1",
    "dialogsum.perplexity_raw",
)


def utility_figures(store: Path) -> dict[str, Any]:
    """Each variant's key metrics (mean and 95% interval), its paired difference from the
    oracle, its seeds and the runs' sizes, from the run store's evaluate files."""
    runs = collect_runs(store)
    if not runs:
        raise SystemExit(f"{store}: no run (DIR/<variant>/seed-N/evaluate.json)")
    summary = summarize(runs)
    variants: dict[str, Any] = {}
    for name, entry in summary["variants"].items():
        variants[name] = {
            "seeds": entry["seeds"],
            "metrics": {
                key: _rounded(entry["metrics"][key], entry["intervals"].get(key))
                for key in KEY_METRICS
                if key in entry["metrics"]
            },
            "vs_oracle": {
                key: _relative(summary["differences"][name][key].get("relative"))
                for key in KEY_METRICS
                if key in summary["differences"].get(name, {})
            },
        }
    first = _evaluate_file(store)
    return {
        "device": first.get("device"),
        "runner": first.get("runner", "pipeline"),
        "train_steps": first.get("train_steps"),
        "held_out_calls": first.get("n_conversations"),
        "held_out_dialogsum": first.get("dialogsum.n_conversations"),
        "rouge": "rouge-score, Porter stemming",
        "variants": variants,
    }


def _rounded(value: float, interval: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {"mean": round(value, 4)}
    if interval:
        cell["interval"] = [round(interval[0], 4), round(interval[1], 4)]
    return cell


def _relative(relative: Mapping[str, float] | None) -> dict[str, float] | None:
    if not relative:
        return None
    return {key: round(relative[key], 4) for key in ("estimate", "low", "high")}


def _evaluate_file(store: Path) -> dict[str, Any]:
    first = sorted(store.glob("*/seed-*/evaluate.json"))[0]
    return dict(json.loads(first.read_text(encoding="utf-8")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, required=True, help="run store: DIR/<variant>/seed-N")
    parser.add_argument("--name", default="utility_large", help="results file name")
    parser.add_argument("--commit", help="the code the runs ran (default: HEAD)")
    parser.add_argument("--command", help="the command that made the runs")
    parser.add_argument(
        "--machine",
        type=json.loads,
        default={},
        help='what is known of the machine that ran them, as JSON: {"cpu_count": 16, ...}',
    )
    args = parser.parse_args(argv)
    figures = utility_figures(args.runs)
    commit = args.commit or _head()
    full = subprocess.run(
        ["git", "rev-parse", commit], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    # The runs' machine, not this one: its GPU as the runs recorded it, the rest as given.
    runs_machine = dict.fromkeys(machine(), None) | args.machine | {"gpu": figures["device"]}
    write_result(
        args.name,
        figures,
        command=args.command,
        envelope={"commit": full, "dirty": False, "machine": runs_machine},
    )
    print(json.dumps(figures, indent=2))
    return 0


def _head() -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
