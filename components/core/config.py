"""Reading params.yaml into the stages' config dataclasses, and writing it back.

Each stage's dataclass lives in its own package (``components/<stage>/config.py``) and names
its key of params.yaml in ``SECTION``; the registry (``components.stages``) lists them. Unknown
keys are errors that name the key and list what is allowed; so is a value of the wrong type
and, in every param, NaN or an infinity (YAML's ``.nan``, ``.inf``), which no range check
below can be trusted to catch: ``gate.threshold: .inf`` was a gate that cannot fail. Each
dataclass's ``__post_init__`` rejects values outside their range.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from components.core.errors import InputError, ParamsError
from components.core.jsonio import utf8_text, write_text_atomic

C = TypeVar("C")


def require(condition: bool, key: str, allowed: str) -> None:
    """Raise ``ParamsError`` naming ``key`` and what it allows unless ``condition`` holds."""
    if not condition:
        raise ParamsError(f"params: bad value for '{key}': {allowed}")


def read_params(path: Path, sections: Mapping[str, type]) -> dict[str, Any]:
    """Read params.yaml and check that every top-level key is one of ``sections``."""
    if not path.is_file():
        raise ParamsError(f"{path}: no such params file")
    try:
        params = yaml.safe_load(utf8_text(path.read_bytes(), path)) or {}
    except InputError as exc:  # a file that is not UTF-8 is a bad params file
        raise ParamsError(str(exc)) from exc
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(params, dict):
        raise ParamsError(f"{path}: expected a mapping of stage names")
    unknown = sorted(set(params) - set(sections))
    if unknown:
        raise ParamsError(f"{path}: unknown key '{unknown[0]}'; allowed: {', '.join(sections)}")
    return params


def read_policy_yaml(path: Path, missing: str, malformed: str) -> Any:
    """The YAML document of a policy file params name: ``InputError(missing)`` when there is
    no such file, ``InputError(f"{malformed}: {why}")`` when it is not UTF-8 YAML."""
    if not path.is_file():
        raise InputError(missing)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{malformed}: {exc}") from exc


def stage_config(params: Mapping[str, Any], stage: str, cls: type[C]) -> C:
    """Build ``cls`` from ``params[stage]``, rejecting unknown keys and wrong types."""
    return _build(params.get(stage) or {}, stage, cls)


def build_configs(params: Mapping[str, Any], sections: Mapping[str, type]) -> dict[str, Any]:
    """Every section's validated config, defaults filled in for what params leaves out."""
    return {stage: stage_config(params, stage, cls) for stage, cls in sections.items()}


def _build(section: Any, where: str, cls: type[C]) -> C:
    """``cls`` from a mapping; a field typed as a dataclass is built from its own mapping."""
    if not isinstance(section, dict):
        raise ParamsError(f"params: '{where}' must be a mapping")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    values = {}
    for key, value in section.items():
        if key not in fields:
            raise ParamsError(f"params: unknown key '{where}.{key}'; allowed: {', '.join(fields)}")
        if dataclasses.is_dataclass(hints[key]):
            values[key] = _build(value, f"{where}.{key}", hints[key])
        else:
            _check_type(f"{where}.{key}", value, hints[key])
            values[key] = value
    return cls(**values)


def _check_type(key: str, value: Any, hint: Any) -> None:
    """Refuse a value of another type than ``hint``, or holding NaN or an infinity."""
    if not _matches(value, hint):
        raise ParamsError(f"params: '{key}' must be {_describe(hint)}, got {value!r}")
    _check_finite(key, value)


def _check_finite(key: str, value: Any) -> None:
    """Refuse NaN and the infinities anywhere in a param's value, naming where."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ParamsError(f"params: '{key}' must be a finite number, got {value!r}")
    if isinstance(value, dict):
        for name, item in value.items():
            _check_finite(f"{key}.{name}", item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(f"{key}[{i}]", item)


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        key_hint, value_hint = typing.get_args(hint)
        return isinstance(value, dict) and all(
            _matches(k, key_hint) and _matches(v, value_hint) for k, v in value.items()
        )
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def names_param(dotted: str, sections: Mapping[str, type]) -> bool:
    """Whether ``dotted`` names a params key: a stage (``gate``), a field of its config or of
    a config nested in it (``ingest.dialogsum.path``), or a key of a mapping field
    (``anonymize.exclusions.PERSON_NAME``)."""
    stage, *keys = dotted.split(".")
    cls: Any = sections.get(stage)
    for i, key in enumerate(keys):
        if cls is None or not key:
            return False
        if not dataclasses.is_dataclass(cls):  # a mapping: any one key names an entry
            return len(keys) == i + 1
        hints = typing.get_type_hints(cls)
        if key not in {f.name for f in dataclasses.fields(cls)}:
            return False
        cls = hints[key]
        cls = cls if dataclasses.is_dataclass(cls) or typing.get_origin(cls) is dict else None
    return stage in sections


def apply_overrides(
    params: Mapping[str, Any], overrides: Mapping[str, Any], sections: Mapping[str, type]
) -> dict[str, Any]:
    """A copy of ``params`` with dotted ``stage.key`` overrides applied and validated."""
    updated = copy.deepcopy(dict(params))
    for dotted, value in overrides.items():
        stage, *keys = dotted.split(".")
        if stage not in sections or not keys or not all(keys):
            raise ParamsError(
                f"override '{dotted}': expected <stage>.<key> with a stage among "
                f"{', '.join(sections)}"
            )
        section = updated
        for key in (stage, *keys[:-1]):  # ingest.dialogsum.path sets a nested key
            if not isinstance(section.get(key), dict):
                section[key] = {}
            section = section[key]
        section[keys[-1]] = value
    build_configs(updated, sections)
    return updated


def write_params(path: Path, params: Mapping[str, Any]) -> None:
    """Write params.yaml atomically, keeping the stage order."""
    write_text_atomic(path, yaml.safe_dump(dict(params), sort_keys=False, allow_unicode=True))
