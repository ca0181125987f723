"""The results page and the README's headline lines hold only what the results files hold:
a benchmark without a file says "not measured yet" with its command, and the README's lines
are the files' as they are now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.report import (
    BEGIN,
    BENCHMARKS,
    END,
    README,
    readme_block,
    results_page,
    with_readme_block,
)
from benchmarks.results import read_results, write_result

CLUSTER = {
    "n_conversations": 600,
    "corpus_mb": 1.93,
    "in_process_seconds": 61.2,
    "speedup_2_workers_vs_in_process": 1.317,
    "overhead_1_worker_vs_in_process": 0.214,
    "identical_outputs": True,
}


def test_without_results_every_benchmark_is_not_measured_yet(tmp_path: Path) -> None:
    page = results_page(read_results(tmp_path))
    for benchmark in BENCHMARKS:
        assert f"**Not measured yet**: run `{benchmark.command}`." in page
    assert "0." not in page  # no figure at all


def test_a_results_file_is_shown_with_its_envelope_and_every_figure(tmp_path: Path) -> None:
    write_result(
        "cluster_throughput",
        CLUSTER,
        command="python -m benchmarks.cluster --only x",
        folder=tmp_path,
    )
    write_result(
        "mystery",
        {"rows": [{"a": 1, "b": "x|y"}, {"a": 2}]},
        command="python -m z",
        folder=tmp_path,
    )
    record = json.loads((tmp_path / "cluster_throughput.json").read_text(encoding="utf-8"))

    page = results_page(read_results(tmp_path))

    assert record["commit"] in page and "`python -m benchmarks.cluster --only x`" in page
    for key, value in CLUSTER.items():
        assert f"| {key} | {json.dumps(value) if isinstance(value, bool) else value} |" in page
    assert "1.317× one process's rate" in page  # the headline, from the same file
    # a results file no benchmark here names is still shown, escaped for its table
    assert "## mystery" in page and "| 1 | 1 | x\\|y |" in page


def test_the_readme_block_is_drawn_from_the_files(tmp_path: Path) -> None:
    write_result(
        "cluster_throughput", CLUSTER, command="python -m benchmarks.cluster", folder=tmp_path
    )
    block = readme_block(read_results(tmp_path))

    assert "1.317× one process's rate" in block
    assert "**Detection quality**: not measured yet" in block
    readme = f"intro\n{BEGIN}\nold figures\n{END}\nend\n"
    assert with_readme_block(readme, block) == f"intro\n{BEGIN}\n{block}\n{END}\nend\n"
    with pytest.raises(ValueError, match="no <!-- results:begin -->"):
        with_readme_block("no block here", block)


def test_the_committed_readme_holds_the_committed_results() -> None:
    """`python -m benchmarks.report --readme` was run after the last results changed."""
    readme = README.read_text(encoding="utf-8")
    fresh = with_readme_block(readme, readme_block(read_results()))
    assert readme == fresh, "README's results block is stale: python -m benchmarks.report --readme"
