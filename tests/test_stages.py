"""The stage registry is the one source: dvc.yaml, the CLI, the flow, the README and the
shipped params follow it; and the layering rules between packages hold."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.core import paths
from components.dvc_yaml import (
    code_dependencies,
    imports_of,
    package_imports,
    package_of,
    render,
)
from components.stages import BY_NAME, SECTIONS, STAGES, load_params, pipeline_line

ROOT = Path(__file__).resolve().parents[1]
DVC_YAML = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
DVC = DVC_YAML["stages"]
ORDER = [stage.name for stage in STAGES]
# Packages every component may import besides its own: the kernel.
KERNEL = "components/core"


def test_dvc_stages_are_the_registry_in_its_order() -> None:
    assert list(DVC) == ORDER


@pytest.mark.parametrize("stage", STAGES, ids=ORDER)
def test_each_dvc_stage_runs_its_registry_command_with_its_params(stage: object) -> None:
    spec = BY_NAME[stage.name]  # type: ignore[attr-defined]
    entry = DVC[spec.name]
    assert entry["cmd"] == "veiltune " + " ".join(spec.cli)
    assert entry["params"] == list(spec.params)


def test_dvc_yaml_is_what_the_registry_makes() -> None:
    """dvc.yaml is generated (``make dvc-yaml``): a hand edit, or a registry entry changed
    without regenerating, fails here and in ``make lint``."""
    assert (ROOT / "dvc.yaml").read_text(encoding="utf-8") == render(root=ROOT)


def test_a_stage_depends_on_its_package_core_and_what_it_imports_transitively(
    tmp_path: Path,
) -> None:
    """Its own package first, then core and every package it imports (transitively): editing
    any of them re-runs it; editing the CLI, the flow or the registry re-runs nothing."""
    for package, source in {
        "components/a": "from components.b.x import y\nfrom components.stages import STAGES\n",
        "components/b": "import audits.canary\nfrom components.core import paths\n",
        "components/c": "",
        "components/core": "",
        "audits": "from components.core.stage import Metrics\n",
    }.items():
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "m.py").write_text(source)
    stage = BY_NAME["ingest"]
    fake = dataclasses.replace(stage, name="a")
    assert code_dependencies(fake, tmp_path) == [
        "components/a",
        "components/core",
        "audits",
        "components/b",
    ]
    deps = [d for d in DVC["audit"]["deps"] if d.startswith(("components", "audits"))]
    assert deps[:3] == ["components/audit", "components/core", "audits"]


def _declared(entries: list[Any]) -> dict[str, dict[str, Any]]:
    """dvc.yaml's list of outputs (a path, or a path mapped to its options) as a mapping."""
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        found.update({entry: {}} if isinstance(entry, str) else entry)
    return found


def _git_ignored(path: str) -> bool:
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, check=False
    )
    return ignored.returncode == 0


@pytest.mark.parametrize("stage", STAGES, ids=ORDER)
def test_each_stage_writes_its_metrics_and_plots_to_git_not_the_cache(stage: object) -> None:
    """DVC experiments compare what git carries: metrics and plot files are ``cache: false``
    and not git-ignored, so `dvc exp run` commits them (and dvc.lock) into each experiment."""
    entry = DVC[stage.name]  # type: ignore[attr-defined]
    files = {**_declared(entry.get("metrics", [])), **_declared(entry.get("plots", []))}
    name = stage.name  # type: ignore[attr-defined]
    assert name == "export" or paths.metrics_file(name).as_posix() in files
    for path, options in files.items():
        assert options.get("cache") is False, path
        assert path.startswith("metrics/") and not _git_ignored(path), path
    assert not _git_ignored("dvc.lock")


def test_every_file_a_stage_writes_is_declared_by_that_stage_alone() -> None:
    """DVC holds each output to one stage; the run's verdicts in one row
    (``metrics/headline.json``) are register's, the last stage with a verdict."""
    declared = [
        (name, path)
        for name, entry in DVC.items()
        for key in ("outs", "metrics", "plots")
        for path in _declared(entry.get(key, []))
    ]
    paths_only = [path for _, path in declared]
    assert len(paths_only) == len(set(paths_only)), paths_only
    headline = paths.HEADLINE.as_posix()
    assert [name for name, path in declared if path == headline] == ["register"]
    assert _declared(DVC["register"]["metrics"])[headline] == {"cache": False}


