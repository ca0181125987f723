"""The report as a browser shows it: the verdict banner on the first screen.

Opens report.html in headless Chromium (``chromium`` on PATH; CI installs Debian's) at
1280×1000 and looks for the banner's background colour in the screenshot: no script is
allowed in the report, so the page cannot measure itself. That the page loads nothing
from the network and has no script is checked statically by
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

    subprocess.run(
        [
            str(CHROMIUM),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={FIRST_SCREEN[0]},{FIRST_SCREEN[1]}",
            f"--screenshot={out}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=60,
        env={"HOME": str(out.parent)},  # chromium writes its profile under HOME
    )
    return Image.open(out).convert("RGB")


def test_the_verdict_banner_is_on_the_first_screen(tmp_path: Path) -> None:
    metrics = stage_metrics()
    histogram = risk_histogram_png([0] * 270 + [1] * 20 + [3] * 10, 5.0, 0.17, 0.57)
    facts = ExportFacts(
        metrics, PARAMS, REGISTRY, {**LINEAGE, "created_at": "2026-01-01T00:00:00Z"}
    )
    page = tmp_path / "report.html"
    page.write_text(compliance_report_html(facts, histogram, None), encoding="utf-8")
    image = screenshot(page, tmp_path / "first-screen.png")
    assert image.size == FIRST_SCREEN
    banner = sum(1 for pixel in image.getdata() if pixel == BANNER_RGB)
    assert banner > 40_000, f"{banner} pixels of the banner's colour on the first screen"
