"""People move the ``champion`` alias by hand: ``veiltune promote`` and ``veiltune demote``.

A version whose tags show a failed gate or audit, or a baseline corpus, is promoted only when
forced with a reason; the reason and the time stay on the version as tags. Setting the alias
takes it from the previous champion (an MLflow alias names one version).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from components.core.errors import BackendError, InputError, PromotionRefused
from components.register.registry import (
    CHAMPION,
    PRODUCT_CORPUS,
    champion_version,
    move_champion,
    refusals,
)

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion
    from mlflow.tracking import MlflowClient


def promote(
    client: MlflowClient, model_name: str, version: str, force: bool = False, reason: str = ""
) -> dict[str, Any]:
    """Give ``champion`` to a version by hand; one whose gate or audit failed needs ``force``.

    Raises:
        InputError: an unknown model or version, or ``force`` without a reason.
        PromotionRefused: the version's tags show a failed gate or audit, a baseline corpus.
    """
    if force and not reason.strip():
        raise InputError("a forced promotion needs a non-empty reason (--reason)")
    if reason and not force:
        raise InputError("--reason records why a promotion was forced; pass it with --force")
    found = _model_version(client, model_name, version)
    blocked = _refusals_from_tags(found.tags)
    if blocked and not force:
        raise PromotionRefused(
            f"refusing to promote {model_name} v{version}: {'; '.join(blocked)}. "
            "To promote it anyway, pass --force --reason '<why>'"
        )
    holder = champion_version(client, model_name)
    previous = str(holder.version) if holder is not None else None
    if previous == version:
        return _summary(
            model_name, version, previous, f"{model_name} v{version} is already champion"
        )
    now = _now()
    client.set_model_version_tag(model_name, version, "promoted_at", now)
    if force:
        client.set_model_version_tag(model_name, version, "forced_promotion_reason", reason)
        client.set_model_version_tag(model_name, version, "forced_promotion_at", now)
    move_champion(client, model_name, version, previous)
    lost = f"; v{previous} lost the champion alias" if previous else ""
    forced = f" (forced over: {'; '.join(blocked)})" if blocked else ""
    message = f"{model_name} v{version} is now champion{forced}{lost}"
    return _summary(model_name, version, previous, message)


def demote(client: MlflowClient, model_name: str, version: str) -> dict[str, Any]:
    """Take ``champion`` from a version; afterwards no version is champion."""
    found = _model_version(client, model_name, version)
    if CHAMPION not in found.aliases:
        holder = champion_version(client, model_name)
        who = f"v{holder.version} is" if holder is not None else "no version is"
        raise InputError(f"{model_name} v{version} is not champion ({who} champion)")
    client.delete_registered_model_alias(model_name, CHAMPION)
    client.set_model_version_tag(model_name, version, "demoted_at", _now())
    message = (
        f"{model_name} v{version} is no longer champion; no version is champion now "
        "(`veiltune promote VERSION` names one)"
    )
    return _summary(model_name, version, version, message)


def _summary(model_name: str, version: str, previous: str | None, message: str) -> dict[str, Any]:
    return {
        "model_name": model_name,
        "model_version": version,
        "previous_champion": previous,
        "message": message,
    }


def _model_version(client: MlflowClient, model_name: str, version: str) -> ModelVersion:
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


def _refusals_from_tags(tags: Mapping[str, str]) -> list[str]:
    """Why a registered version may not be champion, from its tags (a missing tag fails)."""
    failed = tuple(
        sorted(
            key.removeprefix("audit.").removesuffix(".passed")
            for key, value in tags.items()
            if key.startswith("audit.") and key.endswith(".passed") and value != "true"
        )
    )
    # A missing verdict is reported as missing, not as a failure it never recorded.
    reasons = refusals(
        tags.get("gate_passed", "true") == "true",
        tags.get("audit_passed", "true") == "true",
        failed,
        tags.get("train_corpus", PRODUCT_CORPUS),
    )
    missing = [k for k in ("gate_passed", "audit_passed") if k not in tags]
    return reasons + [f"no {k} tag" for k in missing]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
