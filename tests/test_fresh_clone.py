"""A fresh clone runs with nothing beside it: no path in params.yaml or in a config default
leaves the checkout, and ingest works in a copy of the checkout that has no sibling folder."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import pkgutil
import posixpath
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

import components
from components.core.config import build_configs, read_params
from components.core.corpus import load_corpus
from components.ingest.dialogsum import DATASET, ID_PREFIX, split_by_dataset
from tests.conftest import REPO_ROOT
from veiltune.cli import OFFLINE_ENVIRONMENT

BIN = Path(sys.executable).parent


def checkout_files(repo: Path) -> list[str]:
    """What a clone holds: the tracked files, plus untracked ones git does not ignore (so the
    test sees work not committed yet), less tracked files deleted in the work tree."""
    names: set[str] = set()
    for extra in ([], ["--others", "--exclude-standard"]):
        listed = subprocess.run(
            ["git", "ls-files", "-z", *extra], cwd=repo, capture_output=True, check=True
        ).stdout.decode()
        names.update(name for name in listed.split("\0") if name)
    return sorted(name for name in names if (repo / name).is_file() or (repo / name).is_symlink())


def copy_checkout(repo: Path, target: Path) -> None:
    for name in checkout_files(repo):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / name, target / name, follow_symlinks=False)


def clone_env(clone: Path) -> dict[str, str]:
    """The environment without the developer's MLflow store, Prefect server or pipeline run,
    so the stage writes to the clone's own ``mlflow.db`` as it does by default; the clone's
    code comes before the editable install, which points at the original checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MLFLOW_", "PREFECT_", "VEILTUNE_"))
    }
    env.update(OFFLINE_ENVIRONMENT)
    env.update(PYTHONPATH=str(clone), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    return env


def test_ingest_runs_in_a_clone_with_nothing_beside_it(tmp_path: Path) -> None:
    clone = tmp_path / "alone" / "veiltune"
    clone.mkdir(parents=True)
    copy_checkout(REPO_ROOT, clone)
    assert [p.name for p in clone.parent.iterdir()] == ["veiltune"]  # no ../shared here
    run = subprocess.run(
        [str(BIN / "veiltune"), "ingest"],
        cwd=clone,
        env=clone_env(clone),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    conversations = load_corpus(clone / "data" / "raw" / "corpus.jsonl")
    dialogsum = split_by_dataset(conversations)[DATASET]
    # The sample params.yaml names, as ingest read it: a path inside the clone.
    section = yaml.safe_load((clone / "params.yaml").read_text(encoding="utf-8"))["ingest"]
    sample = (clone / section["dialogsum"]["path"]).read_text(encoding="utf-8").splitlines()
    expected = [f"{ID_PREFIX}{json.loads(line)['fname']}" for line in sample]
    assert len(expected) == section["dialogsum"]["max_dialogues"] == 200
    assert [c.id for c in dialogsum] == expected  # every dialogue of the vendored sample
    assert (clone / "mlflow.db").is_file()  # tracked in the clone's own default store


def leaves_checkout(value: str) -> bool:
    """Whether ``value`` read as a path points outside the folder it is relative to."""
    if "://" in value:  # a URI (sqlite:///mlflow.db): its path part follows other rules
        return False
    path = PurePosixPath(value.replace("\\", "/"))
    first = PurePosixPath(posixpath.normpath(str(path))).parts[:1]
    return path.is_absolute() or value.startswith("~") or first == ("..",)


def strings(value: Any, key: str) -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` with its dotted key (dataclasses, mappings, lists)."""
    if isinstance(value, str):
        yield key, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from strings(getattr(value, field.name), f"{key}.{field.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k, f"{key}.<key>")
            yield from strings(v, f"{key}.{k}")
    elif isinstance(value, list | tuple | set | frozenset):
        for i, v in enumerate(value):
            yield from strings(v, f"{key}[{i}]")


def config_classes() -> list[type]:
    """Every dataclass defined in a stage's ``components/<stage>/config.py``."""
    classes = []
    for package in pkgutil.iter_modules(components.__path__):
        if not (Path(components.__path__[0]) / package.name / "config.py").is_file():
            continue
        module = importlib.import_module(f"components.{package.name}.config")
        classes += [
            cls
            for cls in vars(module).values()
            if isinstance(cls, type)
            and dataclasses.is_dataclass(cls)
            and cls.__module__ == module.__name__
        ]
    return classes


def default_strings(cls: type) -> Iterator[tuple[str, str]]:
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            yield from strings(field.default, f"{cls.__name__}.{field.name}")
        elif field.default_factory is not dataclasses.MISSING:
            yield from strings(field.default_factory(), f"{cls.__name__}.{field.name}")


@pytest.mark.parametrize(
    ("value", "leaves"),
    [
        ("../shared/data/x.jsonl", True),
        ("/work/shared/x.jsonl", True),
        ("~/data.jsonl", True),
        ("policy/../../x", True),
        ("..", True),
        ("components/ingest/samples/x.jsonl", False),
        ("./policy/x.txt", False),
        ("...", False),
        ("bundled:smollm2", False),
        ("sqlite:///mlflow.db", False),
        ("PERSON_NAME", False),
    ],
)
def test_paths_leaving_the_checkout_are_recognised(value: str, leaves: bool) -> None:
    assert leaves_checkout(value) is leaves


def test_no_param_or_config_default_names_a_path_outside_the_checkout() -> None:
    classes = config_classes()
    sections = {cls.SECTION: cls for cls in classes if hasattr(cls, "SECTION")}
    assert {"ingest", "anonymize", "train"} <= set(sections)  # the discovery found them
    params_path = REPO_ROOT / "params.yaml"
    raw = yaml.safe_load(params_path.read_text(encoding="utf-8"))
    loaded = build_configs(read_params(params_path, sections), sections)  # defaults filled in
    found = [
        *strings(raw, "params.yaml"),
        *strings(loaded, "params"),
        *(item for cls in classes for item in default_strings(cls)),
    ]
    outside = sorted({f"{key} = {value!r}" for key, value in found if leaves_checkout(value)})
    assert not outside, "paths outside the checkout: " + "; ".join(outside)
    assert len(found) > 50  # the walk reached the values, not just the top level


def test_make_run_ends_by_naming_the_report_to_open() -> None:
    from components.core import paths

    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nrun: setup\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert recipe[0].strip() == "$(BIN)/dvc repro"
    assert recipe[-1].strip() == f'@echo "Open {paths.BUNDLE / "report.html"}"'
