"""The export stage's logic: gather the bundle's contents, scan them for PI, write the bundle.

A bundle is written only if no file of it holds an identifying value of the PI inventory:
the contents are scanned before they are written (the result goes into the bundle as
``pi_scan.json``), and the finished folder, manifest included, once more before it is
renamed into place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.core.audit_record import with_details
from components.core.errors import LeakageDetected
from components.export.bundle import Source, build_bundle
from components.export.detector_scan import DetectorScanPolicy
from components.export.facts import ExportFacts
from components.export.model_card import model_card_html, model_card_markdown
from components.export.report import compliance_report_html
from components.export.scan import BundleScan, scan_bundle, scan_files
from components.export.sources import (
    folder_contents,
    policy_contents,
    review_contents,
    utility_contents,
)
from components.ingest import InventoryEntry


@dataclass(frozen=True)
class ExportInputs:
    """Where the stage outputs the bundle takes are (the paths dvc.yaml names)."""

    params: Path
    dvc_lock: Path
    gate_result: Path
    gate_page: Path
    risk_dir: Path
    risk_histogram: Path
    review_dir: Path
    metrics_dir: Path
    adapter_dir: Path
    utility_dir: Path
    utility_intervals: Path | None = None  # every utility score's (evaluate's detail file)
    audit_details: Path | None = None  # the audits' per-item figures (the audit's detail file)


@dataclass(frozen=True)
class PiScanPolicy:
    """The bundle's two PI scans: inventory values by keyed hash, and the detector's
    findings confirmed in the raw corpus (``detector``; None only where no detector can
    load, in tests of the bundle's format)."""

    entries: list[InventoryEntry]
    salt: str
    min_chars: int
    detector: DetectorScanPolicy | None = None

    def scan_contents(self, contents: dict[str, Source]) -> BundleScan:
        files = ((n, s if isinstance(s, bytes) else s.read_bytes()) for n, s in contents.items())
        return scan_files(files, self.entries, salt=self.salt, min_chars=self.min_chars)

    def scan_folder(self, folder: Path) -> BundleScan:
        return scan_bundle(folder, self.entries, salt=self.salt, min_chars=self.min_chars)


def _optional_files(
    inputs: ExportInputs, metrics: dict[str, dict[str, Any]], *, contents: dict[str, Source]
) -> tuple[dict[str, dict[str, Any]], Any]:
    """Add the audit's details and evaluate's intervals to ``contents`` where the run wrote
    them (a run from before they existed did not); returns the metrics with the audit's
    details, and every utility interval (None: the headline scores' own only)."""
    details = inputs.audit_details
    if details is not None and details.is_file() and "audit" in metrics:
        contents["audit/details.json"] = details
        metrics = {**metrics, "audit": with_details(metrics["audit"], _json_file(details))}
    intervals = inputs.utility_intervals
    every_interval = None
    if intervals is not None and intervals.is_file():
        contents["evaluate/intervals.json"] = intervals
        every_interval = _json_file(intervals).get("metrics")
    return metrics, every_interval


def bundle_contents(
    inputs: ExportInputs,
    params: dict[str, Any],
    *,
    metrics: dict[str, dict[str, Any]],
    lineage: dict[str, Any],
    pi: PiScanPolicy,
) -> dict[str, Source]:
    """Bundle name → file or bytes: the stage outputs an auditor reads, the policy, the
    review sample (residual PI masked), the report and the model card.

    Args:
        metrics: stage → its metrics (what the report and the model card state).
        lineage: what the manifest records; ``registered_model`` is the registry's answer.
    """
    policy, policy_summary = policy_contents(params.get("anonymize") or {}, inputs.params.parent)
    review, review_summary = review_contents(
        inputs.review_dir, pi.entries, salt=pi.salt, min_chars=pi.min_chars, detector=pi.detector
    )
    utility, utility_report, utility_png = utility_contents(inputs.utility_dir)
    adapter_config = inputs.adapter_dir / "adapter_config.json"
    contents: dict[str, Source] = {
        "params.yaml": inputs.params,
        "dvc.lock": inputs.dvc_lock,
        "gate/validation.json": inputs.gate_result,
        "gate/validation.html": inputs.gate_page,
        **folder_contents(inputs.risk_dir, "risk"),
        **{f"metrics/{p.name}": p for p in sorted(inputs.metrics_dir.glob("*.json"))},
        **policy,
        **review,
        **utility,
    }
    if adapter_config.is_file():
        contents["model/adapter_config.json"] = adapter_config
    metrics, every_interval = _optional_files(inputs, metrics, contents=contents)
    facts = ExportFacts(
        metrics=metrics,
        params=params,
        registry=lineage["registered_model"],
        lineage=lineage,
        policy=policy_summary,
        review=review_summary,
        adapter_config=_json_file(adapter_config) if adapter_config.is_file() else None,
        utility_report=utility_report,
        utility_intervals=every_interval,
    )
    histogram = inputs.risk_histogram.read_bytes() if inputs.risk_histogram.is_file() else None
    contents["report.html"] = compliance_report_html(
        facts, histogram, utility_png=utility_png
    ).encode()
    card = model_card_markdown(facts)
    contents["model_card.md"] = card.encode()
    decided = facts.decision()
    title = f"Model card: {decided.model_name} version {decided.model_version}"
    contents["model_card.html"] = model_card_html(card, title).encode()
    return contents


def _json_file(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def refuse_leaks(scan: BundleScan) -> None:
    """Raise when the scan found inventory values (naming files and types, never values)."""
    if not scan.passed:
        raise LeakageDetected(
            "export: the bundle would hold identifying values of the PI inventory "
            f"({scan.describe_leaks()}); nothing was written"
        )


def write_scanned_bundle(
    contents: dict[str, Source],
    lineage: dict[str, Any],
    *,
    bundle_dir: Path,
    make_zip: bool,
    pi: PiScanPolicy,
    signing_key: Ed25519PrivateKey | None = None,
) -> tuple[dict[str, Any], BundleScan]:
    """Scan ``contents``, add the scan's record, and write the bundle (rescanned whole before
    it replaces the old one), signed with ``signing_key``. Returns the manifest and the scan.

    Raises:
        LeakageDetected: a file holds an identifying inventory value; nothing is written.
    """
    scan = pi.scan_contents(contents)
    refuse_leaks(scan)
    scanned = scan.to_record()
    if pi.detector is not None:
        files = ((n, s if isinstance(s, bytes) else s.read_bytes()) for n, s in contents.items())
        # The review sample's copy had every detector finding masked, string by string.
        detected = pi.detector.scan(files, masked=("review/",))
        if not detected.passed:
            raise LeakageDetected(
                "export: the detector found values of the raw corpus in the bundle "
                f"({detected.describe_leaks()}); nothing was written"
            )
        scanned["detector"] = detected.to_record()
    record = json.dumps(scanned, indent=2, sort_keys=True) + "\n"
    with_scan = {**contents, "pi_scan.json": record.encode()}
    manifest = build_bundle(
        with_scan,
        lineage,
        bundle_dir=bundle_dir,
        make_zip=make_zip,
        check=lambda folder: refuse_leaks(pi.scan_folder(folder)),
        signing_key=signing_key,
    )
    return manifest, scan
