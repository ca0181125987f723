"""The params reference, generated from the config classes the stages validate params.yaml
with (``components/<stage>/config.py``) and the stage registry (``components/stages.py``):
every key with its type, its default, the comment beside it in the code, and what it
allows: the range its type declares and the words of ``__post_init__``'s checks (each the
error a bad value gets). Built with the site, so
it cannot drift from the code."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from components.core.config import describe_range, describe_type
from components.core.field_help import field_comments

# A default longer than this is shown below its table instead of in a cell.
MAX_CELL_DEFAULT = 48
REQUIRE_CALLS = frozenset({"require", "_require"})


@dataclasses.dataclass(frozen=True)
class Key:
    """One params key: its dotted name, type as written in the code, default, comment and
    the allowed values its check states."""

    dotted: str
    type: str
    default: Any
    comment: str
    allowed: tuple[str, ...]


def params_reference() -> str:
    """The whole reference page's body: one section per stage, in pipeline order."""
    from components.stages import STAGES

    sections = [_stage_section(stage) for stage in STAGES]
    return "\n\n".join(sections) + "\n"


def stage_keys(config: type, prefix: str) -> list[Key]:
    """Every key of ``config`` (a stage's or a nested section's dataclass), nested sections'
    keys after their own, as ``prefix.key``."""
    # A config may inherit its fields and checks (TrainConfig: TrainParams's, in another module)
    bases = [c for c in reversed(config.__mro__) if dataclasses.is_dataclass(c)]
    comments = {key: text for base in bases for key, text in field_comments(base).items()}
    allowed: dict[str, tuple[str, ...]] = {}
    for module in dict.fromkeys(sys.modules[base.__module__] for base in bases):
        for key, texts in allowed_values(module).items():
            allowed[key] = tuple(dict.fromkeys((*allowed.get(key, ()), *texts)))
    defaults = config()
    hints = typing.get_type_hints(config, include_extras=True)  # ranges kept: the allowed column
    keys: list[Key] = []
    for item in dataclasses.fields(config):
        dotted = f"{prefix}.{item.name}"
        value = getattr(defaults, item.name)
        hint = hints[item.name]
        declared = describe_range(hint)
        checks = (*([declared] if declared else []), *allowed.get(dotted, ()))
        keys.append(Key(dotted, describe_type(hint), value, comments.get(item.name, ""), checks))
    return keys


def allowed_values(module: ModuleType) -> dict[str, tuple[str, ...]]:
    """What each key allows, from the module's ``require(condition, key, allowed=...)``
    checks: the text a bad value's error says (f-strings rendered with the module's
    constants)."""
    found: dict[str, list[str]] = {}
    for call in _require_calls(ast.parse(inspect.getsource(module))):
        key = call.args[1]
        allowed = next(k.value for k in call.keywords if k.arg == "allowed")
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue  # a key built at run time (risk.scores.<TYPE>): its field's row says it
        text = _literal_text(allowed, vars(module))
        if text and text not in found.setdefault(key.value, []):
            found[key.value].append(text)
    return {key: tuple(texts) for key, texts in found.items()}


def _stage_section(stage: Any) -> str:
    page = stage.name.replace("_", "-")
    cls = stage.config
    module_path = cls.__module__.replace(".", "/") + ".py"
    out = [
        f"## {stage.name}",
        "",
        f"{stage.help} `veiltune {' '.join(stage.cli)}` reads it into `{cls.__name__}` "
        f"(`{module_path}`); more on the [{stage.name} page](../stages/{page}.md).",
    ]
    if stage.reads:
        reads = ", ".join(f"`{key}`" for key in stage.reads)
        out += ["", f"It also reads {reads}: its `dvc.yaml` entry lists them beside its own key."]
    out += ["", *_table(cls, stage.name)]
    for item in dataclasses.fields(cls):
        nested = _nested(cls, item.name)
        if nested is not None:
            doc = " ".join((inspect.getdoc(nested) or "").split())
            dotted = f"{stage.name}.{item.name}"
            out += ["", f"### {dotted}", "", doc, "", *_table(nested, dotted)]
    return "\n".join(out)


def _table(config: type, prefix: str) -> list[str]:
    """A key | type | default | meaning table; long defaults follow it as JSON."""
    rows = ["| key | type | default | what it is | allowed |", "| --- | --- | --- | --- | --- |"]
    long_defaults: list[str] = []
    for key in stage_keys(config, prefix):
        if _nested(config, key.dotted.rsplit(".", 1)[1]) is not None:
            default = f"see [{key.dotted}](#{_anchor(key.dotted)})"
        else:
            rendered = json.dumps(key.default, ensure_ascii=False)
            if len(rendered) > MAX_CELL_DEFAULT:
                long_defaults += [f"`{key.dotted}`:", "", "```json", _pretty(key.default), "```"]
                default = "below"
            else:
                default = f"`{rendered}`"
        cells = [
            f"`{key.dotted}`",
            f"`{key.type}`",
            default,
            _cell(key.comment),
            _cell("; ".join(key.allowed)),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    if long_defaults:
        rows += ["", "Defaults too long for the table:", "", *long_defaults]
    return rows


def _nested(config: type, name: str) -> type | None:
    hint = typing.get_type_hints(config)[name]
    return hint if dataclasses.is_dataclass(hint) and isinstance(hint, type) else None


def _anchor(dotted: str) -> str:
    """The anchor Python-Markdown's toc gives a ``### a.b`` heading (its own slugify)."""
    from markdown.extensions.toc import slugify

    return slugify(dotted, "-")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _cell(text: str) -> str:
    """Markdown table cell text: pipes escaped, angle brackets shown (outside code spans)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside code spans
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).replace("|", "\\|")


def _require_calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in REQUIRE_CALLS
            and len(node.args) == 2
            and any(k.arg == "allowed" for k in node.keywords)
        ):
            yield node


def _literal_text(node: ast.expr, namespace: dict[str, Any]) -> str:
    """A string constant as is; an f-string or an expression with each expression evaluated
    in the module's namespace, or ``…`` where it needs a value only known at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):  # an expression of constants: " | ".join(...)
        text = _evaluated(node, namespace)
        return "" if text == "…" else text
    pieces = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            pieces.append(str(part.value))
        elif isinstance(part, ast.FormattedValue):
            pieces.append(_evaluated(part.value, namespace))
    return "".join(pieces)


def _evaluated(expression: ast.expr, namespace: dict[str, Any]) -> str:
    try:
        code = compile(ast.Expression(expression), "<params reference>", "eval")
        return str(eval(code, dict(namespace)))  # the module's own constants, no input
    except (NameError, AttributeError, TypeError, IndexError):
        return "…"


def main() -> int:
    """Print the reference (``python -m docs.hooks.params_reference``)."""
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    print(params_reference())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
