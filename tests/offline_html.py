"""What in a page would make a network request: remote ``src``/``href``/... attributes,
``@import`` and ``url(...)`` in stylesheets, ``<style>`` blocks and ``style`` attributes.

A reference is remote when it names a scheme other than ``data:`` and ``#`` (``http:``,
``https:``, ``ftp:``, ...) or a host (``//cdn.example``). Text a reader sees (a licence
naming its web page) is no reference and is not reported.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

PAGE_SUFFIXES = (".html", ".htm", ".svg")
STYLE_SUFFIXES = (".css",)
# Attributes a browser fetches (or navigates to) by URL.
URL_ATTRIBUTES = frozenset(
    {"src", "href", "action", "formaction", "poster", "data", "srcset", "xlink:href", "background"}
)
_REMOTE = re.compile(r"^\s*(?://|[a-z][a-z0-9+.-]*:)", re.IGNORECASE)
_LOCAL_SCHEMES = ("data:", "mailto:")
_CSS_URL = re.compile(
    r"""@import\s+(?:url\(\s*)?["']?\s*([^"')\s;]+)|url\(\s*["']?\s*([^"')\s]+)""", re.IGNORECASE
)
_REFRESH_URL = re.compile(r"url\s*=\s*(\S+)", re.IGNORECASE)


def is_remote(url: str) -> bool:
    """Whether ``url`` leaves the page's own folder tree: a host or a non-local scheme."""
    stripped = url.strip()
    return bool(_REMOTE.match(stripped)) and not stripped.lower().startswith(_LOCAL_SCHEMES)


def css_remote_references(css: str) -> list[str]:
    """Remote URLs that ``@import`` or ``url(...)`` in a stylesheet would fetch."""
    found = (a or b for a, b in _CSS_URL.findall(css))
    return [url for url in found if is_remote(url)]


def _srcset_urls(value: str) -> list[str]:
    """The URLs of a ``srcset`` (``a.png 1x, b.png 2x``)."""
    return [part.split()[0] for part in value.split(",") if part.split()]


class _PageScan(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.remote: list[str] = []
        self.local: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): value or "" for name, value in attrs}
        for name, value in values.items():
            if name in URL_ATTRIBUTES:
                urls = _srcset_urls(value) if name == "srcset" else [value]
                for url in urls:
                    (self.remote if is_remote(url) else self.local).append(f"{tag} {name}={url}")
            elif name == "style":
                self.remote += [f"{tag} style url {u}" for u in css_remote_references(value)]
        if tag == "meta" and values.get("http-equiv", "").lower() == "refresh":
            self.remote += [
                f"meta refresh {u}"
                for u in _REFRESH_URL.findall(values.get("content", ""))
                if is_remote(u)
            ]
        self._in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self._in_style = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.remote += [f"style url {url}" for url in css_remote_references(data)]


def page_references(text: str) -> tuple[list[str], list[str]]:
    """The remote and the local (relative, ``#``, ``data:``) references of an HTML page."""
    scan = _PageScan()
    scan.feed(text)
    scan.close()
    return scan.remote, scan.local


def remote_references(root: Path) -> list[str]:
    """``file: reference`` for every remote reference of every page and stylesheet under
    ``root`` (or of ``root`` itself when it is a file)."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    found = []
    for path in files:
        name = path.name if path == root else path.relative_to(root).as_posix()
        suffix = path.suffix.lower()
        if suffix in PAGE_SUFFIXES:
            remote, _ = page_references(path.read_text(encoding="utf-8", errors="replace"))
        elif suffix in STYLE_SUFFIXES:
            remote = css_remote_references(path.read_text(encoding="utf-8", errors="replace"))
        else:
            continue
        found += [f"{name}: {reference}" for reference in remote]
    return found


def offline_files(root: Path) -> list[Path]:
    """The pages and stylesheets under ``root`` (what ``remote_references`` reads)."""
    suffixes = (*PAGE_SUFFIXES, *STYLE_SUFFIXES)
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)
