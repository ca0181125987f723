"""How long `make test` takes here, and where the time goes (docs: Results; the README's
headline): the suite run as the Makefile runs it, its wall time, its counts, and its
slowest tests.

    python -m benchmarks.suite [--workers 2]

Run it with nothing else on the machine: the figure is held to the project's target of at
most 10 minutes on 2 cores. Writes benchmarks/results/test_suite.json.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from typing import Any

from benchmarks.detection_quality import REPO
from benchmarks.results import write_result

SLOWEST = 25
_DURATION = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S.*)$")
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?)")
_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)")  # -ra's short summary


def suite_command(workers: int) -> list[str]:
    """The Makefile's `test` recipe, with the slowest tests listed."""
    return [
        sys.executable, "-m", "pytest", "-n", str(workers), "--dist", "loadfile",
        "--no-loadscope-reorder", f"--durations={SLOWEST}", "-q", "-p", "no:cacheprovider",
        "tests",
    ]  # fmt: skip


def parse_report(output: str) -> dict[str, Any]:
    """The counts of pytest's last line, the tests that failed and the slowest tests, from
    its output."""
    last = output.strip().splitlines()[-1] if output.strip() else ""
    counts = {("errors" if kind == "error" else kind): int(n) for n, kind in _COUNT.findall(last)}
    slowest = [
        {"seconds": float(m.group(1)), "phase": m.group(2), "test": m.group(3).strip()}
        for line in output.splitlines()
        if (m := _DURATION.match(line.strip()))
    ]
    failed = [m.group(2) for line in output.splitlines() if (m := _FAILED.match(line))]
    return {"counts": counts, "failed": failed, "slowest": slowest[:SLOWEST]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=min(os.cpu_count() or 2, 4))
    args = parser.parse_args()
    started = time.monotonic()
    run = subprocess.run(
        suite_command(args.workers), cwd=REPO, capture_output=True, text=True, check=False
    )
    seconds = round(time.monotonic() - started, 1)
    report = parse_report(run.stdout)
    figures = {
        "wall_seconds": seconds,
        "wall_minutes": round(seconds / 60, 2),
        "workers": args.workers,
        "exit_code": run.returncode,
        **report,
    }
    print(write_result("test_suite", figures))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
