"""The docs name only what exists. Every file path, dotted module and ``file.py: name`` that
README.md, ARCHITECTURE.md, CONTRIBUTING.md or a page of docs/ names in backticks must exist
in the checkout, and their relative links must resolve, so a rename or a removal that leaves
them behind fails here instead of drifting (ARCHITECTURE once sent readers to a
``validate_result`` no recognizer had).

What counts as a reference, inside an inline code span (fenced blocks are examples, skipped):

- ``path/to/file.py: name`` or ``path/to/file.py:name``: ``name`` is defined in that file
  (a def, a class, an assignment or an import, at any depth); a bare ``file.py`` names a
  file of the checkout by its name.
- ``components.x.y`` (also ``audits.``, ``flows.``, ``veiltune.``, ``benchmarks.``,
  ``docs.``, ``tests.``; a trailing ``()`` is ignored): the longest prefix that is a module
  or package exists, and at most two names follow, each defined in that module's file.
- a path: no spaces, no ``< > * { } $ ~ :`` and no ellipsis, and it contains ``/`` or ends
  in ``.py``. It is checked when its first folder is one of the checkout's own (not a
  pipeline output such as ``data/`` or ``metrics/``, nor ``../``); a bare ``name.py`` must
  be a file of the checkout. Other words in backticks (params keys, commands, bundle members
  such as ``risk/report.md``) are prose.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "ARCHITECTURE.md", "CONTRIBUTING.md")
PACKAGES = ("components", "audits", "flows", "veiltune", "benchmarks", "docs", "tests")
# What a run or a set-up makes; the docs name these, a fresh checkout has none of them.
OUTPUTS = (
    "data/", "metrics/", "models/", "exports/", "reports/", "mlartifacts/", "mlruns/",
    "dvc_plots/", "site/", ".veiltune/", ".prefect/", ".venv/", ".dvc/cache", ".dvc/tmp",
    "benchmarks/results/",
)  # fmt: skip
# Dotted names that are not modules: MLflow tag keys.
NOT_MODULES = frozenset({"veiltune.base_model.sha256"})

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_DEFINITION = re.compile(r"^(?P<file>[\w./-]+\.py)\s*:\s*(?P<name>[A-Za-z_]\w*)$")
_DOTTED = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+$")
_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_NOT_A_PATH = re.compile(r"[\s<>*{}$~:]|\.\.\.|…")


def documents() -> list[Path]:
    pages = sorted((REPO / "docs").rglob("*.md"))
    return [REPO / name for name in DOCUMENTS] + pages


def code_spans(markdown: str) -> list[str]:
    """The inline code spans of ``markdown`` outside fenced blocks, whitespace collapsed."""
    prose = _FENCE.sub("", markdown)
    return [" ".join(match.group(2).split()) for match in _CODE.finditer(prose)]


def reference_problems(span: str) -> list[str]:
    """What is wrong with one code span as a reference; [] when it is fine or is prose."""
    text = span.strip()
    definition = _DEFINITION.match(text)
    if definition:
        return _definition_problems(definition.group("file"), definition.group("name"))
    dotted = text.removesuffix("()")
    if _DOTTED.match(dotted) and dotted not in NOT_MODULES:
        return _module_problems(dotted)
    if _NOT_A_PATH.search(text) or not ("/" in text or text.endswith(".py")):
        return []
    return _path_problems(text)


def link_problems(document: Path) -> list[str]:
    """Relative links of a top-level document (the docs' own links mkdocs checks) that do
    not resolve to a file or folder of the checkout."""
    found = []
    for match in _LINK.finditer(_FENCE.sub("", document.read_text(encoding="utf-8"))):
        target = match.group("target").split("#", 1)[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        if not (document.parent / target).exists():
            found.append(f"link {target}: no such file")
    return found


def _definition_problems(file: str, name: str) -> list[str]:
    paths = [REPO / file] if "/" in file else [REPO / p for p in _files_named(file)]
    existing = [p for p in paths if p.is_file()]
    if not existing:
        return [f"{file}: no such file"]
    if not any(name in _defined_names(p) for p in existing):
        return [f"{file}: defines no {name}"]
    return []


def _module_problems(dotted: str) -> list[str]:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module_file(parts[:cut])
        if module is None:
            continue
        rest = parts[cut:]
        if len(rest) > 2:
            return [f"{dotted}: {'.'.join(parts[:cut])} has no module {rest[0]}"]
        missing = [name for name in rest if name not in _defined_names(module)]
        return [f"{dotted}: {module.relative_to(REPO)} defines no {missing[0]}"] if missing else []
    return [f"{dotted}: no such module"]


def _path_problems(path: str) -> list[str]:
    clean = path.removeprefix("./")
    if clean.startswith(("../", "/")) or clean.startswith(OUTPUTS):
        return []
    if "/" not in clean.rstrip("/"):
        if clean.endswith(".py") and not _files_named(clean):
            return [f"{path}: no file of the checkout has this name"]
        return []
    if clean.split("/", 1)[0] not in _top_level():
        return []  # a path inside something else (a bundle, a run's store): prose
    return [] if (REPO / clean).exists() else [f"{path}: no such file or folder"]


def _module_file(parts: list[str]) -> Path | None:
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _defined_names(path: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


@functools.cache
def _checkout_files() -> tuple[str, ...]:
    """The checkout's files, tracked or new (not ignored), as git lists them."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return tuple(listed.splitlines())


def _files_named(name: str) -> list[str]:
    return [f for f in _checkout_files() if f.rsplit("/", 1)[-1] == name]


@functools.cache
def _top_level() -> frozenset[str]:
    return frozenset(f.split("/", 1)[0] for f in _checkout_files() if "/" in f)


@pytest.mark.parametrize("document", documents(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_name_in_backticks_exists(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    problems = [p for span in code_spans(text) for p in reference_problems(span)]
    if document.parent == REPO:
        problems += link_problems(document)
    assert problems == [], f"{document.relative_to(REPO)}: " + "; ".join(problems)


@pytest.mark.parametrize(
    "span",
    [
        "components/anonymize/recognizers/username_hotword.py: validate_result",
        "username_hotword.py:validate_result",
        "components/train/lora.corpus_examples",
        "components.anonymize.no_such_module",
        "components.core.cluster.no_such_name",
        "components/anonymize/backend_dlp.py",
        "engine_v2.py",
    ],
)
def test_drift_is_reported(span: str) -> None:
    assert reference_problems(span), span


@pytest.mark.parametrize(
    "span",
    [
        "components/anonymize/recognizers/username_hotword.py: UsernameHotwordRecognizer",
        "components/anonymize/replacers.py:type_tag",
        "username_hotword.py",
        "components.stages.default_context()",
        "components.anonymize.placeholder_view",
        "components/gate/",
        "veiltune/policy/calibration.yaml",
        # prose: params keys, outputs, bundle members, commands, templates, URLs
        "anonymize.dlp.project",
        "data/raw/salt",
        "metrics/<stage>.json",
        "risk/report.md",
        "veiltune export --verify exports/bundle.zip",
        "http://127.0.0.1:5000",
        "veiltune.base_model.sha256",
    ],
)
def test_what_exists_or_is_prose_passes(span: str) -> None:
    assert reference_problems(span) == [], span


def test_code_spans_skip_fenced_examples_and_join_lines() -> None:
    text = "a `components/x.py:\nname` b\n```\n`not/this.py`\n```\n``c`d``"
    assert code_spans(text) == ["components/x.py: name", "c`d"]
