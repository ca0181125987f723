"""A version's promotion evidence, kept where a tag cannot forge it.

Tags are anyone's to edit: flipping ``audit_passed`` back to ``true`` once let a blocked
version through ``veiltune promote``. So the promotion rule reads what register stored as
artifacts of the version's run instead (``evidence/``): the gate, audit, train and evaluate
metrics files exactly as they were, and ``evidence.json`` listing each file's sha256, the
decision inputs no file holds (``train.corpus``), the run they belong to and the signing
key's fingerprint, signed with the producer's Ed25519 key (``evidence.sig``, the key of
``components.core.signing``, the bundle's). Reading it back checks, in order: the record is
there, its signature is good by the checkout's key (never a key found beside it), it names
the version's own run (not copied from another), every file hashes as recorded, and the
files parse; only then are the gate, the audits and the corpus judged from their contents.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.core.errors import BackendError, InputError
from components.core.lineage import (
    ADAPTER_KEY,
    CORPUS_KEY,
    TRAIN_CORPUS_KEY,
    TRAINED_CORPUS_KEY,
    adapter_sha256,
)
from components.core.signing import ALGORITHM, fingerprint, sign, signature_problem
from components.gate import GateResult
from components.register.binding import short
from components.register.registry import (
    ADAPTER_ARTIFACT,
    PRODUCT_CORPUS,
    AuditResult,
    Evidence,
    adapter_metrics,
    audit_result,
    refusals,
    utility_of,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )
    from mlflow.entities.model_registry import ModelVersion
    from mlflow.tracking import MlflowClient

EVIDENCE_DIR = "evidence"  # the artifact folder of the version's run
RECORD = "evidence.json"
SIGNATURE = "evidence.sig"  # base64 of the signature over evidence.json's bytes
FORMAT = 1
# The stage metrics the rule reads (as metrics/<name>): numbers and hashes, never text.
METRICS_FILES = ("gate.json", "audit.json", "train.json", "evaluate.json")
_SCORED = ("train.json", "evaluate.json", "audit.json")  # each names the adapter it is of
# Informative only: the decision never reads a tag.
EVIDENCE_TAG = "evidence.sha256"
KEY_TAG = "evidence.public_key_sha256"
NO_KEY = (
    "no signing key in this checkout to check it with (export.signing_key in params.yaml, "
    "or $VEILTUNE_SIGNING_KEY): run in the checkout that registered the version"
)


@dataclass(frozen=True)
class EvidenceFiles:
    """What a registration stakes its promotion on: each metrics file's exact bytes, by
    name; the corpus the adapter learnt from and the adapter's sha256, as register found
    them bound (:mod:`components.register.binding`)."""

    files: Mapping[str, bytes]
    train_corpus: str
    adapter_sha256: str

    @classmethod
    def read(
        cls, metrics_files: Mapping[str, Path], train_corpus: str, *, adapter_sha256: str
    ) -> EvidenceFiles:
        """The metrics files of ``METRICS_FILES`` (name → its path), as they are now."""
        files = {name: metrics_files[name].read_bytes() for name in METRICS_FILES}
        return cls(files, train_corpus, adapter_sha256)

    def hashes(self) -> dict[str, str]:
        return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(self.files.items())}

    def inputs(self) -> dict[str, str]:
        """The decision inputs ``evidence.json`` records beside the files' hashes."""
        return {TRAIN_CORPUS_KEY: self.train_corpus, ADAPTER_KEY: self.adapter_sha256}


