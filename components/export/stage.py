"""The export stage: the compliance bundle (folder and zip) an auditor verifies, signed with
the producer's key and recorded on the registered version it bundles, or nothing if its PI
scan finds a value of the inventory or a detector hit confirmed in the raw corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.anonymize import AnonymizeConfig, anonymization_policy, entity_detector
from components.core import lineage, paths, tracking
from components.core.errors import InputError
from components.core.salt import read_salt
from components.core.stage import Metrics, StageContext, log_stage
from components.export.bundle import CREATED_AT, created_at
from components.export.compliance import (
    ExportInputs,
    PiScanPolicy,
    bundle_contents,
    write_scanned_bundle,
)
from components.export.config import ExportConfig
from components.export.detector_scan import DetectorScanPolicy
from components.export.registry_record import ARTIFACT_PATH as BUNDLE_ARTIFACTS
from components.export.registry_record import record_bundle
from components.export.signing import SIGNATURE, fingerprint, signing_key, signing_record
from components.export.sources import registry_status
from components.ingest import id_inventory_entries, read_id_pseudonyms, read_inventory


def run(config: ExportConfig, context: StageContext) -> Metrics:
    # The report reads every earlier stage's metrics; all of metrics/*.json goes in the bundle.
    metrics = {stage: context.metrics(stage) for stage in context.stages_before("export")}
    for required in (paths.DVC_LOCK, paths.SALT, paths.RAW_CORPUS):
        if not required.is_file():
            raise InputError(f"{required}: missing; run the pipeline with `dvc repro` first")
    pi = _pi_scan_policy(config, context)
    key = signing_key(config.signing_key, context.base_dir)  # made on first use
    params = dict(context.params)
    inputs = ExportInputs(
        params=context.params_path,
        dvc_lock=paths.DVC_LOCK,
        gate_result=paths.GATE_RESULT,
        gate_page=paths.GATE_PAGE,
        risk_dir=paths.RISK_DIR,
        risk_histogram=paths.RISK_HISTOGRAM,
        review_dir=paths.REVIEW_DIR,
        metrics_dir=paths.METRICS_DIR,
        adapter_dir=paths.ADAPTER,
        utility_dir=paths.UTILITY_REPORT,
        utility_intervals=paths.UTILITY_INTERVALS,
        audit_details=paths.AUDIT_DETAILS,
    )
    with tracking.stage_run("export", context.experiment) as run:
        import mlflow
        from mlflow.tracking import MlflowClient

        parent = run.data.tags.get("mlflow.parentRunId", "")
        lineage_info = _lineage(params, metrics, parent, run.info.run_id)
        # In the lineage the report reads too: the key's fingerprint is on its page.
        lineage_info["signing"] = signing_record(key.public_key())
        contents = bundle_contents(inputs, params, metrics, lineage_info, pi)
        manifest, scan = write_scanned_bundle(
            contents, lineage_info, paths.BUNDLE, config.make_zip, pi, signing_key=key
        )
        signature = (paths.BUNDLE / SIGNATURE).read_text(encoding="ascii").strip()
        # the files before the tags that point to them
        mlflow.log_artifacts(str(paths.BUNDLE), BUNDLE_ARTIFACTS)
        record_bundle(MlflowClient(), manifest, signature, run.info.run_id)
        result = {
            "n_files": len(manifest["files"]),
            "manifest_sha256": manifest["manifest_sha256"],
            "public_key_sha256": fingerprint(key.public_key()),
            "pi_scan": {"n_scanned": len(scan.scanned), "n_skipped": len(scan.skipped)},
        }
        log_stage("export", config, result, [])  # the bundle is logged whole, above
    if parent:
        tracking.finish_pipeline_run(parent)
    return result


def _pi_scan_policy(config: ExportConfig, context: StageContext) -> PiScanPolicy:
    """What the bundle is scanned for: the inventory's values and a user corpus's original
    record ids, and the detector's hits (confirmed in the raw corpus or those ids)."""
    anonymize = context.config(AnonymizeConfig)
    original_ids = read_id_pseudonyms(paths.ID_PSEUDONYMS)
    detector = DetectorScanPolicy(
        # the entity engine: a word-level detector (allow_list) flags most prose
        entity_detector(anonymize, context.base_dir),
        anonymization_policy(anonymize, context.base_dir),
        paths.RAW_CORPUS,
        config.pi_scan_min_chars,
        anonymize.batch_size,
        tuple(original_ids),
    )
    salt = read_salt()
    inventory = [*read_inventory(paths.INVENTORY), *id_inventory_entries(original_ids, salt)]
    return PiScanPolicy(inventory, salt, config.pi_scan_min_chars, detector)


def _lineage(
    params: dict[str, Any], metrics: dict[str, Metrics], parent_run: str, export_run: str
) -> dict[str, Any]:
    return {
        CREATED_AT: created_at(),  # the manifest, the report and the model card state it
        "git_commit": lineage.git_commit(Path.cwd()),
        "params": params,
        "params_hash": lineage.params_hash(params),
        "dvc_lock_sha256": lineage.sha256_file(paths.DVC_LOCK),
        "data_versions": {
            stage: lineage.dvc_lock_outs(paths.DVC_LOCK, stage)
            for stage in ("ingest", "anonymize", "train")
        },
        "mlflow": {"pipeline_run_id": parent_run, "export_run_id": export_run},
        "registered_model": registry_status(metrics["register"]),
        "tool_versions": lineage.tool_versions(),
    }


def summary(metrics: Metrics) -> str:
    """The line ``veiltune export`` prints: the signed bundle and where its report is."""
    return (
        f"{metrics['n_files']} files signed in {paths.BUNDLE} (manifest sha256 "
        f"{metrics['manifest_sha256'][:12]}); report: {paths.BUNDLE / 'report.html'}"
    )
