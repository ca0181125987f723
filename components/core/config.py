"""Reading params.yaml into the stages' config dataclasses, and writing it back.

Each stage's dataclass lives in its own package (``components/<stage>/config.py``) and names
its key of params.yaml in ``SECTION``; the registry (``components.stages``) lists them. Unknown
keys are errors that name the key and list what is allowed; so is a value of the wrong type
and, in every param, NaN or an infinity (YAML's ``.nan``, ``.inf``), which no range check
can be trusted to catch: ``gate.threshold: .inf`` was a gate that cannot fail.

pydantic validates each section against its dataclass (``params_section``: strict types, no
unknown key, finite numbers), the ranges a field's type declares (``Count``, ``OpenUnit``,
``Annotated[int, Field(ge=8)]``) included; the JSON schema (``veiltune params --schema``) and
the params reference show the same ranges. What one field cannot say (a value among a
registry's names, one field against another) stays in the dataclass's ``__post_init__``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import operator
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config

from components.core.errors import InputError, ParamsError
from components.core.jsonio import utf8_text, write_text_atomic

C = TypeVar("C")

# How pydantic reads a params section: "3" is no int and true no 1, a key the dataclass has no
# field for is an error, and so are NaN and the infinities.
PARAMS = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

# The ranges a param's type declares: checked on load, shown in the schema and the reference.
Count = Annotated[int, Field(ge=1)]  # an integer >= 1
NonNegativeInt = Annotated[int, Field(ge=0)]  # an integer >= 0
Positive = Annotated[float, Field(gt=0)]  # a number > 0
NonNegative = Annotated[float, Field(ge=0)]  # a number >= 0
OpenUnit = Annotated[float, Field(gt=0, lt=1)]  # 0 < x < 1: a fraction, a probability
Unit = Annotated[float, Field(ge=0, le=1)]  # 0 <= x <= 1: a score
NonEmpty = Annotated[str, Field(min_length=1)]  # a non-empty string


def params_section(key: str) -> Callable[[type[C]], type[C]]:
    """Mark a config class as params.yaml's ``key`` (``gate``, ``anonymize.ner``): read
    with ``PARAMS``, and its declared ranges checked whenever code builds one too (a
    ``dataclasses.replace`` with a command-line option's value), before its own
    ``__post_init__``. Below ``@dataclass``, which then calls that check from ``__init__``."""

    def mark(cls: type[C]) -> type[C]:
        found = getattr(cls, "__post_init__", None)
        # a base's checks, not its range check too: this one covers the inherited fields
        own_checks = getattr(found, "own_checks", found)

        def __post_init__(self: Any) -> None:
            _check_declared_ranges(self, key)
            if own_checks is not None:
                own_checks(self)

        __post_init__.own_checks = own_checks  # type: ignore[attr-defined]
        cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
        return with_config(PARAMS)(cls)

    return mark


def _check_declared_ranges(config: Any, key: str) -> None:
    for name, adapter in _range_adapters(type(config)).items():
        value = getattr(config, name)
        try:
            adapter.validate_python(value)
        except ValidationError:
            hint = typing.get_type_hints(type(config), include_extras=True)[name]
            raise ParamsError(
                f"params: bad value for '{key}.{name}': {describe_range(hint)}, got {value!r}"
            ) from None


def _range_adapters(cls: type) -> dict[str, TypeAdapter[Any]]:
    """A validator for each field of ``cls`` whose type declares a range (made once)."""
    if cls not in _RANGE_ADAPTERS:
        hints = typing.get_type_hints(cls, include_extras=True)
        _RANGE_ADAPTERS[cls] = {
            f.name: TypeAdapter(hints[f.name])
            for f in dataclasses.fields(cls)
            if describe_range(hints[f.name])
        }
    return _RANGE_ADAPTERS[cls]


_RANGE_ADAPTERS: dict[type, dict[str, TypeAdapter[Any]]] = {}
_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def require(condition: bool, key: str, *, allowed: str) -> None:
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


def read_policy_yaml(path: Path, missing: str, *, malformed: str) -> Any:
    """The YAML document of a policy file params name: ``InputError(missing)`` when there is
    no such file, ``InputError(f"{malformed}: {why}")`` when it is not UTF-8 YAML."""
    if not path.is_file():
        raise InputError(missing)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{malformed}: {exc}") from exc


def stage_config(params: Mapping[str, Any], stage: str, *, cls: type[C]) -> C:
    """Build ``cls`` from ``params[stage]``: pydantic validates it against the dataclass's
    types and ranges; a failure is one ``ParamsError`` naming the key path."""
    return _build(params.get(stage) or {}, stage, cls=cls)


def build_configs(params: Mapping[str, Any], sections: Mapping[str, type]) -> dict[str, Any]:
    """Every section's validated config, defaults filled in for what params leaves out."""
    return {stage: stage_config(params, stage, cls=cls) for stage, cls in sections.items()}


def _build(section: Any, where: str, *, cls: type[C]) -> C:
    if not isinstance(section, dict):
        raise ParamsError(f"params: '{where}' must be a mapping")
    _check_plain(where, section)
    try:
        return _adapter(cls).validate_json(json.dumps(section))
    except ValidationError as exc:
        raise ParamsError(_message(exc, section, where=where, cls=cls)) from None


def _adapter(cls: type[C]) -> TypeAdapter[C]:
    """The validator of a config class (made once)."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def _check_plain(key: str, value: Any) -> None:
    """Refuse what a JSON document cannot hold (YAML's dates, binary, keys that are not
    strings), and NaN and the infinities anywhere in a param's value, naming where."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ParamsError(f"params: '{key}' must be a finite number, got {value!r}")
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                raise ParamsError(f"params: '{key}' has a key that is not a string: {name!r}")
            _check_plain(f"{key}.{name}", item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(f"{key}[{i}]", item)
    elif not isinstance(value, str | int | float | bool | type(None)):
        raise ParamsError(
            f"params: '{key}' holds {value!r}: a param is a string, a number, a boolean, "
            "null, a list or a mapping"
        )


def _message(error: ValidationError, section: dict[str, Any], *, where: str, cls: type) -> str:
    """pydantic's first error as one line naming the key path, the type or range the key
    allows and the value given."""
    errors = error.errors()
    found = _locate(cls, section, loc=errors[0]["loc"])
    path = ".".join([where, *found.names])
    if found.unknown is not None:
        allowed = ", ".join(f.name for f in dataclasses.fields(found.owner))
        return f"params: unknown key '{path}.{found.unknown}'; allowed: {allowed}"
    same_key = [e for e in errors if _locate(cls, section, loc=e["loc"]).names == found.names]
    if any(e["type"] in _RANGE_ERRORS for e in same_key):
        return f"params: bad value for '{path}': {describe_range(found.hint)}, got {found.value!r}"
    if dataclasses.is_dataclass(_bare(found.hint)):
        return f"params: '{path}' must be a mapping"
    return f"params: '{path}' must be {describe_type(found.hint)}, got {found.value!r}"


# pydantic's error types of a value of the right type out of its declared range or choices
_RANGE_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "string_too_short",
    "string_too_long",
    "too_short",
    "too_long",
    "literal_error",  # a value outside a Literal's
}


@dataclasses.dataclass(frozen=True)
class _Located:
    names: tuple[str, ...]  # the fields from the section down to the key
    owner: Any  # the config dataclass the last name is a field of
    hint: Any  # the key's type, its ranges kept (Annotated)
    value: Any  # what params gave it
    unknown: str | None = None  # a key the owner has no field for


def _locate(cls: type, section: Any, *, loc: tuple[int | str, ...]) -> _Located:
    """The params key an error's location points at: the fields it walks through, down to
    the first one that is not a config of its own (a list's item is its list's key)."""
    names: list[str] = []
    owner: Any = cls
    hint: Any = cls
    value: Any = section
    for step in loc:
        if not dataclasses.is_dataclass(_bare(hint)) or not isinstance(value, dict):
            break
        owner = _bare(hint)
        if step not in {f.name for f in dataclasses.fields(owner)}:
            return _Located(tuple(names), owner, hint, value, unknown=str(step))
        hint = typing.get_type_hints(owner, include_extras=True)[str(step)]
        names.append(str(step))
        value = value.get(str(step))
    return _Located(tuple(names), owner, hint, value)


def _bare(hint: Any) -> Any:
    """``hint`` without its ranges, and without ``| None``."""
    if typing.get_origin(hint) is typing.Annotated:
        return _bare(typing.get_args(hint)[0])
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _bare(args[0]) if len(args) == 1 else hint
    return hint


def describe_type(hint: Any) -> str:
    """A field's type as its errors and the params reference name it: ``int``,
    ``list[str] | None``, without the ranges a type declares."""
    plain = _strip_ranges(hint)
    if typing.get_args(plain) or not hasattr(plain, "__name__"):
        return str(plain).replace("typing.", "")
    return str(plain.__name__)


def _strip_ranges(hint: Any) -> Any:
    """``hint`` as plain types: ranges left out, a ``Literal`` as its values' type."""
    if typing.get_origin(hint) is typing.Annotated:
        return _strip_ranges(typing.get_args(hint)[0])
    if typing.get_origin(hint) is Literal:
        return type(typing.get_args(hint)[0])
    if typing.get_origin(hint) is list:
        return list[_strip_ranges(typing.get_args(hint)[0])]  # type: ignore[misc]
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return functools.reduce(operator.or_, [_strip_ranges(a) for a in typing.get_args(hint)])
    return hint


def describe_range(hint: Any) -> str:
    """What a ranged type allows, in words: ``an integer >= 1``, ``0 < x < 1``, ``null or a
    non-empty string``, ``one of: auto, always, never``; ``""`` for a type that declares no
    range."""
    nullable = type(None) in typing.get_args(hint)
    ranged = [a for a in (hint, *typing.get_args(hint)) if typing.get_origin(a) is Annotated]
    bounds = {
        type(m).__name__: m
        for info in (typing.get_args(ranged[0])[1:] if ranged else ())
        for m in getattr(info, "metadata", [info])
    }
    words = _choices(_bare(hint), non_empty="MinLen" in bounds)
    if not words and bounds:
        words = _bounds_in_words(_bare(hint), bounds)
    return f"null or {words}" if nullable and words else words


def _choices(bare: Any, *, non_empty: bool) -> str:
    """The values a ``Literal`` (or a list of one) allows, in words."""
    if typing.get_origin(bare) is Literal:
        return "one of: " + ", ".join(map(str, typing.get_args(bare)))
    if typing.get_origin(bare) is list:
        (item,) = typing.get_args(bare)
        if typing.get_origin(item) is Literal:
            kind = "a non-empty list of" if non_empty else "a list of"
            return f"{kind}: " + ", ".join(map(str, typing.get_args(item)))
    return ""


def _bounds_in_words(bare: Any, bounds: dict[str, Any]) -> str:
    if "MinLen" in bounds or "MaxLen" in bounds:
        low = getattr(bounds.get("MinLen"), "min_length", 0)
        high = getattr(bounds.get("MaxLen"), "max_length", None)
        if bare is str:
            return "a single character" if low == high == 1 else "a non-empty string"
        return "a non-empty list" if low == 1 else f"a list of at least {low} items"
    low = [
        (f"{m.ge} <=", f">= {m.ge}") if n == "Ge" else (f"{m.gt} <", f"> {m.gt}")
        for n, m in bounds.items()
        if n in ("Ge", "Gt")
    ]
    high = [
        (f"<= {m.le}", f"<= {m.le}") if n == "Le" else (f"< {m.lt}", f"< {m.lt}")
        for n, m in bounds.items()
        if n in ("Le", "Lt")
    ]
    if low and high:
        return f"{low[0][0]} x {high[0][0]}"
    kind = "an integer" if bare is int else "a number"
    return f"{kind} {(low or high)[0][1]}"


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


def param_field(dotted: str, sections: Mapping[str, type]) -> tuple[type, str, Any]:
    """The field ``dotted`` names (``train.max_steps``, ``ingest.dialogsum.path``): the
    config class that declares it, its name there, and its type with the ranges it declares.

    Raises:
        ParamsError: ``dotted`` names no field of a config (a stage, a mapping's key).
    """
    stage, *keys = dotted.split(".")
    owner: Any = sections.get(stage)
    for i, key in enumerate(keys):
        fields = (
            {f.name for f in dataclasses.fields(owner)} if dataclasses.is_dataclass(owner) else ()
        )
        if key not in fields:
            break
        hint = typing.get_type_hints(owner, include_extras=True)[key]
        if i == len(keys) - 1:
            return owner, key, hint
        owner = hint
    raise ParamsError(f"'{dotted}' names no field of a stage's config")


def apply_overrides(
    params: Mapping[str, Any], overrides: Mapping[str, Any], *, sections: Mapping[str, type]
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
