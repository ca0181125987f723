"""People move the ``champion`` alias by hand: ``veiltune promote`` and ``veiltune demote``;
``veiltune promote --check`` audits the version holding it.

A version is judged by its signed evidence (``components.register.evidence``), never by its
tags: evidence that is missing, unsigned, signed by another key, copied from another run or
changed after registration refuses the promotion, and so do a failed gate or audit or a
baseline corpus in evidence that holds. Forced with a reason, it is promoted anyway; the
reason and the time stay on the version as tags. Setting the alias takes it from the
previous champion (an MLflow alias names one version). MLflow's own alias editor (its UI,
``set_registered_model_alias``) checks nothing: ``--check`` is how to find out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from components.core.errors import BackendError, InputError, PromotionRefused
from components.register.card import describe_model
from components.register.evidence import Check, read_version_evidence
from components.register.registry import (
    CHAMPION,
    CHAMPION_TAG,
    champion_version,
    move_champion,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from mlflow.entities.model_registry import ModelVersion
    from mlflow.tracking import MlflowClient


@dataclass(frozen=True)
class ChampionCheck:
    """The champion's evidence checked: one verdict per check."""

    model_name: str
    version: str
    checks: tuple[Check, ...]

    @property
    def holds(self) -> bool:
        return all(check.passed for check in self.checks)

    def lines(self) -> list[str]:
        verdict = "holds" if self.holds else "does NOT hold"
        head = f"{self.model_name} v{self.version} (champion): its evidence {verdict}"
        return [head, *(f"  {check.line()}" for check in self.checks)]

    def failure(self) -> str:
        failed = "; ".join(f"{c.name}: {c.detail}" for c in self.checks if not c.passed)
        return f"champion {self.model_name} v{self.version} fails its check: {failed}"


def promote(
    client: MlflowClient,
    model_name: str,
    *,
    version: str,
    trusted: Ed25519PublicKey | None,
    force: bool = False,
    reason: str = "",
) -> dict[str, Any]:
    """Give ``champion`` to a version by hand, judged by its evidence checked with
    ``trusted`` (the checkout's key); one that fails needs ``force``.

    Raises:
        InputError: an unknown model or version, or ``force`` without a reason.
        PromotionRefused: its evidence does not hold, or shows a failed gate or audit or a
            baseline corpus.
    """
    if force and not reason.strip():
        raise InputError("a forced promotion needs a non-empty reason (--reason)")
    if reason and not force:
        raise InputError("--reason records why a promotion was forced; pass it with --force")
    found = _model_version(client, model_name, version=version)
    blocked = read_version_evidence(client, found, trusted=trusted).refusals()
    if blocked and not force:
        raise PromotionRefused(
            f"refusing to promote {model_name} v{version}: {'; '.join(blocked)}. "
            "To promote it anyway, pass --force --reason '<why>'"
        )
    holder = champion_version(client, model_name)
    previous = str(holder.version) if holder is not None else None
    if previous == version:
        return _summary(
            model_name,
            version,
            previous=previous,
            message=f"{model_name} v{version} is already champion",
        )
    now = _now()
    client.set_model_version_tag(model_name, version, "promoted_at", now)
    if force:
        client.set_model_version_tag(model_name, version, "forced_promotion_reason", reason)
        client.set_model_version_tag(model_name, version, "forced_promotion_at", now)
    move_champion(client, model_name, version=version, previous=previous)
    describe_model(client, model_name)
    lost = f"; v{previous} lost the champion alias" if previous else ""
    forced = f" (forced over: {'; '.join(blocked)})" if blocked else ""
    message = f"{model_name} v{version} is now champion{forced}{lost}"
    return _summary(model_name, version, previous=previous, message=message)


def check_champion(
    client: MlflowClient, model_name: str, *, trusted: Ed25519PublicKey | None
) -> ChampionCheck:
    """Check the evidence of the version holding ``champion``, however it got there.

    Raises:
        PromotionRefused: no version holds ``champion``.
    """
    holder = champion_version(client, model_name)
    if holder is None:
        raise PromotionRefused(
            f"{model_name}: no version holds champion (or no such model is registered); "
            "nothing to check"
        )
    evidence = read_version_evidence(client, holder, trusted=trusted)
    return ChampionCheck(model_name, str(holder.version), evidence.checks)


def demote(client: MlflowClient, model_name: str, *, version: str) -> dict[str, Any]:
    """Take ``champion`` from a version; afterwards no version is champion."""
    found = _model_version(client, model_name, version=version)
    if CHAMPION not in found.aliases:
        holder = champion_version(client, model_name)
        who = f"v{holder.version} is" if holder is not None else "no version is"
        raise InputError(f"{model_name} v{version} is not champion ({who} champion)")
    client.delete_registered_model_alias(model_name, CHAMPION)
    client.set_model_version_tag(model_name, version, "demoted_at", _now())
    client.set_model_version_tag(model_name, version, CHAMPION_TAG, "no: demoted")
    describe_model(client, model_name)
    message = (
        f"{model_name} v{version} is no longer champion; no version is champion now "
        "(`veiltune promote VERSION` names one)"
    )
    return _summary(model_name, version, previous=version, message=message)


def _summary(
    model_name: str, version: str, *, previous: str | None, message: str
) -> dict[str, Any]:
    return {
        "model_name": model_name,
        "model_version": version,
        "previous_champion": previous,
        "message": message,
    }


def _model_version(client: MlflowClient, model_name: str, *, version: str) -> ModelVersion:
    from mlflow.exceptions import MlflowException

    if not version.isdigit() or int(version) < 1:
        raise InputError(f"VERSION must be a version number such as 3, got {version!r}")
    try:
        return client.get_model_version(model_name, version)
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise BackendError(f"model registry: {exc.message}") from exc
    quoted = model_name.replace("'", "\\'")
    known = sorted(int(v.version) for v in client.search_model_versions(f"name = '{quoted}'"))
    if not known:
        raise InputError(f"no registered model {model_name!r} in the tracking store")
    raise InputError(
        f"{model_name} has no version {version} (versions: {', '.join(map(str, known))})"
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
