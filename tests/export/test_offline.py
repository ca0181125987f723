"""Every page and stylesheet the gate and export stages write renders offline: no remote
``src``/``href``/``@import``/``url(``, in the gate's outputs and anywhere in a built bundle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.export.bundle import verify_bundle
from components.export.compliance import (
    ExportInputs,
    PiScanPolicy,
    bundle_contents,
    write_scanned_bundle,
)
from components.export.model_card import model_card_html, model_card_markdown
from components.export.report import GATE_PAGE
from components.gate.stage import write_validation
from components.gate.suite import validate_risk_table
from components.review.page import review_page_html
from components.risk.report import risk_report_html
from tests.export.fixtures import LINEAGE, PARAMS, REGISTRY, SALT, inventory, stage_metrics
from tests.gate.test_suite import context_table, risk_table
from tests.offline_html import offline_files, page_references, remote_references

PNG = b"\x89PNG\r\n\x1a\nchart-bytes"
# What GX 1.x's Data Docs held, one of each kind: the scan must name every one.
DATA_DOCS_HEAD = """<!DOCTYPE html><html><head>
<link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css">
<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>
<script src="//code.jquery.com/jquery-3.7.1.min.js"></script>
<style>@import url("https://fonts.example/a.css"); @import '//fonts.example/b.css';
body { background: url(https://cdn.example/bg.png) }</style>
<link rel="icon" href="./static/images/favicon.ico">
</head><body><div style="background-image: url('//cdn.example/x.png')"></div>
<img srcset="local.png 1x, https://cdn.example/2x.png 2x" src="data:image/png;base64,AA==">
<a href="https://greatexpectations.io/newsletter">newsletter</a><a href="#top">top</a>
<p>text naming https://creativecommons.org/licenses/by-nc-sa/4.0/ is no request</p>
</body></html>"""


def test_the_scan_finds_every_kind_of_remote_reference(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text(DATA_DOCS_HEAD, encoding="utf-8")
    (tmp_path / "docs" / "style.css").write_text(
        '@import "https://cdn.example/c.css";\n.a { src: url(fonts/a.otf) }\n', encoding="utf-8"
    )
    found = remote_references(tmp_path)
    assert len(found) == 10, found
    assert "docs/style.css: https://cdn.example/c.css" in found
    assert any("jquery" in f for f in found) and any("newsletter" in f for f in found)
    assert not any("creativecommons" in f or "favicon" in f or "fonts/a.otf" in f for f in found)


def gate_outputs(folder: Path, table: Any, **options: Any) -> Path:
    """What the gate stage writes into ``folder``: GX's validation JSON and veiltune's page."""
    _, validation = validate_risk_table(table, 5.0, **options)
    write_validation(validation, folder / "validation.json", page_file=folder / "validation.html")
    return folder


@pytest.mark.parametrize(
    ("table", "options"),
    [
        (lambda: risk_table([1, 2, 6]), {}),
        (lambda: context_table({"sales": [1, 2], "chat": [0, 1]}), {"per_context": True}),
    ],
    ids=["failing", "per-context"],
)
def test_the_gate_writes_only_offline_pages(
    tmp_path: Path, table: Any, *, options: dict[str, Any]
) -> None:
    (tmp_path / "data_docs").mkdir()  # an earlier veiltune's GX Data Docs: removed
    (tmp_path / "data_docs" / "index.html").write_text(DATA_DOCS_HEAD, encoding="utf-8")
    folder = gate_outputs(tmp_path, table(), known_contexts=["sales", "chat"], **options)
    assert [p.name for p in offline_files(folder)] == ["validation.html"]
    assert remote_references(folder) == []


def stage_outputs(root: Path) -> ExportInputs:
    """The outputs of every stage before export, as small as the bundle allows."""
    folders = {name: root / name for name in ("risk", "gate", "review", "metrics", "utility")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    (root / "params.yaml").write_text(json.dumps(PARAMS), encoding="utf-8")
    (root / "dvc.lock").write_text("schema: '2.0'\n", encoding="utf-8")
    metrics = stage_metrics()
    (folders["risk"] / "histogram.png").write_bytes(PNG)
    (folders["risk"] / "risk_table.csv").write_text("conversation_id,score\nc1,0\n")
    page = risk_report_html(metrics["risk"], 5.0, histogram_png=PNG)
    (folders["risk"] / "report.html").write_text(page, encoding="utf-8")
    gate_outputs(folders["gate"], risk_table([0, 1]))
    record = {
        "id": "c1",
        "context": "sales",
        "risk_band": "low",
        "turns": [{"speaker": "[PERSON_NAME_1]", "text": "Call me at [PHONE_NUMBER_1]."}],
    }
    (folders["review"] / "review_sample.jsonl").write_text(json.dumps(record) + "\n")
    (folders["review"] / "review.html").write_text(review_page_html([record]), encoding="utf-8")
    for stage, values in metrics.items():
        (folders["metrics"] / f"{stage}.json").write_text(json.dumps(values), encoding="utf-8")
    (folders["utility"] / "utility.json").write_text(json.dumps({"variants": {}}))
    (folders["utility"] / "utility.png").write_bytes(PNG)
    return ExportInputs(
        params=root / "params.yaml",
        dvc_lock=root / "dvc.lock",
        gate_result=folders["gate"] / "validation.json",
        gate_page=folders["gate"] / "validation.html",
        risk_dir=folders["risk"],
        risk_histogram=folders["risk"] / "histogram.png",
        review_dir=folders["review"],
        metrics_dir=folders["metrics"],
        adapter_dir=root / "adapter",
        utility_dir=folders["utility"],
    )


def test_a_built_bundle_renders_offline(tmp_path: Path) -> None:
    inputs = stage_outputs(tmp_path / "outputs")
    pi = PiScanPolicy(inventory(), SALT, 4)
    lineage = {**LINEAGE, "registered_model": REGISTRY}
    contents = bundle_contents(
        inputs, dict(PARAMS), metrics=stage_metrics(), lineage=lineage, pi=pi
    )
    bundle = tmp_path / "exports" / "bundle"
    write_scanned_bundle(contents, lineage, bundle_dir=bundle, make_zip=False, pi=pi)

    pages = {p.relative_to(bundle).as_posix() for p in offline_files(bundle)}
    assert pages == {
        "report.html",
        "model_card.html",
        "gate/validation.html",
        "risk/report.html",
        "review/review.html",
    }
    assert remote_references(bundle) == []
    # The report's own links stay inside the bundle: the model card's page and its gate
    # page, which are there.
    _, local = page_references((bundle / "report.html").read_text(encoding="utf-8"))
    links = [ref.split("=", 1)[1] for ref in local if not ref.startswith("img src=data:")]
    assert links == ["model_card.html", GATE_PAGE]
    assert all((bundle / link).is_file() for link in links)
    # The signed manifest covers the card's page as every other file: the bundle verifies.
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    assert {"model_card.html", "model_card.md"} <= set(manifest["files"])
    assert verify_bundle(bundle) == []
    assert not (bundle / "gate" / "data_docs").exists()


def test_the_bundle_carries_every_utility_interval_and_the_report_states_them(
    tmp_path: Path,
) -> None:
    """evaluate's detail file goes in the bundle beside the metrics, and the report's
    utility table reads every score's interval from it."""
    from dataclasses import replace

    inputs = stage_outputs(tmp_path / "outputs")
    intervals = tmp_path / "outputs" / "intervals.json"
    every = {
        "outcome.accuracy": {
            "adapter": {"estimate": 0.4138, "low": 0.2414, "high": 0.5862, "n": 29},
        }
    }
    intervals.write_text(json.dumps({"confidence": 0.95, "metrics": every}), encoding="utf-8")
    inputs = replace(inputs, utility_intervals=intervals)
    metrics = stage_metrics()
    metrics["evaluate"]["adapter"]["outcome.accuracy"] = 0.4138
    pi = PiScanPolicy(inventory(), SALT, 4)
    lineage = {**LINEAGE, "registered_model": REGISTRY}
    contents = bundle_contents(inputs, dict(PARAMS), metrics=metrics, lineage=lineage, pi=pi)
    assert contents["evaluate/intervals.json"] == intervals
    report = contents["report.html"]
    assert isinstance(report, bytes) and b"0.414 [0.241, 0.586]" in report


def test_the_bundle_carries_the_audits_details_and_the_report_states_them(
    tmp_path: Path,
) -> None:
    """The audit's per-item figures, kept out of metrics/audit.json, go in the bundle and
    back into the report's audit evidence."""
    from dataclasses import replace

    from components.core.audit_record import split_details

    details = tmp_path / "details.json"
    findings = {"pii_output": {"detector_findings_by_type": {"USER_NAME": 31}}}
    details.write_text(json.dumps(findings), encoding="utf-8")
    inputs = replace(stage_outputs(tmp_path / "outputs"), audit_details=details)
    metrics = stage_metrics()
    metrics["audit"] = split_details(metrics["audit"])[0]  # as the audit stage writes it
    assert "detector_findings_by_type" not in metrics["audit"]["audits"]["pii_output"]["figures"]
    pi = PiScanPolicy(inventory(), SALT, 4)
    lineage = {**LINEAGE, "registered_model": REGISTRY}
    contents = bundle_contents(inputs, dict(PARAMS), metrics=metrics, lineage=lineage, pi=pi)
    assert contents["audit/details.json"] == details
    report = contents["report.html"]
    assert isinstance(report, bytes) and b"Detector findings, reported and not counted" in report
    assert b"USER_NAME" in report


def test_the_model_card_page_is_the_cards_text_and_fetches_nothing() -> None:
    """model_card.html renders model_card.md (headings, lists, tables); markup or a URL in
    a value (a model name, a corpus path) is shown as text, never run or fetched."""
    from components.export.facts import ExportFacts

    metrics = stage_metrics()
    metrics["base_model"]["source"] = "<script>x()</script> <https://models.example/m>"
    facts = ExportFacts(metrics, PARAMS, REGISTRY, LINEAGE)
    card = model_card_markdown(facts)
    page = model_card_html(card, "Model card")
    assert page.startswith("<!DOCTYPE html>") and "<title>Model card</title>" in page
    assert "<h2>Intended use</h2>" in page and "<table>" in page and "<li>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    remote, local = page_references(page)
    assert remote == [] and local == []
