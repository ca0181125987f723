"""Which params a run started from the Prefect UI may override, and what each override changes.

A deployment run is started by whoever can reach the Prefect API; ``veiltune flow --set`` is
run by the workspace owner. A deployment run may change only what ``UI_OVERRIDABLE`` names:
the size of the generated corpus and of the evaluation, and training hyperparameters. Every
other param (a path, URL, key or model source, the judge, the corpus, a privacy control, a
threshold, an audit, the registry's rule) is refused unless ``veiltune serve
--allow-overrides`` names it. The allowance travels in an environment variable of the
serving process, which its runs inherit and no API caller can set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    create_model,
    model_serializer,
)

from components.core.config import param_field
from components.core.errors import ParamsError
from components.core.field_help import field_comments
from components.stages import SECTIONS, names_param

# In code, not params.yaml: a list kept in params could itself be overridden from the UI.
# Each names a value that changes how much is generated, trained or scored, never where
# data comes from or goes, nor what a privacy check accepts.
UI_OVERRIDABLE = (
    "ingest.n_conversations",  # the embedded corpus's size (a user corpus ignores it)
    "ingest.seed",
    "ingest.heldout_fraction",
    "ingest.sensitive_conversations",
    "ingest.dialogsum.max_dialogues",
    "train.max_steps",
    "train.learning_rate",
    "train.batch_size",
    "train.gradient_accumulation_steps",
    "train.max_seq_length",
    "train.lora_r",
    "train.lora_alpha",
    "train.lora_dropout",
    "train.target_modules",
    "train.seed",
    "train.packing",
    "train.padding",
    "train.save_steps",
    "train.eval_fraction",
    "train.early_stopping_patience",
    "train.beta",
    "evaluate.max_conversations",
    "evaluate.max_new_tokens",
    "evaluate.max_prompt_tokens",
    "evaluate.include_base",
)


class _Overrides(BaseModel):
    """What ``_overrides_model`` builds on: strict as params.yaml is read, open to keys
    beyond its fields, and dumped as the keys a run sets."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="allow")

    @model_serializer(mode="wrap")
    def _set_keys(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The fields given a value and every other key as given: an empty field keeps
        params.yaml's value (no field of the list may be null there)."""
        extra = self.model_extra or {}
        values: dict[str, Any] = dump(self)
        return {k: v for k, v in values.items() if v is not None or k in extra}


def _overrides_model() -> type[_Overrides]:
    """The flow's ``overrides`` parameter as a model: each of ``UI_OVERRIDABLE`` a field
    named by its dotted key, typed and ranged as its config declares it and described by the
    comment beside it, so the Prefect UI's form shows what each takes and refuses what it does
    not. A field left empty (null) keeps params.yaml's value. Other keys pass through to the
    run's own checks (``refuse_unallowed_overrides``, then the params' validation): what
    ``veiltune serve --allow-overrides`` allows, and anything from the command line."""
    fields: dict[str, Any] = {}
    for key in UI_OVERRIDABLE:
        owner, name, hint = param_field(key, SECTIONS)
        help_text = field_comments(owner).get(name) or None
        fields[key.replace(".", "__")] = (
            hint | None,
            Field(default=None, alias=key, title=key, description=help_text),
        )
    return create_model("RunOverrides", __base__=_Overrides, **fields)


if TYPE_CHECKING:  # a model made at import: to mypy, its base
    RunOverrides = _Overrides
else:
    RunOverrides = _overrides_model()


def override_values(overrides: BaseModel | None) -> dict[str, Any]:
    """The dotted params a run sets (none without overrides)."""
    return {} if overrides is None else overrides.model_dump(by_alias=True)


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


def ui_may_override(key: str) -> bool:
    """Whether a deployment run may set dotted ``key`` without the operator's allowance."""
    return key in UI_OVERRIDABLE


def parse_allowed(entries: Iterable[str]) -> tuple[str, ...]:
    """``["gate,anonymize", "evaluate.judge.model"]`` → each entry, checked.

    An entry is a stage (``gate`` allows all of its params), a param (``train.corpus``), a
    nested config (``evaluate.judge``) or a key of a mapping param
    (``anonymize.exclusions.PERSON_NAME``).
    """
    allowed = tuple(e.strip() for entry in entries for e in entry.split(",") if e.strip())
    for entry in allowed:
        if not names_param(entry):
            raise ParamsError(
                f"--allow-overrides {entry!r}: not a param of params.yaml; name a stage "
                "(gate), a param (evaluate.judge.model) or a nested config (evaluate.judge)"
            )
    return allowed


def describe_keys(keys: Sequence[str]) -> str:
    """``train.a, train.b, evaluate.c`` → ``train: a, b; evaluate: c``."""
    stages = groupby(keys, key=lambda k: k.partition(".")[0])
    return "; ".join(
        f"{stage}: {', '.join(k.partition('.')[2] for k in group)}" for stage, group in stages
    )


def refuse_unallowed_overrides(
    keys: Iterable[str], *, deployment_run: bool, allowed: Iterable[str]
) -> None:
    """Raise ParamsError for the first key a deployment run may not override.

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
        if not ui_may_override(key) and not any(_covers(a, key) for a in allowed):
            widened = f"; the operator's allowance: {', '.join(allowed)}" if allowed else ""
            raise ParamsError(
                f"override {key!r} refused: runs started from the Prefect UI/API may change "
                f"only {describe_keys(UI_OVERRIDABLE)}{widened}. The operator may allow it "
                f"(restart the deployment with `{_ALLOW_FLAG} {key}`), or run "
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
