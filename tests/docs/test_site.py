"""The documentation site builds with ``mkdocs build --strict`` (a broken link, anchor or
nav entry fails) and every page passes the offline check the stages' pages pass: no remote
``src``/``href``/``@import``/``url(``. Its scripts are its own (search), so unlike a stage's
page it has scripts, all of them local."""

from __future__ import annotations

import dataclasses
import html
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.offline_html import offline_files, page_references, remote_references

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs") / "site"
    environment = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    return folder


def nav_pages(nav: object) -> Iterator[str]:
    """Every page file mkdocs.yml's nav lists."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def config() -> dict[str, object]:
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    loaded: dict[str, object] = yaml.safe_load(text)
    return loaded


def test_every_page_is_built_and_requests_nothing_remote(site: Path) -> None:
    built = {p.relative_to(site).as_posix() for p in offline_files(site)}
    expected = {page.removesuffix(".md") + ".html" for page in nav_pages(config()["nav"])}
    assert expected <= built
    assert remote_references(site) == []


def test_its_scripts_and_styles_are_its_own(site: Path) -> None:
    page = (site / "index.html").read_text(encoding="utf-8")
    remote, local = page_references(page)
    scripts = [ref for ref in local if ref.startswith("script src=")]
    assert remote == [] and scripts, "search needs the site's own scripts"
    assert all((site / ref.split("=", 1)[1].split("?")[0]).is_file() for ref in scripts)
    # no fonts from a CDN, no call to GitHub's API for repository facts, no "Made with" link
    assert config()["theme"]["font"] is False  # type: ignore[index]
    assert "repo_url" not in config() and "fonts.googleapis" not in page


def test_the_params_reference_lists_every_key_from_the_code(site: Path) -> None:
    from components.stages import STAGES

    page = (site / "reference" / "params.html").read_text(encoding="utf-8")
    for stage in STAGES:
        for item in dataclasses.fields(stage.config):
            assert f"{stage.name}.{item.name}" in page, f"{stage.name}.{item.name}"
    assert "anonymize.dlp.min_likelihood" in page and "train.fragments.source" in page


def test_the_results_page_shows_each_results_file(site: Path) -> None:
    from benchmarks.report import BENCHMARKS
    from benchmarks.results import read_results

    page = (site / "results.html").read_text(encoding="utf-8")
    results = read_results()
    for benchmark in BENCHMARKS:
        record = results.get(benchmark.name)
        if record is None:
            assert html.escape(benchmark.command) in page, benchmark.name
        else:
            assert record["commit"] in page and html.escape(record["command"]) in page
    missing = [b.name for b in BENCHMARKS if b.name not in results]
    assert ("Not measured yet" in page) == bool(missing)
