"""The page templates: autoescaped, strict about missing variables, shipped as package data,
and fetching nothing."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import jinja2
import pytest

from components.core.html import Pages, png_data_uri
from tests.conftest import REPO_ROOT
from tests.offline_html import page_references

TEMPLATES = sorted((REPO_ROOT / "components").glob("*/templates/*.html"))
# (module that renders it, its Pages, the template)
PAGES = [
    ("components.risk.report", "report.html"),
    ("components.review.page", "review.html"),
    ("components.gate.page", "validation.html"),
    ("components.export.report", "report.html"),
]


def pages_of(module: str) -> Pages:
    pages = importlib.import_module(module)._PAGES
    assert isinstance(pages, Pages)
    return pages


def test_values_are_escaped() -> None:
    page = Pages("components.core").render("base.html", title="<script>alert(1)</script>")
    assert "<script>" not in page
    assert "<title>&lt;script&gt;alert(1)&lt;/script&gt;</title>" in page


def test_a_missing_variable_is_an_error_not_an_empty_string() -> None:
    with pytest.raises(jinja2.UndefinedError, match="'title' is undefined"):
        Pages("components.core").render("base.html")


@pytest.mark.parametrize(("module", "template"), PAGES)
def test_every_page_needs_its_variables(module: str, template: str) -> None:
    with pytest.raises(jinja2.UndefinedError):
        pages_of(module).render(template, title="a page")


@pytest.mark.parametrize(("module", "template"), PAGES)
def test_every_page_extends_the_shared_shell(module: str, template: str) -> None:
    source = REPO_ROOT / pages_of(module).package.replace(".", "/") / "templates" / template
    assert '{% extends "base.html" %}' in source.read_text(encoding="utf-8")


def test_a_stage_template_shadows_no_shared_one() -> None:
    shared = {p.name for p in (REPO_ROOT / "components" / "core" / "templates").iterdir()}
    for path in TEMPLATES:
        if path.parent.parent.name != "core":
            assert path.name not in shared, f"{path} hides core's {path.name}"


def test_every_template_ships_as_package_data() -> None:
    """A plain (non-editable) ``pip install`` carries each template: pyproject's package-data
    pattern matches every file of every ``templates/`` folder."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["*"]
    shipped = {p for package in _packages() for pattern in patterns for p in package.glob(pattern)}
    present = {p for p in (REPO_ROOT / "components").glob("*/templates/*") if p.is_file()}
    assert present and present <= shipped


def _packages() -> list[Path]:
    return [p.parent for p in (REPO_ROOT / "components").glob("*/__init__.py")]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_no_template_references_anything_remote(path: Path) -> None:
    remote, _ = page_references(path.read_text(encoding="utf-8"))
    assert remote == []
    assert "<script" not in path.read_text(encoding="utf-8")


def test_charts_are_data_uris() -> None:
    assert png_data_uri(b"\x89PNG") == "data:image/png;base64,iVBORw=="
