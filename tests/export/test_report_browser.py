"""The report as a browser shows it: the verdict banner on the first screen.

Opens report.html in headless Chromium (``chromium`` on PATH; CI installs Debian's) at
1280×1000 and looks for the banner's background colour in the screenshot: no script is
allowed in the report, so the page cannot measure itself. Then loads it through a
recording proxy, the browser's only way out, and holds it to no request (a page that does
fetch is seen fetching). That it has no script is checked statically by
``tests/export/test_report.py::test_images_are_embedded_and_nothing_is_fetched``; the
charts' axis titles, on their matplotlib Axes, by ``tests/export/test_audit_evidence.py``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.export.facts import ExportFacts
from components.export.report import compliance_report_html
from components.risk.report import risk_histogram_png
from tests.export.fixtures import LINEAGE, PARAMS, REGISTRY, stage_metrics

CHROMIUM = shutil.which("chromium")
BANNER_RGB = (0xFF, 0xF3, 0xC4)  # .banner's background in components/export/templates
FIRST_SCREEN = (1280, 1000)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not on PATH (CI installs Debian's chromium)"
)


def screenshot(page: Path, out: Path) -> Any:
    from PIL import Image

    size = f"--window-size={FIRST_SCREEN[0]},{FIRST_SCREEN[1]}"
    chromium(page, out.parent, "--hide-scrollbars", size, f"--screenshot={out}")
    return Image.open(out).convert("RGB")


def chromium(page: Path, home: Path, *flags: str) -> None:
    """Headless Chromium on ``page`` with ``flags``, its profile under ``home``."""
    subprocess.run(
        [str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", *flags, page.as_uri()],
        check=True,
        capture_output=True,
        timeout=60,
        env={"HOME": str(home)},  # chromium writes its profile under HOME
    )


def report_page(folder: Path) -> Path:
    """The report of a default run's figures, written to ``folder``."""
    histogram = risk_histogram_png([0] * 270 + [1] * 20 + [3] * 10, 5.0, mean=0.17, std=0.57)
    facts = ExportFacts(
        stage_metrics(), PARAMS, REGISTRY, {**LINEAGE, "created_at": "2026-01-01T00:00:00Z"}
    )
    page = folder / "report.html"
    page.write_text(compliance_report_html(facts, histogram, utility_png=None), encoding="utf-8")
    return page


def test_the_verdict_banner_is_on_the_first_screen(tmp_path: Path) -> None:
    page = report_page(tmp_path)
    image = screenshot(page, tmp_path / "first-screen.png")
    assert image.size == FIRST_SCREEN
    banner = sum(1 for pixel in image.getdata() if pixel == BANNER_RGB)
    assert banner > 40_000, f"{banner} pixels of the banner's colour on the first screen"


class _RecordingProxy:
    """An HTTP proxy on loopback that answers nothing and records every request: Chromium
    sent through it has no other way to the network."""

    def __init__(self) -> None:
        import socket
        import threading

        self.requests: list[str] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with client:
                first = client.recv(4096).split(b"\r\n", 1)[0]
                if first:  # a socket opened and closed unused (a loaded machine) asks nothing
                    self.requests.append(first.decode("latin-1"))
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self._server.close()


# Where Chromium itself calls home whatever it loads (network time, sign-in, its search
# engine's preconnect, and from 156 its component updater despite --disable-component-update),
# flags or not: measured on an empty page, Chromium 150 and 156 (Debian 12).
CHROMIUM_OWN_HOSTS = frozenset(
    {"clients2.google.com", "accounts.google.com", "www.google.com", "update.googleapis.com"}
)


def _host(request: str) -> str:
    """``CONNECT host:443 HTTP/1.1`` or ``GET http://host/path HTTP/1.1`` -> host."""
    target = request.split(" ")[1] if " " in request else request
    return target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]


def requests_while_loading(page: Path, home: Path) -> list[str]:
    """Every network request Chromium makes while it loads ``page`` (a file) to its end,
    but Chromium's own (``CHROMIUM_OWN_HOSTS``)."""
    proxy = _RecordingProxy()
    try:
        chromium(
            page,
            home,
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            f"--proxy-server=http://127.0.0.1:{proxy.port}",
            "--proxy-bypass-list=<-loopback>",  # even localhost goes through it
            "--virtual-time-budget=5000",  # lets late loads (images, fonts) start
            "--dump-dom",
        )
    finally:
        proxy.close()
    return [r for r in proxy.requests if _host(r) not in CHROMIUM_OWN_HOSTS]


def test_the_report_makes_no_network_request_in_a_browser(tmp_path: Path) -> None:
    page = report_page(tmp_path)
    # the control: a page that fetches an image is seen fetching it
    leaky = tmp_path / "leaky.html"
    leaky.write_text(
        '<img src="http://veiltune-test.invalid/pixel.png">'
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
        encoding="utf-8",
    )
    seen = {_host(r) for r in requests_while_loading(leaky, tmp_path)}
    assert {"veiltune-test.invalid", "fonts.googleapis.com"} <= seen
    assert requests_while_loading(page, tmp_path) == []
