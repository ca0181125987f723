"""MLflow dataset inputs: the corpus a run read, recorded by path and digest, never by text."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.lineage import sha256_file
from components.core.tracking import EXPERIMENT_KIND_TAG, configure_tracking, log_corpus_input


def test_a_corpus_input_names_the_file_its_digest_and_no_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    corpus = Path("corpus.jsonl")
    corpus.write_text('{"id": "c1", "turns": [{"text": "Call me at 555-0100"}]}\n')
    experiment = configure_tracking("inputs")
    with mlflow.start_run(experiment_id=experiment) as run:
        digest = log_corpus_input(corpus, ["c2", "c1"], "raw corpus: held-out split", "evaluation")
        assert log_corpus_input(corpus, ["c1"], "one", "evaluation") != digest  # the ids count
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

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
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
