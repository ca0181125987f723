"""Promotion by hand in the registry the register stage fills (``register.model_name``),
each version judged by its evidence checked with the checkout's signing key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.core import tracking
from components.core.signing import KEY_PARAM, checkout_public_key
from components.core.stage import Metrics, StageContext
from components.register.champion import ChampionCheck
from components.register.champion import check_champion as check_version
from components.register.champion import demote as demote_version
from components.register.champion import promote as promote_version
from components.register.config import RegisterConfig

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def promote(
    config: RegisterConfig, context: StageContext, *, version: str, force: bool, reason: str
) -> Metrics:
    """Give ``version`` the champion alias (evidence that fails needs ``force`` and a reason)."""
    from mlflow.tracking import MlflowClient

    trusted = _trusted_key(context)
    tracking.configure_tracking(config.experiment)
    return promote_version(
        MlflowClient(),
        config.model_name,
        version=version,
        trusted=trusted,
        force=force,
        reason=reason,
    )


def check_champion(config: RegisterConfig, context: StageContext) -> ChampionCheck:
    """Check the evidence of the version holding ``champion`` (``veiltune promote --check``)."""
    from mlflow.tracking import MlflowClient

    trusted = _trusted_key(context)
    tracking.configure_tracking(config.experiment)
    return check_version(MlflowClient(), config.model_name, trusted=trusted)


def demote(config: RegisterConfig, version: str) -> Metrics:
    """Take the champion alias from ``version``."""
    from mlflow.tracking import MlflowClient

    tracking.configure_tracking(config.experiment)
    return demote_version(MlflowClient(), config.model_name, version=version)


def _trusted_key(context: StageContext) -> Ed25519PublicKey | None:
    """The checkout's public key (``export.signing_key``); None where it has none, which
    fails every evidence check: promotion never makes a key."""
    return checkout_public_key(context.setting(KEY_PARAM), context.base_dir)