def test_a_stage_that_leaves_a_declared_output_unwritten_fails_as_dvc_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.core.stage import StageContext, UnwrittenOutput
    from components.stage_contract import Stage
    from components.stages import run_stage

    def metrics_only(config: object, context: StageContext) -> dict[str, int]:
        metrics = context.output(paths.metrics_file("gate"))
        metrics.parent.mkdir(exist_ok=True)
        metrics.write_text("{}", encoding="utf-8")
        return {"written": 1}

    monkeypatch.setattr(Stage, "entry", lambda self: metrics_only)
    monkeypatch.delenv("RANK", raising=False)
    params = Path(__file__).resolve().parents[1] / "params.yaml"
    with pytest.raises(UnwrittenOutput, match=r"stage gate did not write data/gate, which"):
        run_stage("gate", params, workspace=tmp_path)
    monkeypatch.setenv("RANK", "1")  # under a launcher, rank 0 alone writes
    assert run_stage("gate", params, workspace=tmp_path) == {"written": 1}
    monkeypatch.setenv("RANK", "0")
    (tmp_path / "data" / "gate").mkdir(parents=True)
    assert run_stage("gate", params, workspace=tmp_path) == {"written": 1}


def test_the_plots_are_the_files_the_stages_write() -> None:
    """Training loss per step, utility per variant, risk per conversation; each with its
    axes, and each file an output of a stage (a top-level plot, a file in an output folder)."""
    train, evaluate = (_declared(DVC[name].get("plots", [])) for name in ("train", "evaluate"))
    loss, utility = train[paths.TRAIN_LOSS.as_posix()], evaluate[paths.UTILITY_SCORES.as_posix()]
    assert (loss["x"], loss["y"], utility["x"], utility["y"]) == (
        "step",
        "loss",
        "adapter",
        "metric",
    )
    others = [
        name for name, e in DVC.items() if e.get("plots") and name not in ("train", "evaluate")
    ]
    assert others == []
    top = _declared(DVC_YAML["plots"])
    assert set(top) == {paths.RISK_TABLE.as_posix(), paths.RISK_HISTOGRAM.as_posix()}
    risk = top[paths.RISK_TABLE.as_posix()]
    # conversations binned by score (.dvc/plots/histogram.json), not a bar each
    assert (risk["x"], risk["template"], "y" in risk) == ("score", "histogram", False)
    outputs = {path for e in DVC.values() for path in _declared(e.get("outs", []))}
    for path in top:
        assert any(path.startswith(out + "/") for out in outputs), path


def test_every_stage_has_its_package_entry_and_config() -> None:
    for stage in STAGES:
        assert (ROOT / stage.package / "stage.py").is_file(), stage.name
        assert (ROOT / stage.package / "config.py").is_file(), stage.name
        assert callable(stage.entry())
        assert getattr(stage.config, "SECTION", None) == stage.name


def test_a_stage_reads_only_the_params_metrics_and_files_its_entry_declares(
    tmp_path: Path,
) -> None:
    from components.core.stage import UndeclaredRead
    from components.stages import default_context, for_stage

    (tmp_path / "metrics").mkdir()
    for name in ("risk", "train"):
        (tmp_path / "metrics" / f"{name}.json").write_text("{}")
    gate = dataclasses.replace(for_stage(default_context(), "gate"), workspace=tmp_path)
    # files, in its workspace: what it reads, what it writes, inside a folder it writes
    assert gate.input(paths.RISK_TABLE) == tmp_path / "data/risk/risk_table.csv"
    assert gate.output(paths.GATE_PAGE) == tmp_path / paths.GATE_PAGE
    with pytest.raises(UndeclaredRead, match=r"stage gate reads data/raw/corpus.jsonl"):
        gate.input(paths.RAW_CORPUS)
    with pytest.raises(UndeclaredRead, match=r"stage gate writes data/risk/risk_table.csv"):
        gate.output(paths.RISK_TABLE)  # an input, not its output
    assert gate.setting("gate.threshold") == 5.0  # its own key
    assert gate.metrics("risk") == {}  # a declared input
    with pytest.raises(UndeclaredRead, match=r"stage gate reads params key 'train.seed'"):
        gate.setting("train.seed")
    with pytest.raises(UndeclaredRead, match=r"metrics/train.json"):
        gate.metrics("train")
    with pytest.raises(UndeclaredRead, match="'train'"):
        gate.config(BY_NAME["train"].config)
    # a key under a declared section, and the experiment every stage logs to
    review = for_stage(default_context(), "review")
    assert review.setting("gate.threshold") == 5.0
    assert review.experiment == "veiltune"
    # outside a stage run (the detection commands, the reports) everything may be read
    assert default_context().setting("train.seed") == gate.configs["train"].seed


