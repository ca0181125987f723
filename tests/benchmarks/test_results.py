"""Every benchmark records its figures the one way: a results file with the envelope that
says when, on which commit, on which machine and by which command they were measured."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.results import ENVELOPE_KEYS, read_results, write_result

REPO = Path(__file__).resolve().parents[2]
# the helper itself, the page renderer, and the package marker write no figures of their own
NOT_BENCHMARKS = {"__init__.py", "results.py", "report.py", "headlines.py"}


def test_a_results_file_holds_the_figures_in_their_envelope(tmp_path: Path) -> None:
    figures = {"zeta": 1, "alpha": {"b": 2.5, "a": [1, 2]}}
    path = write_result(
        "demo_part", figures, command="python -m benchmarks.demo --n 3", folder=tmp_path
    )

    record = json.loads(path.read_text(encoding="utf-8"))
    assert path == tmp_path / "demo_part.json" and tuple(record) == ENVELOPE_KEYS
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert record["commit"] == head and isinstance(record["dirty"], bool)
    assert record["command"] == "python -m benchmarks.demo --n 3"
    assert record["machine"]["cpu_count"] >= 1 and record["machine"]["cpu_model"]
    assert "gpu" in record["machine"] and record["date"].endswith("+00:00")
    assert list(record["figures"]) == ["zeta", "alpha"]  # rows keep the order measured
    assert read_results(tmp_path)["demo_part"]["figures"] == figures


def test_a_file_without_the_envelope_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps({"speedup": 1.4}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"old\.json: not a results file \(missing name, date"):
        read_results(tmp_path)


@pytest.mark.parametrize("name", ["", "Cluster", "a-b", "../x"])
def test_a_results_name_is_a_plain_word(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="lowercase letters, digits and _ only"):
        write_result(name, {}, command="x", folder=tmp_path)


def benchmark_modules() -> list[Path]:
    return sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.name not in NOT_BENCHMARKS)


@pytest.mark.parametrize("module", benchmark_modules(), ids=lambda p: p.name)
def test_every_benchmark_writes_through_the_helper(module: Path) -> None:
    """No benchmark opens a results file itself: calls write_result, never writes JSON."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    called = {
        node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert "write_result" in called, f"{module.name} records no results"
    assert "RESULTS" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
