"""Self-contained HTML pages: inline CSS, no scripts, no external resources, so that every
page veiltune writes reads offline and makes no network request."""

from __future__ import annotations

import html


def html_page(title: str, css: str, body: str, head: str = "") -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"{head}<title>{html.escape(title)}</title>\n<style>\n{css}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )
