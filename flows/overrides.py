"""Which params a run started from the Prefect UI may override, and what each override changes.

A deployment run is started by whoever can reach the Prefect API; ``veiltune flow --set`` is
run by the workspace owner. Overrides of the privacy controls (what is anonymized, how residual
risk is scored and gated, what the audits accept, what the model trains on, the bundle's PI
scan) are refused in deployment runs unless ``veiltune serve --allow-overrides`` said so. The
allowance travels in an environment variable of the serving process, which its runs inherit
and no API caller can set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from components.core.errors import ParamsError

# In code, not params.yaml: a list kept in params could itself be overridden from the UI.
PROTECTED_PARAMS = (
    "anonymize",
    "risk",
    "gate",
    "audit",
    "train.corpus",
    "export.pi_scan_min_chars",
)
ALLOW_OVERRIDES_ENV = "VEILTUNE_ALLOW_OVERRIDES"
_ALLOW_FLAG = "veiltune serve --allow-overrides"


@dataclass(frozen=True)
class OverrideChange:
    """One dotted param set by a run: its value before (None when unset) and after."""

    key: str
    old: Any
    new: Any


def _covers(prefix: str, key: str) -> bool:
    """Whether dotted ``key`` is ``prefix`` or lies under it (``gate`` covers ``gate.x``)."""
    return key == prefix or key.startswith(prefix + ".")


def protected_prefix(key: str) -> str | None:
    """The entry of PROTECTED_PARAMS that covers ``key``, or None for an ordinary param."""
    return next((p for p in PROTECTED_PARAMS if _covers(p, key)), None)


def parse_allowed(entries: Iterable[str]) -> tuple[str, ...]:
    """``["gate,anonymize", "risk"]`` → ``("gate", "anonymize", "risk")``, each checked.

    An entry is a protected param or stage (``gate``, ``train.corpus``), a key under one
    (``gate.threshold``) or a stage holding one (``train`` allows ``train.corpus``).
    """
    allowed = tuple(e.strip() for entry in entries for e in entry.split(",") if e.strip())
    for entry in allowed:
        if not any(_covers(p, entry) or _covers(entry, p) for p in PROTECTED_PARAMS):
            raise ParamsError(
                f"--allow-overrides {entry!r}: not a protected param; protected: "
                f"{', '.join(PROTECTED_PARAMS)} (other params need no allowance)"
            )
    return allowed


def refuse_protected_overrides(
    keys: Iterable[str], *, deployment_run: bool, allowed: Iterable[str]
) -> None:
    """Raise ParamsError for the first protected key a deployment run may not override.

    Args:
        keys: the dotted params the run would set.
        deployment_run: the run belongs to a deployment (started through the Prefect API/UI);
            runs started from the command line may override anything.
        allowed: the entries ``veiltune serve --allow-overrides`` was given.
    """
    if not deployment_run:
        return
    allowed = tuple(allowed)
    for key in keys:
        prefix = protected_prefix(key)
        if prefix is not None and not any(_covers(a, key) for a in allowed):
            raise ParamsError(
                f"override {key!r} refused: {prefix} is a privacy control, and runs started "
                f"from the Prefect UI/API may not change it unless the deployment allows it "
                f"(restart it with `{_ALLOW_FLAG} {prefix}`), or run "
                f"`veiltune flow --set {key}=...` from the workspace"
            )


def export_allowed(allowed: tuple[str, ...], environ: MutableMapping[str, str]) -> None:
    """Record the serving process's allowance in ``environ``, which its runs inherit.

    Without an allowance the variable is removed, so one left in the shell allows nothing.
    """
    if allowed:
        environ[ALLOW_OVERRIDES_ENV] = ",".join(allowed)
    else:
        environ.pop(ALLOW_OVERRIDES_ENV, None)


def allowed_from_environment(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The allowance a served run inherited from ``veiltune serve`` (empty when none)."""
    return parse_allowed([environ.get(ALLOW_OVERRIDES_ENV, "")])


def override_changes(
    params: Mapping[str, Any], overrides: Mapping[str, Any]
) -> list[OverrideChange]:
    """Each override with the value it replaces in ``params`` (None where the key is unset)."""
    changes = []
    for key, value in overrides.items():
        old: Any = params
        for part in key.split("."):
            old = old.get(part) if isinstance(old, Mapping) else None
        changes.append(OverrideChange(key, old, value))
    return changes
