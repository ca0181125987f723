"""DP against non-DP training on one corpus (issue 42): each adapter's summary ROUGE-1 and
held-out perplexity with 95% bootstrap intervals and the paired difference from the non-DP
adapter, train's wall time and its ratio, the ε the accountant spent, and the noise.

    python -m benchmarks.dp_utility [--epsilons 1,4,8] [--set train.max_steps=40 ...]

Run in a checkout after `make run`: its adapter (trained without DP) is the reference. Each
ε is then `dvc exp run evaluate` with `train.privacy.enabled=true` and that epsilon (and
every --set), so train and evaluate run again on the same corpus, salt, split and seed; the
reference's figures are read before the first. Afterwards params.yaml comes back from git and
`dvc repro evaluate` restores the reference's outputs from DVC's run cache. An ε run before
is restored from that cache too, its figures (wall time included) those of the run that
computed it. Writes
benchmarks/results/dp_utility.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.results import write_result
from components.core import paths
from components.evaluate.intervals import bootstrap_interval, paired_difference
from components.evaluate.runs import is_perplexity, read_records, samples

METRICS = ("summary.rouge1", "perplexity_raw")
TRAIN_FIGURES = ("runtime_s", "train_loss", "steps", "dp.epsilon", "dp.delta")
NOISE_FIGURES = ("dp.noise_multiplier", "dp.sample_rate", "dp.expected_batch", "dp.units")

Sample = dict[str, tuple[float, float]]


def read_run(workspace: Path) -> dict[str, Any]:
    """The workspace's adapter samples, base samples and train metrics, as they are now."""
    records = list(read_records(workspace / paths.PER_CONVERSATION))
    train = json.loads((workspace / paths.metrics_file("train")).read_text(encoding="utf-8"))
    return {
        "adapter": samples(records, "adapter"),
        "base": samples(records, "base"),
        "train": train,
    }


def _interval(sample: Sample, metric: str) -> dict[str, float]:
    interval = bootstrap_interval(sample, exponentiate=is_perplexity(metric))
    return {"estimate": interval.estimate, "low": interval.low, "high": interval.high}


def figures_of(run: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    """One run's figures beside the reference: intervals, paired differences, train's."""
    row: dict[str, Any] = {}
    for metric in METRICS:
        row[metric] = _interval(run["adapter"][metric], metric)
        diff = paired_difference(
            run["adapter"][metric],
            reference["adapter"][metric],
            exponentiate=is_perplexity(metric),
        )
        row[f"{metric} - non_dp"] = {
            "estimate": diff.absolute.estimate,
            "low": diff.absolute.low,
            "high": diff.absolute.high,
            "n_conversations": diff.n_conversations,
        }
    train = run["train"]
    row.update({key: train[key] for key in (*TRAIN_FIGURES, *NOISE_FIGURES) if key in train})
    row["wall_time_ratio"] = round(train["runtime_s"] / reference["train"]["runtime_s"], 3)
    return row


def run_epsilon(workspace: Path, epsilon: float, *, settings: list[str]) -> None:
    """Train and evaluate with DP at ``epsilon`` as a DVC experiment in ``workspace``."""
    command = [
        "dvc", "exp", "run", "evaluate",
        "-S", "train.privacy.enabled=true",
        "-S", f"train.privacy.epsilon={epsilon}",
        "-S", "evaluate.include_base=false",  # the reference's evaluation scored it
    ]  # fmt: skip
    for setting in settings:
        command += ["-S", setting]
    subprocess.run(command, cwd=workspace, check=True)


def restore(workspace: Path) -> None:
    """The reference's params and outputs back in the workspace: params.yaml from git, then
    `dvc repro evaluate`, which restores train's and evaluate's outputs, metrics files
    included, from DVC's run cache (`dvc checkout` leaves out uncached metrics files)."""
    subprocess.run(["git", "checkout", "--", "params.yaml"], cwd=workspace, check=True)
    subprocess.run(["dvc", "repro", "evaluate"], cwd=workspace, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilons", default="1,4,8")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--workspace", type=Path, default=Path.cwd())
    args = parser.parse_args(argv)
    if not (args.workspace / paths.PER_CONVERSATION).is_file():
        print(f"benchmarks: {args.workspace}: no evaluation: run make run first", file=sys.stderr)
        return 1
    reference = read_run(args.workspace)
    if "dp.epsilon" in reference["train"]:
        print(
            "benchmarks: the workspace's adapter trained with DP: not a reference", file=sys.stderr
        )
        return 1
    figures: dict[str, Any] = {
        "settings": args.set,
        "base": {m: _interval(reference["base"][m], m) for m in METRICS},
        "runs": {"non_dp": figures_of(reference, reference)},
    }
    try:
        for epsilon in (float(e) for e in args.epsilons.split(",")):
            run_epsilon(args.workspace, epsilon, settings=args.set)
            figures["runs"][f"epsilon_{epsilon:g}"] = figures_of(
                read_run(args.workspace), reference
            )
            write_result("dp_utility", figures)  # each ε kept as it lands: hours on a CPU
    finally:
        restore(args.workspace)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