def evidence_record(files: EvidenceFiles, run_id: str, *, key: Ed25519PublicKey) -> bytes:
    """``evidence.json``'s bytes: what the signature covers."""
    record = {
        "format": FORMAT,
        "run_id": run_id,
        "files": files.hashes(),
        "inputs": files.inputs(),
        "signing": {
            "algorithm": ALGORITHM,
            "public_key_sha256": fingerprint(key),
            "signature": SIGNATURE,
            "signed": f"the bytes of {RECORD}",
        },
    }
    return (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()


def log_evidence(
    client: MlflowClient, run_id: str, *, files: EvidenceFiles, key: Ed25519PrivateKey
) -> dict[str, str]:
    """Store the files, ``evidence.json`` and its signature as ``evidence/`` artifacts of
    ``run_id``; returns the tags naming them (for people: the rule never reads them)."""
    record = evidence_record(files, run_id, key=key.public_key())
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        for name, data in files.files.items():
            (folder / name).write_bytes(data)
        (folder / RECORD).write_bytes(record)
        (folder / SIGNATURE).write_text(sign(record, key) + "\n", encoding="ascii")
        client.log_artifacts(run_id, str(folder), EVIDENCE_DIR)
    return {
        EVIDENCE_TAG: hashlib.sha256(record).hexdigest(),
        KEY_TAG: fingerprint(key.public_key()),
    }


@dataclass(frozen=True)
class Check:
    """One step of checking a version's evidence, and its one-line verdict."""

    name: str
    passed: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.passed else 'FAIL'} {self.name}: {self.detail}"


@dataclass(frozen=True)
class VerifiedEvidence:
    """A version's evidence as checked. ``integrity`` stops at its first failure; the
    verdicts (gate, audits, corpus) are judged only from evidence that holds."""

    run_id: str
    integrity: tuple[Check, ...]
    verdicts: tuple[Check, ...] = ()
    reasons: tuple[str, ...] = ()  # why the contents forbid champion (the rule's words)
    gate_passed: bool = False
    audit: AuditResult = field(default_factory=lambda: AuditResult(False, {}))
    corpus: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)  # the adapter's, evaluate.json
    adapter: str = ""  # the sha256 of the adapter it is of (``lineage.adapter_sha256``)

    @property
    def checks(self) -> tuple[Check, ...]:
        return self.integrity + self.verdicts

    @property
    def problem(self) -> str | None:
        """What failed in the evidence itself (None: it holds)."""
        failed = next((c for c in self.integrity if not c.passed), None)
        return None if failed is None else f"{failed.name}: {failed.detail}"

    def refusals(self) -> list[str]:
        """Why this version may not be champion: its evidence failing, else its contents."""
        if self.problem is not None:
            return [f"its evidence does not hold ({self.problem})"]
        return list(self.reasons)

    def decision_inputs(self, metric: str) -> Evidence:
        """What the promotion rule weighs, from evidence that holds."""
        if self.problem is not None:
            raise InputError(f"run {self.run_id}: the evidence does not hold ({self.problem})")
        source = f"{EVIDENCE_DIR}/evaluate.json of run {self.run_id}"
        utility = utility_of(self.metrics, metric, source=source)
        return Evidence(
            self.gate_passed, self.audit.passed, self.audit.failed, self.corpus, utility
        )


