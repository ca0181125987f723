"""MkDocs hooks (``hooks:`` in mkdocs.yml): the generated parts of the site.

A page holding a ``<!-- generated: NAME -->`` line gets, in its place, what ``GENERATORS``
makes of the code and data at build time: the params reference from the config classes, the
results from ``benchmarks/results/*.json``. Nothing generated is committed, so it cannot
drift; the committed page keeps the prose around it (what GitHub shows).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- generated: ([a-z_]+) -->$", re.MULTILINE)


def _params() -> str:
    from docs.hooks.params_reference import params_reference

    return params_reference()


def _results() -> str:
    from benchmarks.report import results_page
    from benchmarks.results import read_results

    return results_page(read_results())


GENERATORS: dict[str, Callable[[], str]] = {"params": _params, "results": _results}


def generated(markdown: str) -> str:
    """``markdown`` with every generated-content marker replaced; an unknown name is an
    error naming it (a typo must not leave a page silently empty)."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(
                f"<!-- generated: {name} -->: no generator (known: {', '.join(GENERATORS)})"
            )
        return GENERATORS[name]()

    return MARKER.sub(fill, markdown)


def use_this_checkout() -> None:
    """Import this checkout's code, not whatever copy of it is installed: the docs describe
    the code beside them. (At the hook's import would not do: mkdocs restores ``sys.path``
    after loading a hook.)"""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import components

    found = Path(components.__file__).resolve()
    if not found.is_relative_to(REPO):
        raise RuntimeError(f"docs: components imported from {found}, not from {REPO}")


def on_config(config: Any, **_: Any) -> Any:
    """MkDocs' hook: once, before any page is read."""
    use_this_checkout()
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs' hook: each page's Markdown before it is rendered."""
    return generated(markdown)
