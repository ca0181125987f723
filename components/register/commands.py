"""Promotion by hand in the registry the register stage fills (``register.model_name``)."""

from __future__ import annotations

from components.core import tracking
from components.core.stage import Metrics
from components.register.champion import demote as demote_version
from components.register.champion import promote as promote_version
from components.register.config import RegisterConfig


def promote(config: RegisterConfig, version: str, force: bool, reason: str) -> Metrics:
    """Give ``version`` the champion alias (a failed gate or audit needs ``force`` and a reason)."""
    from mlflow.tracking import MlflowClient

    tracking.configure_tracking(config.experiment)
    return promote_version(MlflowClient(), config.model_name, version, force, reason)


def demote(config: RegisterConfig, version: str) -> Metrics:
    """Take the champion alias from ``version``."""
    from mlflow.tracking import MlflowClient

    tracking.configure_tracking(config.experiment)
    return demote_version(MlflowClient(), config.model_name, version)
