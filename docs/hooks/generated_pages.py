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

# The docs describe this checkout's code, not whatever copy of it is installed.
REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

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


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs' hook: each page's Markdown before it is rendered."""
    return generated(markdown)
