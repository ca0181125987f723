"""`dvc plots show` with the project's dvc.yaml and .dvc/plots: a page that draws offline,
the utility plot with the base model beside the adapter, the risk plot as a histogram."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.offline_html import page_references
from tests.pipeline_repo import BIN, REPO_ROOT, pipeline_env

ONE_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
N_CONVERSATIONS = 500  # the default corpus: one bar each was the risk plot before


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git + DVC repo with the project's dvc.yaml, .dvc/config and .dvc/plots, and plot
    files as the stages write them."""
    repo = tmp_path_factory.mktemp("plots")
    for command in (["git", "init", "-q"], [str(BIN / "dvc"), "init", "-q"]):
        subprocess.run(command, cwd=repo, check=True, env=pipeline_env())
    shutil.copy2(REPO_ROOT / "dvc.yaml", repo / "dvc.yaml")
    shutil.copy2(REPO_ROOT / ".dvc" / "config", repo / ".dvc" / "config")
    shutil.copytree(REPO_ROOT / ".dvc" / "plots", repo / ".dvc" / "plots")
    (repo / "metrics").mkdir()
    (repo / "data" / "risk").mkdir(parents=True)
    (repo / "metrics" / "train_loss.csv").write_text("step,loss\n1,2.5\n2,2.1\n")
    (repo / "metrics" / "utility.csv").write_text(
        "metric,adapter,base\nsummary.rouge1,0.33,0.2\nitems.f1,0.5,\n"
    )
    rows = [f"c{i},{i % 37 / 10}" for i in range(N_CONVERSATIONS)]
    (repo / "data" / "risk" / "risk_table.csv").write_text(
        "conversation_id,score\n" + "\n".join(rows) + "\n"
    )
    (repo / "data" / "risk" / "histogram.png").write_bytes(base64.b64decode(ONE_PIXEL_PNG))
    return repo


def dvc(repo: Path, *args: str) -> str:
    run = subprocess.run(
        [str(BIN / "dvc"), *args],
        cwd=repo,
        env=pipeline_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0 and "failed to load" not in run.stderr, run.stderr[-2000:]
    return run.stdout


def specs(repo: Path) -> dict[str, dict[str, Any]]:
    shown = json.loads(dvc(repo, "plots", "show", "--json"))["data"]
    return {name: plot[0]["content"] for name, plot in shown.items() if plot[0]["type"] == "vega"}


def test_the_page_loads_vega_from_the_checkout_not_a_cdn(repo: Path) -> None:
    dvc(repo, "plots", "show")
    page = repo / "dvc_plots" / "index.html"
    remote, local = page_references(page.read_text(encoding="utf-8"))
    assert remote == []
    scripts = [ref.partition("=")[2] for ref in local if ref.startswith("script src=")]
    assert [Path(s).name for s in scripts] == [
        "vega.min.js",
        "vega-lite.min.js",
        "vega-embed.min.js",
    ]
    for script in scripts:
        assert (page.parent / script).resolve().is_file(), script
    licence = (REPO_ROOT / ".dvc" / "plots" / "vega" / "LICENSE").read_text()
    assert "University of Washington Interactive Data Lab" in licence
    assert ".dvc/plots/vega" in (REPO_ROOT / "NOTICE").read_text()


def test_the_utility_plot_draws_the_base_model_beside_the_adapter(repo: Path) -> None:
    spec = specs(repo)["metrics/utility.csv"]
    folded = [t["fold"] for t in spec.get("transform", []) if "fold" in t]
    assert folded == [["adapter", "base"]]
    assert spec["encoding"]["color"]["field"] == "model"


def test_the_risk_plot_is_a_histogram_not_a_bar_per_conversation(repo: Path) -> None:
    spec = specs(repo)["data/risk/risk_table.csv"]
    assert len(spec["data"]["values"]) == N_CONVERSATIONS
    assert spec["encoding"]["x"]["bin"] and spec["encoding"]["y"]["aggregate"] == "count"
