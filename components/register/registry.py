"""The MLflow model registry: every trained adapter becomes a version; aliases mark status.

A version always gets ``candidate``. It gets ``champion`` only when the corpus passed the
gate, the model passed every leakage audit, it learnt from the anonymized corpus, and its
utility is at least the current champion's. This module holds the rule (pure), the parsers
of the metrics it reads, the version's tags (for people: the rule reads the signed evidence
of ``components.register.evidence``, never a tag) and the MLflow calls that log a version;
``components.register.promotion`` applies the rule. People move ``champion`` by hand with
``components.register.champion``; only aliases are used, never MLflow's deprecated stages.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.core.errors import BackendError, InputError
from components.core.lineage import sha256_file
from components.gate import GateResult
from components.register.pyfunc_code import pyfunc_code
from components.register.shared_base import BaseModel, shared_base_model

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion
    from mlflow.tracking import MlflowClient

CANDIDATE, CHAMPION = "candidate", "champion"
PRODUCT_CORPUS = "anonymized"
# The logged model's folder of the adapter (``artifacts/adapter`` of the version's model),
# which promotion hashes against the adapter its evidence names.
ADAPTER_ARTIFACT = "adapter"
README = "README.md"  # the adapter folder's model card, in place of peft's template
EVAL_TAG_PREFIX = "eval."
# The adapter's files and the evidence it was registered with, hashed: a second register run
# with nothing new finds its version instead of adding a copy.
FINGERPRINT_TAG = "registration_fingerprint"
PREVIOUS_CHAMPION_TAG = "previous_champion"
# The few short tags the registry's version list shows at a glance (the full figures are
# the other tags, the reasoning the version's description).
CHAMPION_TAG = "champion"
_MODEL_REQUIREMENTS = ("torch", "transformers", "peft", "accelerate", "mlflow")


@dataclass(frozen=True)
class AuditResult:
    passed: bool
    audits: Mapping[str, bool]  # each audit's own verdict, by name

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(sorted(name for name, passed in self.audits.items() if not passed))

    def to_tags(self) -> dict[str, str]:
        tags = {"audit_passed": _flag(self.passed)}
        tags.update({f"audit.{name}.passed": _flag(ok) for name, ok in self.audits.items()})
        return tags


@dataclass(frozen=True)
class Evidence:
    """What a new version brings to the promotion decision."""

    gate_passed: bool
    audit_passed: bool
    failed_audits: tuple[str, ...]
    corpus: str
    utility: float


@dataclass(frozen=True)
class ChampionUtility:
    """The current champion and its utility from its evidence (None: its evidence does not
    hold, ``problem`` says why, or records no such metric)."""

    version: str
    utility: float | None
    problem: str = ""


@dataclass(frozen=True)
class UtilityRule:
    metric: str  # a key of evaluate.json's adapter section
    higher_is_better: bool = True


@dataclass(frozen=True)
class PromotionDecision:
    champion: bool
    reason: str


@dataclass(frozen=True)
class RegisteredVersion:
    name: str
    version: str
    aliases: tuple[str, ...]
    model_uri: str
    decision_reason: str
    previous_champion: str | None
    run_id: str = ""  # the run that logged the model

    def to_metrics(self) -> dict[str, Any]:
        return {
            "model_name": self.name,
            "model_version": self.version,
            "aliases": list(self.aliases),
            "champion": CHAMPION in self.aliases,
            "decision_reason": self.decision_reason,
            "previous_champion": self.previous_champion,
            "run_id": self.run_id,
        }


def promotion_decision(
    evidence: Evidence, champion: ChampionUtility | None, *, rule: UtilityRule
) -> PromotionDecision:
    """Whether a new version earns ``champion``, and why (pure: no MLflow)."""
    blocked = refusals(
        evidence.gate_passed,
        evidence.audit_passed,
        failed_audits=evidence.failed_audits,
        corpus=evidence.corpus,
    )
    if blocked:
        return PromotionDecision(False, "; ".join(blocked))
    new = f"{rule.metric} {evidence.utility:g}"
    if not math.isfinite(evidence.utility):
        return PromotionDecision(False, f"{new} is not a finite number")
    if champion is None:
        return PromotionDecision(True, f"no current champion; {new}")
    if champion.utility is None:
        why = champion.problem or f"has no {rule.metric} in its evidence to compare with"
        return PromotionDecision(
            False, f"champion v{champion.version} {why}; promote by hand with `veiltune promote`"
        )
    at_least = (
        evidence.utility >= champion.utility
        if rule.higher_is_better
        else evidence.utility <= champion.utility
    )
    wins, loses = (">", "<") if rule.higher_is_better else ("<", ">")
    # A tie promotes: the newer version carries the newer code and data.
    sign = ("=" if evidence.utility == champion.utility else wins) if at_least else loses
    direction = "" if rule.higher_is_better else " (lower is better)"
    reason = f"{new} {sign} champion v{champion.version}'s {champion.utility:g}{direction}"
    return PromotionDecision(at_least, reason)


def refusals(
    gate_passed: bool, audit_passed: bool, *, failed_audits: tuple[str, ...], corpus: str
) -> list[str]:
    """Why a version may never be champion, whatever its utility (empty: nothing stops it)."""
    reasons = []
    if not gate_passed:
        reasons.append("gate failed")
    if not audit_passed or failed_audits:
        named = f" ({', '.join(failed_audits)})" if failed_audits else ""
        reasons.append(f"audit failed{named}")
    if corpus != PRODUCT_CORPUS:
        reasons.append(f"trained on the {corpus} corpus, a baseline that is never champion")
    return reasons


def gate_tags(gate: GateResult) -> dict[str, str]:
    """The gate's verdict as version tags."""
    return {
        "gate_passed": _flag(gate.passed),
        "gate_mu_plus_sigma": str(gate.mu_plus_sigma),
        "gate_threshold": str(gate.threshold),
    }


