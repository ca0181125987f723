"""``dvc.yaml``, generated from the stage registry: each stage's command, code, inputs,
params, outputs, metrics and plots as its entry in ``components/stages.py`` declares them.

    python -m components.dvc_yaml           # write dvc.yaml (make dvc-yaml)
    python -m components.dvc_yaml --check   # exit 1 when dvc.yaml is not what it would write

A stage's code dependencies are not declared: they are its own package, core, and every
package it imports, found in its source (an edit to any of them reruns it; an edit to the
CLI or the flow reruns nothing).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

from components.core import paths
from components.core.jsonio import write_text_atomic
from components.stage_contract import Artifact, Plot, Stage
from components.stages import STAGES

DVC_YAML = Path("dvc.yaml")
KERNEL = "components/core"
MAX_LINE = 100  # a longer params list goes one key a line; a longer comment above its item

HEADER = """\
# The veiltune pipeline, GENERATED from the stage registry (components/stages.py) by
# `make dvc-yaml`: edit a stage's entry there, not this file (`make lint` and the tests fail
# when the two differ). Each stage is `veiltune <stage>`, reading its own key of params.yaml;
# its code is components/<stage>/ (entry: stage.py), listed first in its deps with
# components/core and every package it imports.
# Raw text and the PI inventory stay in data/raw and data/pi_inventory; everything after
# anonymize reads only anonymized text, hashes and scores.
# Raw outputs never enter the DVC cache: `cache: false` keeps them out of `dvc commit`, and
# `persist: true` keeps the stage out of DVC's run cache, which would otherwise copy even
# uncached outputs into .dvc/cache/runs. `make purge-raw` erases every raw copy.
# Metrics and plot files (metrics/: counts, scores, hashes; never text) are `cache: false`
# and committed to git with dvc.lock, as DVC intends: each `dvc exp run` commits them into
# its experiment, so `dvc exp show`, `dvc metrics diff` and `dvc plots diff` compare runs.
"""
FOLDER_PLOTS = """\
# Plots of files inside a stage's output folder: `dvc plots show` draws the workspace's,
# `dvc plots diff <exp> ...` overlays experiments (each revision its own colour).
"""


def render(stages: Sequence[Stage] = STAGES, root: Path = paths.INSTALL_ROOT) -> str:
    """The text of dvc.yaml for ``stages``, their code read under ``root``."""
    lines = [HEADER.rstrip("\n"), "stages:"]
    for i, stage in enumerate(stages):
        if i:
            lines.append("")
        lines += _stage(stage, root)
    folder_plots = [plot for stage in stages for plot in stage.folder_plots]
    if folder_plots:
        lines += ["", FOLDER_PLOTS.rstrip("\n"), "plots:"]
        for plot in folder_plots:
            lines += _plot(plot, "  ")
    return "\n".join(lines) + "\n"


def _stage(stage: Stage, root: Path) -> list[str]:
    lines = [f"  {stage.name}:"]
    lines += _comment("    ", stage.notes)
    lines.append(f"    cmd: veiltune {' '.join(stage.cli)}")
    if stage.always_changed:
        lines.append("    always_changed: true")
    lines.append("    deps:")
    lines += [f"      - {package}" for package in code_dependencies(stage, root)]
    for artifact in stage.deps:
        lines += _item("      ", _artifact(artifact, options=False), why=artifact.why)
    lines += _params(stage.params)
    if stage.outs:
        lines.append("    outs:")
        for artifact in stage.outs:
            lines += _item("      ", _artifact(artifact), why=artifact.why)
    if stage.metrics:
        lines.append("    metrics:")
        for artifact in stage.metrics:
            lines += _item("      ", _artifact(artifact), why=artifact.why)
    if stage.plots:
        lines.append("    plots:")
        for plot in stage.plots:
            lines += _plot(plot, "      ")
    return lines


def _artifact(artifact: Artifact, options: bool = True) -> str:
    chosen = [
        f"{key}: {'true' if value else 'false'}"
        for key, value, default in (
            ("cache", artifact.cache, True),
            ("persist", artifact.persist, False),
        )
        if options and value != default
    ]
    return artifact.path + (f": {{{', '.join(chosen)}}}" if chosen else "")


def _item(indent: str, text: str, *, why: str) -> list[str]:
    """A list item with its reason: beside it, or above it where the line would be long."""
    line = f"{indent}- {text}"
    if not why:
        return [line]
    if len(f"{line}  # {why}") <= MAX_LINE:
        return [f"{line}  # {why}"]
    return [*_comment(indent, why), line]


def _comment(indent: str, text: str) -> list[str]:
    width = MAX_LINE - len(indent) - 2
    return [f"{indent}# {line}" for line in textwrap.wrap(text, width)]


def _params(keys: Sequence[str]) -> list[str]:
    inline = f"    params: [{', '.join(keys)}]"
    if len(inline) <= MAX_LINE:
        return [inline]
    return ["    params:", *(f"      - {key}" for key in keys)]


def _plot(plot: Plot, indent: str) -> list[str]:
    """A plot entry at ``indent``: its path (with its comment) and its options below."""
    options = [
        ("cache", None if plot.in_folder else "false"),
        ("x", plot.x),
        ("y", plot.y),
        ("template", plot.template),
        ("title", plot.title),
    ]
    set_options = [(key, value) for key, value in options if value is not None]
    if not set_options:
        return _item(indent, plot.path, why=plot.why)
    lines = _item(indent, f"{plot.path}:", why=plot.why)
    lines += [f"{indent}    {key}: {value}" for key, value in set_options]
    return lines


def code_dependencies(stage: Stage, root: Path = paths.INSTALL_ROOT) -> list[str]:
    """The stage's own package, core, then every other package it imports, transitively
    (``audits`` is one), sorted."""
    others = _closure(stage.package, root) - {KERNEL}
    return [stage.package, KERNEL, *sorted(others)]


def _closure(folder: str, root: Path) -> set[str]:
    seen: set[str] = set()
    todo = [folder]
    while todo:
        for package in package_imports(todo.pop(), root) - seen:
            seen.add(package)
            todo.append(package)
    return seen - {folder}


def package_imports(folder: str, root: Path = paths.INSTALL_ROOT) -> set[str]:
    """The other packages (``package_of``) the modules of ``folder`` import."""
    found = {package_of(m, root) for f in (root / folder).rglob("*.py") for m in imports_of(f)}
    return {p for p in found if p and p != folder}


def imports_of(path: Path) -> Iterator[str]:
    """Every module (and every ``from`` module's name) a source file imports absolutely."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def package_of(module: str, root: Path = paths.INSTALL_ROOT) -> str | None:
    """The folder of the package under components/ (or ``audits``) that ``module`` belongs
    to, if any (a module of components/ itself, the registry's, is none)."""
    parts = module.split(".")
    if parts[0] == "components" and len(parts) > 1 and (root / "components" / parts[1]).is_dir():
        return f"components/{parts[1]}"
    return "audits" if parts[0] == "audits" else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    parser.add_argument("--path", type=Path, default=DVC_YAML)
    args = parser.parse_args(argv)
    wanted = render()
    if not args.check:
        write_text_atomic(args.path, wanted)
        return 0
    current = args.path.read_text(encoding="utf-8") if args.path.is_file() else ""
    if current == wanted:
        return 0
    diff = difflib.unified_diff(
        current.splitlines(), wanted.splitlines(), str(args.path), "registry", lineterm="", n=1
    )
    print("\n".join(list(diff)[:40]), file=sys.stderr)
    print(
        f"{args.path}: not what the stage registry makes (components/stages.py); "
        "run `make dvc-yaml` and commit it",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
