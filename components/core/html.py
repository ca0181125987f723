"""Self-contained HTML pages from Jinja2 templates: inline CSS, no scripts, no external
resources, so that every page veiltune writes reads offline and makes no network request.

Where the templates live. A stage's pages are templates in its own package,
``components/<stage>/templates/``, beside the code that gathers what they show; the shell
every page extends (``base.html``: doctype, charset, title, the shared inline CSS) and the
shared macros (``macros.html``) are in ``components/core/templates/``. Per stage rather than
one shared folder because DVC reruns a stage when a package it depends on changes: a page's
template in its stage's package reruns that stage (and those that import it, as export does
the review page), where one in core would rerun all eleven.

Every environment autoescapes (a value from data is text, never markup) and fails on an
undefined variable (``StrictUndefined``) rather than rendering it as nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

import jinja2

_CORE = "components.core"
_FOLDER = "templates"


def png_data_uri(png: bytes) -> str:
    """A PNG as a ``data:`` URI, so that a page embeds its charts instead of fetching them."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class Pages:
    """The page templates of one package, loaded with core's shared ones.

    Args:
        package: the package whose ``templates/`` folder holds the pages (``"components.risk"``).
        filters: extra Jinja filters its templates use, by name.
        tests: extra Jinja tests its templates use, by name.
    """

    def __init__(
        self,
        package: str,
        filters: Mapping[str, Callable[..., Any]] | None = None,
        *,
        tests: Mapping[str, Callable[..., bool]] | None = None,
    ) -> None:
        self.package = package
        self._filters = dict(filters or {})
        self._tests = dict(tests or {})

    @cached_property
    def environment(self) -> jinja2.Environment:
        loaders = [jinja2.PackageLoader(self.package, _FOLDER)]
        if self.package != _CORE:
            loaders.append(jinja2.PackageLoader(_CORE, _FOLDER))
        environment = jinja2.Environment(
            loader=jinja2.ChoiceLoader(loaders),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        environment.filters.update({"png_data_uri": png_data_uri, **self._filters})
        environment.tests.update(self._tests)
        return environment

    def render(self, template: str, /, **context: Any) -> str:
        """The page ``template`` filled with ``context``.

        Raises:
            jinja2.UndefinedError: the template uses a variable ``context`` lacks.
        """
        return self.environment.get_template(template).render(**context)
