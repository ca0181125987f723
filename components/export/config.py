"""The export stage's params."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core.config import require as _require


@dataclass
class ExportConfig:
    SECTION: ClassVar[str] = "export"

    make_zip: bool = True
    pi_scan_min_chars: int = 4  # inventory values shorter than this are not scanned for

    def __post_init__(self) -> None:
        _require(self.pi_scan_min_chars >= 1, "export.pi_scan_min_chars", "an integer >= 1")
