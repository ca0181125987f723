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
from components.core.stage import Metrics, StageContext
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
    read = context.input
    # DVC's record of the run: the workspace's lineage, which no stage can declare.
    lock = context.workspace / paths.DVC_LOCK
    for required in (lock, read(paths.SALT), read(paths.RAW_CORPUS)):
        if not required.is_file():
            raise InputError(f"{required}: missing; run the pipeline with `dvc repro` first")
    pi = _pi_scan_policy(config, context)
    key = signing_key(config.signing_key, context.base_dir)  # made on first use
    params = dict(context.params)
    inputs = ExportInputs(
        params=context.params_path,
        dvc_lock=lock,
        gate_result=read(paths.GATE_RESULT),
        gate_page=read(paths.GATE_PAGE),
        risk_dir=read(paths.RISK_DIR),
        risk_histogram=read(paths.RISK_HISTOGRAM),
        review_dir=read(paths.REVIEW_DIR),
        # every stage's metrics file, each declared (context.metrics above)
        metrics_dir=context.workspace / paths.METRICS_DIR,
        adapter_dir=read(paths.ADAPTER),
        utility_dir=read(paths.UTILITY_REPORT),
        utility_intervals=read(paths.UTILITY_INTERVALS),
        audit_details=read(paths.AUDIT_DETAILS),
    )
    bundle = context.output(paths.BUNDLE)
    with context.mlflow_run() as run:
        import mlflow
        from mlflow.tracking import MlflowClient

        parent = run.data.tags.get("mlflow.parentRunId", "")
        lineage_info = _lineage(
            params, metrics, runs=(parent, run.info.run_id), workspace=context.workspace
        )
        # In the lineage the report reads too: the key's fingerprint is on its page.
        lineage_info["signing"] = signing_record(key.public_key())
        contents = bundle_contents(inputs, params, metrics=metrics, lineage=lineage_info, pi=pi)
        # The zip always: dvc.yaml declares it, and DVC fails a stage whose output is missing.
        manifest, scan = write_scanned_bundle(
            contents, lineage_info, bundle_dir=bundle, make_zip=True, pi=pi, signing_key=key
        )
        signature = (bundle / SIGNATURE).read_text(encoding="ascii").strip()
        # the files before the tags that point to them
        mlflow.log_artifacts(str(bundle), BUNDLE_ARTIFACTS)
        record_bundle(MlflowClient(), manifest, signature=signature, run_id=run.info.run_id)
        result = {
            "n_files": len(manifest["files"]),
            "manifest_sha256": manifest["manifest_sha256"],
            "public_key_sha256": fingerprint(key.public_key()),
            "pi_scan": {"n_scanned": len(scan.scanned), "n_skipped": len(scan.skipped)},
        }
        context.record(result)  # the bundle is logged whole, above
    if parent:
        tracking.finish_pipeline_run(parent, root=context.workspace)
    return result


def _pi_scan_policy(config: ExportConfig, context: StageContext) -> PiScanPolicy:
    """What the bundle is scanned for: the inventory's values and a user corpus's original
    record ids, and the detector's hits (confirmed in the raw corpus or those ids)."""
    anonymize = context.config(AnonymizeConfig)
    original_ids = read_id_pseudonyms(context.input(paths.ID_PSEUDONYMS))
    detector = DetectorScanPolicy(
        # the entity engine: a word-level detector (allow_list) flags most prose
        entity_detector(anonymize, context.base_dir),
        anonymization_policy(anonymize, context.base_dir),
        context.input(paths.RAW_CORPUS),
        config.pi_scan_min_chars,
        anonymize.batch_size,
        tuple(original_ids),
    )
    salt = read_salt(context.input(paths.SALT))
    inventory = [
        *read_inventory(context.input(paths.INVENTORY)),
        *id_inventory_entries(original_ids, salt),
    ]
    return PiScanPolicy(inventory, salt, config.pi_scan_min_chars, detector)


def _lineage(
    params: dict[str, Any], metrics: dict[str, Metrics], *, runs: tuple[str, str], workspace: Path
) -> dict[str, Any]:
    """The bundle's lineage: the commit, params and DVC lock of ``workspace``, and the MLflow
    ``runs`` (the pipeline's, the export's)."""
    lock = workspace / paths.DVC_LOCK
    return {
        CREATED_AT: created_at(),  # the manifest, the report and the model card state it
        "git_commit": lineage.git_commit(workspace),
        "params": params,
        "params_hash": lineage.params_hash(params),
        "dvc_lock_sha256": lineage.sha256_file(lock),
        "data_versions": {
            stage: lineage.dvc_lock_outs(lock, stage) for stage in ("ingest", "anonymize", "train")
        },
        "mlflow": {"pipeline_run_id": runs[0], "export_run_id": runs[1]},
        "registered_model": registry_status(metrics["register"]),
        "tool_versions": lineage.tool_versions(),
    }


def summary(metrics: Metrics) -> str:
    """The line ``veiltune export`` prints: the signed bundle and where its report is."""
    return (
        f"{metrics['n_files']} files signed in {paths.BUNDLE} (manifest sha256 "
        f"{metrics['manifest_sha256'][:12]}); report: {paths.BUNDLE / 'report.html'}"
    )