def audit_result(metrics: Mapping[str, Any], source: str) -> AuditResult:
    """The overall and per-audit verdicts; an older file without ``audits`` has none listed."""
    audits = metrics.get("audits", {})
    if not isinstance(audits, Mapping):
        raise InputError(f"{source}: 'audits' must be a mapping of audit name to result")
    flags = {
        str(name): bool(_required(result, "passed", source=f"{source}: audits.{name}"))
        for name, result in audits.items()
    }
    return AuditResult(bool(_required(metrics, "passed", source=source)), flags)


def adapter_metrics(evaluation: Mapping[str, Any], source: str) -> dict[str, float]:
    """The adapter's numeric evaluation metrics, by key (e.g. ``summary.rouge1``)."""
    section = _required(evaluation, "adapter", source=source)
    if not isinstance(section, Mapping):
        raise InputError(f"{source}: 'adapter' must be a mapping of metric name to number")
    return {
        str(k): float(v)
        for k, v in section.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def utility_of(metrics: Mapping[str, float], metric: str, *, source: str) -> float:
    """The utility metric's value, or an error naming the param, the key and the file."""
    if metric not in metrics:
        raise InputError(
            f"{source}: no numeric key '{metric}' in the 'adapter' section "
            f"(register.utility_metric); it has: {', '.join(sorted(metrics)) or 'none'}"
        )
    return metrics[metric]


def version_tags(
    gate: GateResult,
    audit: AuditResult,
    *,
    evaluation: Mapping[str, float],
    lineage: Mapping[str, str],
) -> dict[str, str]:
    """The tags a new version carries: gate, audits, ``eval.*`` metrics and lineage."""
    tags = {**gate_tags(gate), **audit.to_tags(), **lineage}
    tags.update({f"{EVAL_TAG_PREFIX}{k}": str(v) for k, v in evaluation.items()})
    return tags


def headline_tags(
    gate: GateResult, audit: AuditResult, *, held: Mapping[str, bool], metric: str, utility: float
) -> dict[str, str]:
    """The gate's, the audits' and the utility's verdicts in a few short words; ``held``:
    the audits held to a threshold and their verdicts (``core.headline.held_audits``)."""
    compared = "≤" if gate.passed else ">"
    verdict = "passed" if gate.passed else "failed"
    passed = sum(held.values())
    audits = f"{passed}/{len(held)} passed" if held else "passed"
    return {
        "gate": f"{verdict}, μ+σ {gate.mu_plus_sigma:g} {compared} {gate.threshold:g}",
        "audits": audits if audit.passed else f"failed ({audits})",
        "utility": f"{metric} {utility:g}",
    }


def champion_version(client: MlflowClient, model_name: str) -> ModelVersion | None:
    """The version holding ``champion``, or None (no such model, or no champion yet)."""
    from mlflow.exceptions import MlflowException

    try:
        # The model's alias map, not a lookup by alias: a missing alias is an "invalid
        # parameter" error in MLflow, indistinguishable from other bad requests.
        aliases = client.get_registered_model(model_name).aliases
        if CHAMPION not in aliases:
            return None
        return client.get_model_version(model_name, str(aliases[CHAMPION]))
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise BackendError(f"model registry: {exc.message}") from exc


def registration_fingerprint(
    adapter_dir: Path, tags: Mapping[str, str], *, evidence: Mapping[str, Any], rule: UtilityRule
) -> str:
    """What makes a registration new: the adapter's files, its evidence and the rule it is
    judged by (the git commit aside: a commit that changes nothing trained is nothing new)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in adapter_dir.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(adapter_dir).as_posix()}\0".encode())
        digest.update(bytes.fromhex(sha256_file(path)))
    stable = {k: v for k, v in tags.items() if k != "git_commit"}
    digest.update(json.dumps([stable, evidence, asdict(rule)], sort_keys=True).encode())
    return digest.hexdigest()


def find_registered(
    client: MlflowClient, model_name: str, *, fingerprint: str
) -> RegisteredVersion | None:
    """The version already registered with ``fingerprint`` (its aliases as they are now),
    or None."""
    from mlflow.exceptions import MlflowException

    query = f"name='{model_name}' and tags.{FINGERPRINT_TAG}='{fingerprint}'"
    try:
        found = client.search_model_versions(query)
        if not found:
            return None
        newest = max(found, key=lambda v: int(v.version))
        version = client.get_model_version(model_name, str(newest.version))
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise BackendError(f"model registry: {exc.message}") from exc
    return RegisteredVersion(
        model_name,
        str(version.version),
        tuple(sorted(version.aliases)),
        f"models:/{model_name}/{version.version}",
        version.tags.get("promotion_reason", ""),
        version.tags.get(PREVIOUS_CHAMPION_TAG) or None,
        str(version.run_id or ""),
    )


def with_model_card(adapter_dir: Path, card: str, *, work: Path) -> Path:
    """A copy of ``adapter_dir`` under ``work`` whose ``README.md`` is ``card``."""
    copy = work / ADAPTER_ARTIFACT  # MLflow keeps the folder's name: promotion finds it there
    shutil.copytree(adapter_dir, copy)
    (copy / README).write_text(card, encoding="utf-8")
    return copy


def log_and_register(
    client: MlflowClient,
    adapter_dir: Path,
    *,
    base: BaseModel,
    model_name: str,
    tags: Mapping[str, str],
    model_card: str,
) -> tuple[str, str]:
    """Log the adapter in the active run, ``model_card`` as its ``README.md``, on ``base``
    logged once for every version; register it with ``tags``. Returns (version, run id)."""
    import mlflow

    from components.train import (
        AdapterPyfunc,
        pyfunc_config,
        pyfunc_input_example,
        pyfunc_signature,
    )

    active = mlflow.active_run()
    if active is None:
        raise BackendError("register: no active MLflow run to log the model in")
    base_ref = shared_base_model(client, active.info.experiment_id, base=base)
    with tempfile.TemporaryDirectory() as work:
        # The card replaces peft's template README (39 "More Information Needed").
        adapter = with_model_card(adapter_dir, model_card, work=Path(work))
        # The pyfunc's own modules travel with it: it loads where veiltune is not installed.
        code = pyfunc_code(Path(work) / "code")
        # MLflow loads the logged model and answers the input example before it returns.
        info = mlflow.pyfunc.log_model(
            name="adapter",
            python_model=AdapterPyfunc(),
            artifacts={ADAPTER_ARTIFACT: str(adapter)},
            model_config=pyfunc_config(base_ref),
            signature=pyfunc_signature(),
            input_example=pyfunc_input_example(),
            pip_requirements=[f"{p}=={metadata.version(p)}" for p in _MODEL_REQUIREMENTS],
            code_paths=[str(code)],
        )
    registered = mlflow.register_model(info.model_uri, model_name, tags=dict(tags))
    return str(registered.version), str(registered.run_id or "")


def move_champion(
    client: MlflowClient, model_name: str, *, version: str, previous: str | None
) -> None:
    """Give ``champion`` to ``version``; the previous holder is tagged ``superseded_by``
    (and its ``champion`` tag says so)."""
    # An alias names one version: setting it takes it from the previous champion.
    client.set_registered_model_alias(model_name, CHAMPION, version)
    client.set_model_version_tag(model_name, version, CHAMPION_TAG, "yes")
    if previous is not None and previous != version:
        client.set_model_version_tag(model_name, previous, "superseded_by", version)
        client.set_model_version_tag(
            model_name, previous, CHAMPION_TAG, f"no: superseded by v{version}"
        )


def _required(metrics: Mapping[str, Any], key: str, *, source: str) -> Any:
    if not isinstance(metrics, Mapping) or key not in metrics:
        raise InputError(f"{source}: missing key '{key}'")
    return metrics[key]


def _flag(value: bool) -> str:
    return "true" if value else "false"
