"""The sensitivity taxonomy: categories of sensitive information by setting and level.

A category's path is ``<setting>.<level>.<category>[.<subcategory>]`` in Fideslang-style
dotted notation (``healthcare.high.diagnosis.hiv``). The shipped file is
``veiltune/policy/taxonomy.yaml``; its header gives the shape, and users extend it with
categories and subcategories of their own. The 12 settings and 3 levels are fixed here.

The file is read as a YAML node tree (``yaml.compose``) rather than loaded, so that every
error names the line it is on and a duplicate key, which PyYAML would silently overwrite,
is caught.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import yaml

from components.core.errors import InputError

SETTINGS: tuple[str, ...] = (
    "family",
    "healthcare",
    "employment",
    "finances",
    "social_media",
    "legal",
    "political",
    "religious",
    "sexual_orientation_gender",
    "travel_location",
    "education",
    "identifiers",
)
LEVELS: tuple[str, ...] = ("high", "medium", "low")
# How much a disclosure at each level weighs: high > medium > low.
LEVEL_RANK: Mapping[str, int] = MappingProxyType({"high": 3, "medium": 2, "low": 1})

DESCRIPTION = "description"
SUBCATEGORIES = "subcategories"
_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"


@dataclass(frozen=True)
class SensitiveCategory:
    """One category (``subcategory`` None) or subcategory of the taxonomy."""

    path: str
    setting: str
    level: str
    category: str
    subcategory: str | None
    description: str

    @property
    def rank(self) -> int:
        """The weight of its level: 3 for high, 2 for medium, 1 for low."""
        return LEVEL_RANK[self.level]


@dataclass(frozen=True)
class Taxonomy:
    """Every category and subcategory by path, in file order; ``origin`` is the file read."""

    by_path: Mapping[str, SensitiveCategory]
    origin: str = ""

    def __contains__(self, path: object) -> bool:
        return path in self.by_path

    def __len__(self) -> int:
        return len(self.by_path)

    @property
    def paths(self) -> frozenset[str]:
        """The path of every category and subcategory."""
        return frozenset(self.by_path)

    def category(self, path: str) -> SensitiveCategory:
        """The category or subcategory at ``path``; ``KeyError`` when there is none."""
        try:
            return self.by_path[path]
        except KeyError:
            where = f" of {self.origin}" if self.origin else ""
            raise KeyError(f"{path!r}: not a path of the taxonomy{where}") from None

    def level(self, path: str) -> str:
        """``high``, ``medium`` or ``low``: the level of ``path``."""
        return self.category(path).level

    def setting(self, path: str) -> str:
        """The setting ``path`` belongs to."""
        return self.category(path).setting

    def description(self, path: str) -> str:
        """The one-line description of ``path``."""
        return self.category(path).description

    def rank(self, path: str) -> int:
        """The weight of the level of ``path`` (``LEVEL_RANK``): high 3, medium 2, low 1."""
        return self.category(path).rank

    def categories(self, setting: str | None = None) -> list[SensitiveCategory]:
        """Categories and subcategories in file order, of one ``setting`` or of all.

        Each category comes before its subcategories. ``KeyError`` for an unknown setting.
        """
        if setting is None:
            return list(self.by_path.values())
        if setting not in SETTINGS:
            raise KeyError(f"{setting!r}: not a setting; one of {', '.join(SETTINGS)}")
        return [entry for entry in self.by_path.values() if entry.setting == setting]


def load_taxonomy(path: Path) -> Taxonomy:
    """Read and check the taxonomy file at ``path``.

    Raises:
        InputError: naming the file, the 1-based line and the key, for a missing or
            unreadable file, invalid YAML, an unknown setting or level, a name that is not
            lower snake_case, a duplicate key or category, a missing description, a value
            of the wrong type, a missing setting, or a taxonomy with no categories.
    """
    if not path.is_file():
        raise InputError(f"{path}: no such taxonomy file (ingest.taxonomy)")
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc}") from exc
    except yaml.YAMLError as exc:
        raise InputError(_yaml_error_message(path, exc)) from exc
    reader = _Reader(path)
    if root is None:
        raise InputError(f"{path}: empty taxonomy; a `settings` mapping is needed")
    entries = reader.document(root)
    return Taxonomy(MappingProxyType({entry.path: entry for entry in entries}), str(path))


def _yaml_error_message(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return f"{path}: not valid YAML: {exc}"
    problem = getattr(exc, "problem", None) or exc
    return f"{path}:{mark.line + 1}: not valid YAML: {problem}"


class _Reader:
    """Walks the node tree of one file, turning what is wrong into an ``InputError``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, node: yaml.Node, key: str, *, message: str) -> InputError:
        return InputError(f"{self.path}:{node.start_mark.line + 1}: {key}: {message}")

    def document(self, root: yaml.Node) -> list[SensitiveCategory]:
        pairs = self.pairs(root, "(top level)")
        for key_node, _ in pairs:
            if key_node.value != "settings":
                raise self.error(key_node, key_node.value, message="unknown key; only `settings`")
        if not pairs or _is_null(pairs[0][1]):
            raise self.error(root, "settings", message="empty taxonomy; the 12 settings are needed")
        settings_key, settings_node = pairs[0]
        entries: list[SensitiveCategory] = []
        found: list[str] = []
        for key_node, value in self.pairs(settings_node, "settings", owner=settings_key):
            name = key_node.value
            if name not in SETTINGS:
                message = f"unknown setting; allowed: {', '.join(SETTINGS)}"
                raise self.error(key_node, f"settings.{name}", message=message)
            found.append(name)
            entries.extend(self.setting(name, key_node, node=value))
        missing = [name for name in SETTINGS if name not in found]
        if missing:
            message = f"missing setting(s): {', '.join(missing)}; all {len(SETTINGS)} are needed"
            raise self.error(settings_key, "settings", message=message)
        if not entries:
            raise self.error(settings_key, "settings", message="empty taxonomy; no category in it")
        return entries

    def setting(
        self, setting: str, key_node: yaml.Node, *, node: yaml.Node
    ) -> list[SensitiveCategory]:
        key = f"settings.{setting}"
        pairs = self.pairs(node, key, owner=key_node)
        self.description(key_node, pairs, key=key)
        entries: list[SensitiveCategory] = []
        seen: dict[str, tuple[str, int]] = {}  # category -> (path, line): unique across levels
        for level_node, value in pairs:
            level = level_node.value
            if level == DESCRIPTION:
                continue
            if level not in LEVELS:
                message = f"bad level; one of {', '.join(LEVELS)} (or {DESCRIPTION})"
                raise self.error(level_node, f"{key}.{level}", message=message)
            if _is_null(value):
                continue  # a level with every category commented out
            for name_node, category in self.pairs(value, f"{key}.{level}", owner=level_node):
                name = self.name(name_node, f"{key}.{level}.{name_node.value}")
                path = f"{setting}.{level}.{name}"
                if name in seen:
                    other, line = seen[name]
                    message = (
                        f"duplicate category: also {other} (line {line}); a category name is"
                        " unique within its setting"
                    )
                    raise self.error(name_node, f"{key}.{level}.{name}", message=message)
                seen[name] = (path, name_node.start_mark.line + 1)
                entries.extend(self.category(setting, level, key_node=name_node, node=category))
        return entries

    def category(
        self, setting: str, level: str, *, key_node: yaml.ScalarNode, node: yaml.Node
    ) -> list[SensitiveCategory]:
        name = str(key_node.value)
        path = f"{setting}.{level}.{name}"
        key = f"settings.{setting}.{level}.{name}"
        pairs = self.pairs(node, key, owner=key_node)
        for field_node, _ in pairs:
            if field_node.value not in (DESCRIPTION, SUBCATEGORIES):
                message = f"unknown key; allowed: {DESCRIPTION}, {SUBCATEGORIES}"
                raise self.error(field_node, f"{key}.{field_node.value}", message=message)
        text = self.description(key_node, pairs, key=key)
        entries = [SensitiveCategory(path, setting, level, name, None, text)]
        for field_node, value in pairs:
            if field_node.value != SUBCATEGORIES or _is_null(value):
                continue
            for sub_node, sub_value in self.pairs(
                value, f"{key}.{SUBCATEGORIES}", owner=field_node
            ):
                sub_key = f"{key}.{SUBCATEGORIES}.{sub_node.value}"
                sub = self.name(sub_node, sub_key)
                sub_text = self.text(sub_node, sub_value, key=sub_key)
                entries.append(
                    SensitiveCategory(f"{path}.{sub}", setting, level, name, sub, sub_text)
                )
        return entries

    def pairs(
        self, node: yaml.Node, key: str, *, owner: yaml.Node | None = None
    ) -> list[tuple[yaml.ScalarNode, yaml.Node]]:
        """The key/value nodes of a mapping; refuses another type and duplicate keys.

        A wrong type is reported on the line of ``owner``, the key the value belongs to.
        """
        if not isinstance(node, yaml.MappingNode):
            message = f"wrong type: a mapping is needed, not {_kind(node)}"
            raise self.error(owner or node, key, message=message)
        seen: dict[str, int] = {}
        pairs: list[tuple[yaml.ScalarNode, yaml.Node]] = []
        for key_node, value in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(key_node, key, message="wrong type: a key must be a plain name")
            inner = f"{key}.{key_node.value}" if key != "(top level)" else key_node.value
            if key_node.value in seen:
                message = f"duplicate key (first at line {seen[key_node.value]})"
                raise self.error(key_node, inner, message=message)
            seen[key_node.value] = key_node.start_mark.line + 1
            pairs.append((key_node, value))
        return pairs

    def name(self, node: yaml.ScalarNode, key: str) -> str:
        if not _NAME.fullmatch(node.value):
            message = "not a lower snake_case name (a-z, 0-9 and single underscores)"
            raise self.error(node, key, message=message)
        return str(node.value)

    def description(
        self, owner: yaml.Node, pairs: list[tuple[yaml.ScalarNode, yaml.Node]], *, key: str
    ) -> str:
        for key_node, value in pairs:
            if key_node.value == DESCRIPTION:
                return self.text(key_node, value, key=f"{key}.{DESCRIPTION}")
        raise self.error(owner, f"{key}.{DESCRIPTION}", message="missing; a one-line description")

    def text(self, key_node: yaml.Node, node: yaml.Node, *, key: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            message = f"wrong type: a one-line description is needed, not {_kind(node)}"
            raise self.error(key_node, key, message=message)
        value = str(node.value).strip()
        if not value or node.tag == _NULL_TAG:
            raise self.error(key_node, key, message="empty; a one-line description is needed")
        if "\n" in value:
            raise self.error(key_node, key, message="a one-line description is needed, not several")
        return value


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if node.tag == _NULL_TAG:
        return "nothing"
    if node.tag == _STR_TAG:
        return "text"
    return f"the value {node.value!r}"
