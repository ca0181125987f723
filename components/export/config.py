"""The export stage's params."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.core import paths
from components.core.config import Count, params_section
from components.core.config import require as _require


@dataclass
@params_section("export")
class ExportConfig:
    SECTION: ClassVar[str] = "export"

    pi_scan_min_chars: Count = 4  # inventory values shorter than this are not scanned for
    # The Ed25519 private key that signs the manifest and register's evidence (from
    # params.yaml's folder), made on first use; $VEILTUNE_SIGNING_KEY overrides it.
    # Never bundled, never in an output, never under data/ (purge-raw erases data/raw).
    signing_key: str = str(paths.SIGNING_KEY)

    def __post_init__(self) -> None:
        _require(
            bool(self.signing_key.strip()),
            "export.signing_key",
            allowed="the path of an Ed25519 private key (PEM), made there on first use",
        )