def read_evidence(
    client: MlflowClient, run_id: str, *, trusted: Ed25519PublicKey | None
) -> VerifiedEvidence:
    """Fetch the ``evidence/`` artifacts of ``run_id`` and check them with ``trusted`` (the
    checkout's key; None when it has none, which fails the signature check)."""
    from mlflow.exceptions import MlflowException

    with tempfile.TemporaryDirectory() as work:
        try:
            folder = Path(client.download_artifacts(run_id, EVIDENCE_DIR, work))
        except (MlflowException, OSError) as exc:
            if isinstance(exc, MlflowException) and exc.error_code not in (
                "RESOURCE_DOES_NOT_EXIST",
                "INVALID_PARAMETER_VALUE",
            ):
                raise BackendError(f"artifact store: {exc.message}") from exc
            folder = Path(work) / "none"
        blobs = (
            {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
            if folder.is_dir()
            else {}
        )
    return judge_evidence(blobs, run_id, trusted=trusted)


def judge_evidence(
    blobs: Mapping[str, bytes], run_id: str, *, trusted: Ed25519PublicKey | None
) -> VerifiedEvidence:
    """Check the evidence files of ``run_id`` (by name), then judge them (pure)."""
    checks: list[Check] = []
    for check in _integrity_checks(blobs, run_id, trusted=trusted):
        checks.append(check)
        if not check.passed:
            return VerifiedEvidence(run_id, tuple(checks))
    try:
        gate = GateResult.from_metrics(_json(blobs, "gate.json"), "gate.json")
        audit = audit_result(_json(blobs, "audit.json"), "audit.json")
        metrics = adapter_metrics(_json(blobs, "evaluate.json"), "evaluate.json")
    except InputError as exc:
        checks.append(Check("contents", False, str(exc)))
        return VerifiedEvidence(run_id, tuple(checks))
    inputs = (_record(blobs) or {}).get("inputs") or {}
    corpus = str(inputs.get(TRAIN_CORPUS_KEY, ""))
    return VerifiedEvidence(
        run_id,
        (*checks, Check("contents", True, "the gate, audit and evaluate metrics parse")),
        _verdicts(gate, audit, corpus=corpus),
        tuple(refusals(gate.passed, audit.passed, failed_audits=audit.failed, corpus=corpus)),
        gate.passed,
        audit,
        corpus,
        metrics,
        str(inputs.get(ADAPTER_KEY, "")),
    )


def read_version_evidence(
    client: MlflowClient, version: ModelVersion, *, trusted: Ed25519PublicKey | None
) -> VerifiedEvidence:
    """:func:`read_evidence` of a registered version's run and, once that holds, the
    version's own adapter artifact hashed against the adapter the evidence names: what
    MLflow serves is what was audited."""
    evidence = read_evidence(client, str(version.run_id), trusted=trusted)
    if evidence.problem is not None:
        return evidence
    check = _registered_adapter(version, evidence.adapter)
    return replace(evidence, integrity=(*evidence.integrity, check))


def _registered_adapter(version: ModelVersion, named: str) -> Check:
    import mlflow
    from mlflow.exceptions import MlflowException

    uri = f"models:/{version.name}/{version.version}/artifacts/{ADAPTER_ARTIFACT}"
    with tempfile.TemporaryDirectory() as work:
        try:
            folder = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=work))
            found = adapter_sha256(folder)
        except (MlflowException, OSError, InputError) as exc:
            return Check("registered adapter", False, f"{uri}: cannot be read ({exc})")
    if found != named:
        return Check(
            "registered adapter",
            False,
            f"v{version.version}'s adapter is {short(found)}, its evidence is of {short(named)}",
        )
    return Check("registered adapter", True, f"v{version.version}'s adapter is {short(named)}")


def _integrity_checks(
    blobs: Mapping[str, bytes], run_id: str, *, trusted: Ed25519PublicKey | None
) -> Iterator[Check]:
    """The checks of the evidence itself, in order; the caller stops at the first failure."""
    record = _record(blobs)
    yield _found(blobs, record, run_id=run_id)
    if record is None:
        return
    yield _signed(blobs, record, trusted=trusted)
    yield _bound(record, run_id)
    yield _hashed(blobs, record)
    yield _one_adapter(blobs, record)


def _record(blobs: Mapping[str, bytes]) -> dict[str, Any] | None:
    """``evidence.json`` parsed, or None when it is missing or not a record."""
    try:
        parsed = json.loads(blobs[RECORD])
    except (KeyError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("files"), dict):
        return None
    return parsed


def _found(blobs: Mapping[str, bytes], record: dict[str, Any] | None, *, run_id: str) -> Check:
    if RECORD not in blobs:
        return Check(
            "evidence",
            False,
            f"no {EVIDENCE_DIR}/{RECORD} in run {run_id}: registered without signed evidence",
        )
    if record is None:
        return Check("evidence", False, f"{RECORD} is not an evidence record (corrupt)")
    return Check("evidence", True, f"{EVIDENCE_DIR}/{RECORD} found in run {run_id}")


def _signed(
    blobs: Mapping[str, bytes], record: dict[str, Any], *, trusted: Ed25519PublicKey | None
) -> Check:
    if trusted is None:
        return Check("signature", False, NO_KEY)
    if SIGNATURE not in blobs:
        return Check(
            "signature",
            False,
            f"{SIGNATURE}: missing: the evidence is unsigned, so nothing vouches for it",
        )
    named = (record.get("signing") or {}).get("public_key_sha256")
    names = (SIGNATURE, RECORD, "the evidence")
    problem = signature_problem(
        blobs[RECORD], blobs[SIGNATURE], named_key=named, trusted=trusted, names=names
    )
    if problem is not None:
        return Check("signature", False, problem)
    return Check("signature", True, f"{ALGORITHM}, by the trusted key sha256 {named}")


