"""MLflow dataset inputs: the corpus a run read, recorded by path and digest, never by text."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
import yaml

from components.core import paths
from components.core.headline import read_headline_inputs, write_dvc_headline
from components.core.lineage import sha256_file
from components.core.tracking import (
    EXPERIMENT_KIND_TAG,
    PARENT_RUN_ENV,
    configure_tracking,
    log_corpus_input,
    results_run,
    stage_run,
    start_pipeline_run,
)


def test_a_corpus_input_names_the_file_its_digest_and_no_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    _local_store(tmp_path, monkeypatch)
    corpus = Path("corpus.jsonl")
    corpus.write_text('{"id": "c1", "turns": [{"text": "Call me at 555-0100"}]}\n')
    experiment = configure_tracking("inputs")
    with mlflow.start_run(experiment_id=experiment) as run:
        digest = log_corpus_input(
            corpus, ["c2", "c1"], name="raw corpus: held-out split", context="evaluation"
        )
        assert (
            log_corpus_input(corpus, ["c1"], name="one", context="evaluation") != digest
        )  # the ids count
    inputs = mlflow.get_run(run.info.run_id).inputs
    assert inputs is not None
    [first, _] = inputs.dataset_inputs
    assert (first.dataset.name, first.dataset.digest) == ("raw corpus: held-out split", digest)
    assert len(digest) == 32 and "corpus.jsonl" in first.dataset.source
    tags = {tag.key: tag.value for tag in first.tags}
    assert tags["corpus_sha256"] == sha256_file(corpus) and tags["n_conversations"] == "2"
    assert tags["mlflow.data.context"] == "evaluation"
    assert "555-0100" not in str(first)  # the rows themselves are never logged


def test_the_experiment_opens_as_model_training_not_genai(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    _local_store(tmp_path, monkeypatch)
    created = configure_tracking("fresh")
    assert MlflowClient().get_experiment(created).tags[EXPERIMENT_KIND_TAG] == (
        "custom_model_development"
    )
    # An experiment made before the tag existed gets it; one a user set keeps theirs.
    older = mlflow.create_experiment("older")
    assert configure_tracking("older") == older
    assert MlflowClient().get_experiment(older).tags[EXPERIMENT_KIND_TAG] == (
        "custom_model_development"
    )
    chosen = mlflow.create_experiment("chosen", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    configure_tracking("chosen")
    assert MlflowClient().get_experiment(chosen).tags[EXPERIMENT_KIND_TAG] == "genai_development"


def write_results(folder: Path) -> None:
    """The metrics files and params a finished pipeline run leaves in the workspace."""
    metrics = folder / "metrics"
    metrics.mkdir()
    audits = {
        "canary": {"passed": True, "thresholds": {"max_exposure": 10.0}},
        "membership": {"passed": False, "thresholds": {"max_auc": 0.75}},
        "plain_sight": {"passed": True, "thresholds": {}},  # reports only: never counted
    }
    files = {
        "gate": {"passed": True, "mu_plus_sigma": 0.74, "threshold": 5.0, "corpus_sha256": "c"},
        "audit": {"passed": False, "audits": audits},
        "evaluate": {"adapter": {"summary.rouge1": 0.33}, "base": {"summary.rouge1": 0.2}},
        "register": {"champion": False, "model_version": "4"},
    }
    for stage, body in files.items():
        (metrics / f"{stage}.json").write_text(json.dumps(body), encoding="utf-8")
    params = {
        "train": {"method": "sft", "max_steps": 40},
        "register": {"utility_metric": "summary.rouge1"},
    }
    (folder / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")


def test_the_pipeline_run_carries_the_headline_results_and_params(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    _local_store(tmp_path, monkeypatch)
    monkeypatch.delenv(PARENT_RUN_ENV, raising=False)
    write_results(tmp_path)
    with stage_run("register", "headline", root=tmp_path) as run:
        parent = run.data.tags["mlflow.parentRunId"]
    # The one-row file is register's declared output (components.register.stage), not every
    # stage's: DVC holds an output to the stage that declares it.
    assert not (tmp_path / "metrics" / "headline.json").exists()
    data = MlflowClient().get_run(parent).data
    assert data.metrics == {
        "gate.passed": 1.0,
        "gate.mu_plus_sigma": 0.74,
        "gate.threshold": 5.0,
        "audit.passed": 0.0,
        "audit.n_passed": 1.0,
        "audit.n_audits": 2.0,
        "register.champion": 0.0,
        "utility.adapter.summary.rouge1": 0.33,
        "utility.base.summary.rouge1": 0.2,
    }
    assert data.params == {
        "train.method": "sft",
        "train.max_steps": "40",
        "register.utility_metric": "summary.rouge1",
    }
    assert {k: data.tags[k] for k in ("gate", "audits", "champion")} == {
        "gate": "passed",
        "audits": "failed (1/2 passed)",
        "champion": "no (v4)",
    }
    # A second stage of the same pipeline run updates the results; params stay as logged.
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"train": {"method": "dpo"}}))
    with stage_run("export", "headline", root=tmp_path):
        pass
    assert MlflowClient().get_run(parent).data.params["train.method"] == "sft"


def test_a_pipeline_run_whose_stages_all_skipped_points_at_the_one_with_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    _local_store(tmp_path, monkeypatch)
    experiment = configure_tracking("skipped")
    client = MlflowClient()
    alone = start_pipeline_run(experiment)
    assert results_run(alone) == alone  # nothing earlier: it stays
    produced = start_pipeline_run(experiment)
    client.create_run(experiment, tags={"mlflow.parentRunId": produced})
    empty = start_pipeline_run(experiment)
    assert results_run(produced) == produced
    assert results_run(empty) == produced
    assert client.get_run(empty).info.lifecycle_stage == "deleted"
    assert client.get_run(produced).info.lifecycle_stage == "active"


def test_dvc_metrics_show_of_the_headline_fits_120_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    write_results(tmp_path)
    # The widest values: long floats, a failed audit, a long utility metric name.
    evaluate = {"adapter": {"summary.rouge1": 0.123456789}, "base": {"summary.rouge1": 0.98765}}
    (tmp_path / "metrics" / "evaluate.json").write_text(json.dumps(evaluate))
    metrics, params = read_headline_inputs(paths.METRICS_DIR, paths.PARAMS)
    write_dvc_headline(paths.HEADLINE, metrics, params=params)
    headline = json.loads((tmp_path / "metrics" / "headline.json").read_text())
    assert headline == {
        "gate": "passed",
        "mu+sigma": 0.74,
        "audits": "1/2 passed",
        "champion": "no (v4)",
        "summary.rouge1": 0.1235,
        "base": 0.9877,
    }
    dvc = [str(Path(sys.executable).parent / "dvc")]
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([*dvc, "init", "-q"], check=True)
    shown = subprocess.run(
        [*dvc, "metrics", "show", "metrics/headline.json"],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
    ).stdout
    lines = shown.splitlines()
    assert "1/2 passed" in shown and len(lines) == 2
    assert max(len(line) for line in lines) <= 120, shown


def _local_store(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow's default store, ``./mlruns``, in ``folder``: no tracking URI from outside."""
    monkeypatch.chdir(folder)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def test_a_stage_records_its_metrics_file_and_its_run_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    from components.core.stage import UndeclaredRead
    from components.stages import default_context, for_stage

    _local_store(tmp_path, monkeypatch)
    monkeypatch.delenv(PARENT_RUN_ENV, raising=False)
    gate = dataclasses.replace(for_stage(default_context(), "gate"), workspace=tmp_path)
    page = gate.output(paths.GATE_PAGE)
    page.parent.mkdir(parents=True)
    page.write_text("<p>verdict</p>", encoding="utf-8")
    with gate.mlflow_run() as run:
        gate.record(
            {"passed": True, "mu_plus_sigma": 0.5, "note": "text"},
            artifacts=[page],
            logged={"mu_plus_sigma": 0.5},
        )
    written = tmp_path / paths.metrics_file("gate")
    assert json.loads(written.read_text(encoding="utf-8"))["note"] == "text"
    client = MlflowClient()
    data = client.get_run(run.info.run_id).data
    assert data.metrics == {"mu_plus_sigma": 0.5}  # what `logged` names, not the file's
    assert data.params["gate.threshold"] == "5.0"  # the stage's config
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert logged == {"gate.json", paths.GATE_PAGE.name}
    # export declares no metrics file: its numbers go to its run alone
    export = dataclasses.replace(for_stage(default_context(), "export"), workspace=tmp_path)
    with export.mlflow_run() as run:
        export.record({"n_files": 40})
    assert client.get_run(run.info.run_id).data.metrics == {"n_files": 40.0}
    assert not (tmp_path / paths.metrics_file("export")).exists()
    # only a stage the registry runs records
    with pytest.raises(UndeclaredRead, match="no stage is running"):
        dataclasses.replace(gate, stage=None).record({})
