"""Imports at module level, where a reader looks for them (ARCHITECTURE.md): an import inside
a function is for a heavy dependency that the module should not load before it is needed
(torch, MLflow, spaCy, Presidio, Dask, Prefect...), never to hide a cycle (import-linter
refuses cycles in `make lint`).

So a function-level import of veiltune's own code must bring a heavy dependency that the
module does not already load: the imported module loads one at import (found by reading
the module-level imports, transitively), or the same function imports a heavy package
itself, or the import says why on its line (``# loads <what>``: for a name that a package
builds on first use, which reading imports cannot see)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("components", "flows", "audits", "veiltune")
HEAVY = frozenset(
    [
        "torch",
        "transformers",
        "peft",
        "trl",
        "deepspeed",
        "accelerate",
        "opacus",
        "datasets",
        "tokenizers",
        "onnxruntime",
        "safetensors",
        "mlflow",
        "prefect",
        "dvc",
        "great_expectations",
        "spacy",
        "presidio_analyzer",
        "presidio_anonymizer",
        "dask",
        "distributed",
        "sklearn",
        "scipy",
        "pandas",
        "numpy",
        "matplotlib",
        "faker",
        "jinja2",
        "sqlalchemy",
        "psycopg2",
        "grpc",
        "google",
        "fastapi",
        "uvicorn",
        "httpx",
        "requests",
        "rouge_score",
        "nltk",
        "llama_cpp",
        "gguf",
        "sentence_transformers",
    ]
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The modules an import names: ``from a import b`` names ``a`` and, if it is one,
    the module ``a.b``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _module_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module loads: outside functions and classes' methods and
    outside ``if TYPE_CHECKING:``."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.ClassDef):
            for field in ("body", "orelse", "finalbody", "handlers"):
                pending.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            pending.extend(node.body)


def _heavy_loaded() -> dict[str, set[str]]:
    """The heavy packages each module loads at import, transitively (a fixed point)."""
    direct: dict[str, set[str]] = {}
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [t for node in _module_level_imports(tree) for t in _targets(node, module)]
        direct[module] = {n.split(".")[0] for n in names} & HEAVY
        parents = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        edges[module] = ({n for n in names if n in MODULES} | parents) - {module}
    loaded = {module: set(heavy) for module, heavy in direct.items()}
    changed = True
    while changed:
        changed = False
        for module, imported in edges.items():
            size = len(loaded[module])
            for other in imported:
                loaded[module] |= loaded[other]
            changed |= len(loaded[module]) != size
    return loaded


def _own_imports_in_functions() -> Iterator[tuple[str, ast.FunctionDef, ast.stmt, list[str]]]:
    for module, path in MODULES.items():
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(function):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        own = [t for t in _targets(node, module) if t in MODULES]
                        if own:
                            yield module, function, node, own  # type: ignore[misc]


def test_an_import_inside_a_function_brings_a_heavy_dependency() -> None:
    loaded = _heavy_loaded()
    unexplained = []
    for module, function, node, own in _own_imports_in_functions():
        brings = set().union(*(loaded[o] for o in own)) - loaded[module]
        beside = {
            t.split(".")[0]
            for sibling in ast.walk(function)
            if isinstance(sibling, ast.Import | ast.ImportFrom)
            for t in _targets(sibling, module)
        } & HEAVY
        line = MODULES[module].read_text(encoding="utf-8").splitlines()[node.lineno - 1]
        if not (brings or beside or "# loads " in line):
            unexplained.append(f"{MODULES[module].relative_to(REPO)}:{node.lineno}")
    assert not unexplained, (
        "import these at module level (or say on the line what heavy package they load): "
        + ", ".join(unexplained)
    )


def test_the_check_sees_what_a_module_loads() -> None:
    """The rule can fail: the analysis finds heavy packages a module imports, and those it
    loads through veiltune's own modules."""
    loaded = _heavy_loaded()
    assert "presidio_analyzer" in loaded["components.anonymize.presidio_backend"]
    assert "tokenizers" in loaded["components.anonymize.commands"]  # through anonymize.ner
    assert not loaded["components.core.errors"]