def _bound(record: Mapping[str, Any], run_id: str) -> Check:
    named = record.get("run_id")
    if named != run_id:
        return Check(
            "run",
            False,
            f"{RECORD} names run {named}, the version's run is {run_id} "
            "(evidence copied from another version)",
        )
    return Check("run", True, f"{RECORD} names the version's run {run_id}")


def _hashed(blobs: Mapping[str, bytes], record: Mapping[str, Any]) -> Check:
    listed: Mapping[str, Any] = record["files"]
    for name in METRICS_FILES:
        if name not in listed:
            return Check("files", False, f"{name}: not listed in {RECORD}")
    for name, recorded in sorted(listed.items()):
        if name not in blobs:
            return Check("files", False, f"{name}: missing from {EVIDENCE_DIR}/")
        found = hashlib.sha256(blobs[name]).hexdigest()
        if found != recorded:
            return Check(
                "files",
                False,
                f"{name}: sha256 {found}, {RECORD} records {recorded} (changed after it "
                "was registered)",
            )
    return Check("files", True, f"{', '.join(sorted(listed))} hash as {RECORD} records")


def _one_adapter(blobs: Mapping[str, bytes], record: Mapping[str, Any]) -> Check:
    """The adapter the record names is the one train wrote, evaluate scored and audit
    attacked, and the corpus it names is the one train read (the gated one for the product
    corpus): evidence cannot describe another model."""
    inputs = record.get("inputs") or {}
    named, corpus = inputs.get(ADAPTER_KEY), inputs.get(TRAIN_CORPUS_KEY)
    if not named:
        return Check(
            "adapter",
            False,
            f"{RECORD} names no adapter (registered before evidence was bound to it): "
            "register the adapter again",
        )
    try:
        train, gate = _json(blobs, "train.json"), _json(blobs, "gate.json")
        scored = {name: _json(blobs, name).get(ADAPTER_KEY) for name in _SCORED}
    except InputError as exc:
        return Check("adapter", False, str(exc))
    for name, found in scored.items():
        if found != named:
            return Check(
                "adapter", False, f"{name} is of adapter {short(found)}, not {short(named)}"
            )
    if train.get(TRAIN_CORPUS_KEY) != corpus:
        return Check(
            "adapter",
            False,
            f"train.json read the {train.get(TRAIN_CORPUS_KEY)} corpus, {RECORD} says {corpus}",
        )
    if corpus == PRODUCT_CORPUS and train.get(TRAINED_CORPUS_KEY) != gate.get(CORPUS_KEY):
        return Check("adapter", False, "train.json's corpus is not the one gate.json passed")
    return Check(
        "adapter",
        True,
        f"train, evaluate and audit are of adapter {short(named)}, learnt from the {corpus} corpus",
    )


def _json(blobs: Mapping[str, bytes], name: str) -> Mapping[str, Any]:
    try:
        parsed = json.loads(blobs[name])
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: not valid JSON") from exc
    if not isinstance(parsed, Mapping):
        raise InputError(f"{name}: not a JSON object")
    return parsed


def _verdicts(gate: GateResult, audit: AuditResult, *, corpus: str) -> tuple[Check, ...]:
    statistic = f"μ+σ {gate.mu_plus_sigma:g}, threshold {gate.threshold:g}"
    audits = ", ".join(
        f"{n} {'passed' if ok else 'failed'}" for n, ok in sorted(audit.audits.items())
    )
    audits_ok = audit.passed and not audit.failed
    overall = "passed" if audits_ok else "failed"
    return (
        Check("gate", gate.passed, f"{'passed' if gate.passed else 'failed'} ({statistic})"),
        Check("audits", audits_ok, f"{overall}" + (f" ({audits})" if audits else "")),
        Check(
            "corpus",
            corpus == PRODUCT_CORPUS,
            f"trained on the {corpus or 'unrecorded'} corpus"
            + ("" if corpus == PRODUCT_CORPUS else ", a baseline that is never champion"),
        ),
    )
