"""The promotion rule applied to the registry, from signed evidence only.

A new version's evidence is logged first, in the run that logs the model, and read back
from the artifact store like anyone else's: the decision is made from what the store holds
and the signature vouches for, not from the local files nor from any tag. The current
champion's utility comes from its own evidence too; a champion whose evidence does not
hold is never replaced automatically (promote by hand).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from components.core.errors import BackendError
from components.register.card import describe_model, version_description
from components.register.evidence import EvidenceFiles, log_evidence, read_evidence
from components.register.registry import (
    CANDIDATE,
    CHAMPION,
    CHAMPION_TAG,
    PREVIOUS_CHAMPION_TAG,
    ChampionUtility,
    PromotionDecision,
    RegisteredVersion,
    UtilityRule,
    champion_version,
    log_and_register,
    move_champion,
    promotion_decision,
)
from components.register.shared_base import BaseModel

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )
    from mlflow.tracking import MlflowClient


def current_champion(
    client: MlflowClient, model_name: str, *, metric: str, trusted: Ed25519PublicKey
) -> ChampionUtility | None:
    """The version holding ``champion`` and its utility from its verified evidence, or
    None when no version holds it."""
    version = champion_version(client, model_name)
    if version is None:
        return None
    evidence = read_evidence(client, str(version.run_id), trusted=trusted)
    if evidence.problem is not None:
        problem = f"has evidence that does not hold ({evidence.problem})"
        return ChampionUtility(str(version.version), None, problem)
    return ChampionUtility(str(version.version), evidence.metrics.get(metric))


def register_version(
    client: MlflowClient,
    adapter_dir: Path,
    *,
    base: BaseModel,
    model_name: str,
    tags: Mapping[str, str],
    files: EvidenceFiles,
    rule: UtilityRule,
    model_card: str,
    key: Ed25519PrivateKey,
) -> RegisteredVersion:
    """Log ``files`` as the active run's signed evidence, decide from it against the current
    champion, then register the adapter (``registry.log_and_register``) and set its aliases.
    """
    import mlflow

    active = mlflow.active_run()
    if active is None:
        raise BackendError("register: no active MLflow run to log the evidence in")
    run_id = active.info.run_id
    evidence_tags = log_evidence(client, run_id, files=files, key=key)
    previous = current_champion(client, model_name, metric=rule.metric, trusted=key.public_key())
    decision = _decide(client, run_id, trusted=key.public_key(), previous=previous, rule=rule)
    decision_tags = {
        "utility_metric": rule.metric,
        "train_corpus": files.train_corpus,
        "promotion_decision": CHAMPION if decision.champion else CANDIDATE,
        "promotion_reason": decision.reason,
        PREVIOUS_CHAMPION_TAG: previous.version if previous else "",
        CHAMPION_TAG: "yes" if decision.champion else "no",
    }
    version, logged_run = log_and_register(
        client,
        adapter_dir,
        base=base,
        model_name=model_name,
        tags={**tags, **base.to_tags(), **evidence_tags, **decision_tags},
        model_card=model_card,
    )
    client.set_registered_model_alias(model_name, CANDIDATE, version)
    aliases: tuple[str, ...] = (CANDIDATE,)
    if decision.champion:
        move_champion(
            client, model_name, version=version, previous=previous.version if previous else None
        )
        aliases = (CANDIDATE, CHAMPION)
    _describe(client, model_name, version=version, model_card=model_card, decision=decision)
    return RegisteredVersion(
        model_name,
        version,
        aliases,
        f"models:/{model_name}/{version}",
        decision.reason,
        previous.version if previous else None,
        logged_run,
    )


def _describe(
    client: MlflowClient,
    model_name: str,
    *,
    version: str,
    model_card: str,
    decision: PromotionDecision,
) -> None:
    """The version's description (its verdict, then its card) and the model's: what the
    registry's pages show first."""
    description = version_description(model_card, decision.champion, reason=decision.reason)
    client.update_model_version(model_name, version, description=description)
    describe_model(client, model_name)


def _decide(
    client: MlflowClient,
    run_id: str,
    *,
    trusted: Ed25519PublicKey,
    previous: ChampionUtility | None,
    rule: UtilityRule,
) -> PromotionDecision:
    """The rule over the evidence as the store returns it."""
    evidence = read_evidence(client, run_id, trusted=trusted)
    if evidence.problem is not None:
        return PromotionDecision(False, "; ".join(evidence.refusals()))
    return promotion_decision(evidence.decision_inputs(rule.metric), previous, rule=rule)