@pytest.mark.parametrize("stage", STAGES, ids=ORDER)
def test_every_declared_read_is_a_key_of_params(stage: Any) -> None:
    from components.stages import default_context, for_stage

    context = for_stage(default_context(), stage.name)
    for key in stage.params:
        context.setting(key)  # an AttributeError or KeyError names a key that does not exist


def test_a_stage_imports_only_core_and_the_stages_before_it() -> None:
    for index, stage in enumerate(STAGES):
        upstream = {s.package for s in STAGES[:index]}
        allowed = upstream | {KERNEL} | ({"audits"} if stage.name == "audit" else set())
        assert package_imports(stage.package) <= allowed, stage.name


def test_core_imports_no_stage_and_audits_only_core_ingest_and_train() -> None:
    assert package_imports(KERNEL) == set()
    assert package_imports("audits") <= {KERNEL, "components/ingest", "components/train"}


def test_stages_reach_each_other_through_public_names_only() -> None:
    """``from components.risk import RiskPolicy``, never ``components.risk.scoring``."""
    for stage in STAGES:
        for path in (ROOT / stage.package).rglob("*.py"):
            for module in imports_of(path):
                parts = module.split(".")
                package = package_of(module)
                if package in (None, KERNEL, "audits", stage.package) or len(parts) < 3:
                    continue
                public = __import__(f"components.{parts[1]}", fromlist=["__all__"]).__all__
                assert parts[2] in public, f"{path.relative_to(ROOT)} imports {module}"


def test_no_component_imports_prefect_flows_or_the_cli() -> None:
    for path in [*(ROOT / "components").rglob("*.py"), *(ROOT / "audits").rglob("*.py")]:
        for module in imports_of(path):
            assert not module.startswith(("prefect", "flows", "veiltune")), (path, module)


def test_the_flow_runs_the_registry_stages() -> None:
    from flows.pipeline import STAGES as FLOW_STAGES

    assert list(FLOW_STAGES) == ORDER


def test_the_readme_pipeline_line_is_the_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [line for line in readme.splitlines() if line.startswith("ingest →")]
    assert lines[0] == pipeline_line()


def test_shipped_params_are_the_config_defaults() -> None:
    """params.yaml writes out every default; a change to one must change the other."""
    params = load_params(ROOT / "params.yaml")
    assert list(params) == ORDER
    for name, cls in SECTIONS.items():
        shipped = dataclasses.asdict(load_section(params, name, cls=cls))
        assert shipped == dataclasses.asdict(cls()), name
        assert set(params[name]) <= {f.name for f in dataclasses.fields(cls)}


def load_section(params: dict[str, object], name: str, *, cls: type) -> Any:
    from components.core.config import stage_config

    return stage_config(params, name, cls=cls)


def test_placeholders_are_parsed_by_one_grammar() -> None:
    pattern = re.compile(r"re\.compile\(r\"\\\[\[A-Z\]")
    writers = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "components").rglob("*.py")
        if pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert writers == ["components/core/placeholders.py"]


# Each stage's metrics as its run returns them (the keys its line reads, shaped as the
# producers write them), and the line `veiltune <stage>` prints.
SUMMARIES: dict[str, tuple[dict[str, Any], str]] = {
    "ingest": (
        {
            "n_conversations": 305,
            "n_train": 244,
            "n_heldout": 61,
            "n_pi_mentions": 1470,
            "n_canaries": 4,
            "by_context": {"sales": 100},
        },
        "ingest: 305 conversations (244 train, 61 held out), 1470 PI mentions, 4 canaries",
    ),
    "base_model": (
        {
            "source": "bundled:smollm2-135m",
            "model_type": "llama",
            "n_parameters": 134515008,
            "vocab_size": 49152,
        },
        "base_model: llama, 135M parameters, in models/base",
    ),
    "anonymize": (
        {
            "n_conversations": 305,
            "n_replacements": 1622,
            "replacements_by_type": {},
            "seconds": 12.5,
            "chars_per_second": 18034.2,
            "workers": 1,
        },
        "anonymize: 1622 spans replaced in 305 conversations (18034 characters/s)",
    ),
    "risk": (
        {
            "count": 305,
            "mean": 0.2459,
            "std": 0.246,
            "p95": 1.0,
            "max": 3.0,
            "mu_plus_sigma": 0.4919,
            "source": "ground_truth",
            "by_context": {},
        },
        "risk: mu+sigma 0.4919 (mean 0.2459, std 0.246, max 3) over 305 conversations, "
        "scored by ground_truth",
    ),
    "review": (
        {"sampled": 20, "by_band": {"high": 2, "low": 8, "none": 10}, "by_context": {}},
        "review: 20 conversations sampled for human review (high 2, low 8, none 10)",
    ),
    "gate": (
        {
            "passed": True,
            "mu_plus_sigma": 0.4919,
            "threshold": 5.0,
            "mean": 0.2459,
            "std": 0.246,
            "n_conversations": 305,
            "n_expectations": 6,
            "n_failed_expectations": 0,
        },
        "gate: passed (mu+sigma 0.4919 < 5, 305 conversations)",
    ),
    "train": (
        {
            "n_examples": 400,
            "steps": 24,
            "train_loss": 1.7312,
            "best_eval_loss": 1.2304,
            "runtime_s": 301.2,
            "engine": "Trainer",
        },
        "train: 24 steps, train loss 1.7312, best eval loss 1.2304; adapter in models/adapter",
    ),
    "evaluate": (
        {
            "n_conversations": 61,
            "variant": "surrogate-realistic",
            "adapter": {"perplexity_raw": 9.8765, "summary.rouge1": 0.2301, "n_examples": 61},
            "base": {"perplexity_raw": 12.5, "summary.rouge1": 0.1512, "n_examples": 61},
        },
        "evaluate: adapter perplexity 9.8765, summary ROUGE-1 0.2301 (base: perplexity 12.5, "
        "summary ROUGE-1 0.1512) on 61 held-out conversations",
    ),
    "audit": (
        {
            "passed": False,
            "train_corpus": "anonymized",
            "audits": {
                "canary_exposure": {"passed": True, "figures": {}, "thresholds": {}},
                "membership": {"passed": False, "figures": {}, "thresholds": {}},
            },
        },
        "audit: failed (canary_exposure ok, membership FAILED)",
    ),
    "register": (
        {
            "model_name": "veiltune-adapter",
            "model_version": 3,
            "aliases": ["candidate"],
            "champion": False,
            "decision_reason": "audit failed: membership",
            "previous_champion": 2,
            "run_id": "abc",
        },
        "register: veiltune-adapter v3 registered as candidate (audit failed: membership)",
    ),
    "export": (
        {
            "n_files": 31,
            "manifest_sha256": "0123456789abcdef" * 4,
            "public_key_sha256": "f" * 64,
            "pi_scan": {"n_scanned": 30, "n_skipped": 1},
        },
        "export: 31 files signed in exports/bundle (manifest sha256 0123456789ab); "
        "report: exports/bundle/report.html",
    ),
}


@pytest.mark.parametrize("stage", STAGES, ids=ORDER)
def test_each_stage_sums_up_its_run_in_one_line(stage: Any) -> None:
    metrics, line = SUMMARIES[stage.name]
    assert stage.summary(metrics) == line


def test_a_rank_other_than_the_first_sums_up_its_steps() -> None:
    line = BY_NAME["train"].summary({"rank": 1, "world_size": 2, "steps": 24})
    assert line == "train: rank 1 of 2: 24 steps"


def test_a_gate_without_a_statistic_says_so() -> None:
    metrics = {**SUMMARIES["gate"][0], "passed": False, "mu_plus_sigma": None}
    assert BY_NAME["gate"].summary(metrics) == (
        "gate: refused (mu+sigma undefined >= 5, 305 conversations)"
    )
