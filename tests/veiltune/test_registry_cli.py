"""`veiltune register`, `promote` and `demote` through the CLI on a real MLflow sqlite store."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.core.lineage import (
    ADAPTER_KEY,
    CORPUS_KEY,
    TRAIN_CORPUS_KEY,
    TRAINED_CORPUS_KEY,
    adapter_sha256,
    sha256_file,
)
from veiltune.cli import main

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"
MODEL = "veiltune-adapter"


def write_metrics(workspace: Path, gate: bool = True, /, **adapter: float) -> None:
    """Stage metrics as the pipeline writes them, gate and train bound to one corpus, and
    train, evaluate and audit to the workspace's adapter."""
    metrics = workspace / "metrics"
    metrics.mkdir(exist_ok=True)
    corpus = workspace / "data" / "anonymized" / "corpus.jsonl"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    if not corpus.is_file():
        corpus.write_text('{"id": "c1", "text": "Hi [PERSON_NAME_1]"}\n', encoding="utf-8")
    digest = {CORPUS_KEY: sha256_file(corpus)}
    scored = {ADAPTER_KEY: adapter_sha256(workspace / "models" / "adapter")}
    read = {TRAIN_CORPUS_KEY: "anonymized", TRAINED_CORPUS_KEY: digest[CORPUS_KEY]}
    audits = {
        name: {"passed": True, "figures": {}, "thresholds": {}}
        for name in ("pii_output", "canary", "extraction", "membership")
    }
    files = {
        "ingest": {"n_conversations": 1, "n_train": 1, "n_heldout": 0, "by_dataset": {"main": 1}},
        "base_model": {"source": "bundled:smollm2", "model_type": "llama", "n_parameters": 1},
        "gate": {
            "passed": gate,
            "mu_plus_sigma": 0.74 if gate else 7.2,
            "threshold": 5.0,
            **digest,
        },
        "audit": {"passed": True, "train_corpus": "anonymized", "audits": audits, **scored},
        "train": {"train_loss": 1.9, **digest, **read, **scored},
        "evaluate": {
            **scored,
            "variant": "anonymized",
            "n_conversations": 20,
            "adapter": {"summary.rouge1": 0.3, "perplexity_raw": 21.5, **adapter},
            "base": {"summary.rouge1": 0.1, "perplexity_raw": 20.0},
        },
    }
    for stage, body in files.items():
        (metrics / f"{stage}.json").write_text(json.dumps(body), encoding="utf-8")


def edit_metrics(workspace: Path, stage: str, **changes: Any) -> None:
    path = workspace / "metrics" / f"{stage}.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}), encoding="utf-8")


def set_register_params(workspace: Path, **register: Any) -> None:
    params = yaml.safe_load(REPO_PARAMS.read_text(encoding="utf-8"))
    params["register"].update(register)
    (workspace / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, lora_adapter_dir: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("VEILTUNE_PARENT_RUN_ID", raising=False)
    shutil.copytree(lora_adapter_dir, tmp_path / "models" / "adapter")
    set_register_params(tmp_path)
    return tmp_path


def client(workspace: Path) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{workspace / 'mlflow.db'}")


def register(workspace: Path) -> dict[str, Any]:
    assert main(["register", "--params", "params.yaml"]) == 0
    result: dict[str, Any] = json.loads((workspace / "metrics" / "register.json").read_text())
    return result


def champion(workspace: Path) -> str:
    return str(client(workspace).get_model_version_by_alias(MODEL, "champion").version)


def test_register_gives_candidate_always_and_champion_by_utility(workspace: Path) -> None:
    write_metrics(workspace, **{"summary.rouge1": 0.30})
    first = register(workspace)
    assert first["model_version"] == "1" and first["champion"] is True
    assert first["previous_champion"] is None
    write_metrics(workspace, **{"summary.rouge1": 0.25, "dialogsum.summary.rouge1": 0.2})
    lower = register(workspace)
    assert lower["aliases"] == ["candidate"] and lower["champion"] is False
    assert lower["decision_reason"] == "summary.rouge1 0.25 < champion v1's 0.3"
    assert lower["previous_champion"] == "1" and champion(workspace) == "1"
    tags = client(workspace).get_model_version(MODEL, "2").tags
    assert tags["promotion_reason"] == lower["decision_reason"]
    assert tags["eval.dialogsum.summary.rouge1"] == "0.2" and tags["eval.perplexity_raw"] == "21.5"
    assert tags["gate_threshold"] == "5.0" and tags["gate_mu_plus_sigma"] == "0.74"
    assert tags["audit_passed"] == "true" and tags["audit.membership.passed"] == "true"
    assert tags["train_corpus"] == "anonymized" and tags["train_loss"] == "1.9"
    assert {"git_commit", "params_hash", "data_version"} <= set(tags)
    # Perplexity as the utility, lower is better: version 2's 20.9 beats champion v1's 21.5.
    set_register_params(workspace, utility_metric="perplexity_raw", higher_is_better=False)
    write_metrics(workspace, perplexity_raw=20.9)
    third = register(workspace)
    assert third["champion"] is True and champion(workspace) == "3"
    assert third["decision_reason"] == "perplexity_raw 20.9 < champion v1's 21.5 (lower is better)"


def test_register_signs_what_train_read_and_the_adapter_it_audited(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hostile review of 2026-11-27: `train.corpus: raw`, `veiltune train`, params.yaml
    restored, `veiltune register` made v2 champion as 'anonymized', with the previous
    adapter's audits."""
    write_metrics(workspace)
    assert register(workspace)["champion"] is True
    write_metrics(workspace, **{"summary.rouge1": 0.9})
    edit_metrics(workspace, "train", **{TRAIN_CORPUS_KEY: "raw", TRAINED_CORPUS_KEY: "r" * 64})
    raw = register(workspace)  # params.yaml says anonymized: train.json says what it read
    assert raw["champion"] is False and "trained on the raw corpus" in raw["decision_reason"]
    assert client(workspace).get_model_version(MODEL, "2").tags["train_corpus"] == "raw"
    # The adapter changes after audit (a new train): its old audit describes another model.
    adapter = workspace / "models" / "adapter"
    (adapter / "adapter_config.json").write_text("{}", encoding="utf-8")
    capsys.readouterr()
    assert main(["register", "--params", "params.yaml"]) == 1
    err = capsys.readouterr().err
    assert "metrics/train.json: is of adapter sha256" in err and "re-run the train stage" in err
    write_metrics(workspace)
    edit_metrics(workspace, "audit", **{ADAPTER_KEY: "a" * 64})
    assert main(["register", "--params", "params.yaml"]) == 1
    assert "metrics/audit.json: is of adapter sha256 aaaaaaaaaaaa" in capsys.readouterr().err
    # Trained as 'anonymized' on a file the gate never passed.
    write_metrics(workspace)
    edit_metrics(workspace, "train", **{TRAINED_CORPUS_KEY: "r" * 64})
    assert main(["register", "--params", "params.yaml"]) == 3
    assert "not the corpus the gate passed" in capsys.readouterr().err
    assert champion(workspace) == "1"
    # The signed evidence names the adapter: promote --check holds for the champion.
    assert main(["promote", "--params", "params.yaml", "--check"]) == 0
    assert "ok   registered adapter" in capsys.readouterr().out


def test_a_missing_utility_metric_fails_before_anything_is_written(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_metrics(workspace)
    set_register_params(workspace, utility_metric="summary.bleu")
    assert main(["register", "--params", "params.yaml"]) == 1
    err = capsys.readouterr().err
    assert "veiltune register: error: metrics/evaluate.json: no numeric key 'summary.bleu'" in err
    assert "register.utility_metric" in err
    assert not (workspace / "metrics" / "register.json").exists()
    assert not (workspace / "mlflow.db").exists()


@pytest.fixture
def two_versions(workspace: Path) -> Path:
    """v1: passed everything, champion; v2: better utility but its gate failed."""
    write_metrics(workspace)
    register(workspace)
    write_metrics(workspace, False, **{"summary.rouge1": 0.5})
    assert register(workspace)["champion"] is False
    return workspace


def promote(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()  # drop what earlier commands printed
    code = main(["promote", "--params", "params.yaml", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_promote_refuses_a_failed_version_unless_forced_with_a_reason(
    two_versions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = promote(capsys, "2")
    assert code == 1
    assert "refusing to promote veiltune-adapter v2: gate failed" in err and "--force" in err
    assert champion(two_versions) == "1"
    for args in (["--force"], ["--force", "--reason", "  "]):
        code, _, err = promote(capsys, "2", *args)
        assert code == 1 and "needs a non-empty reason" in err
    code, _, err = promote(capsys, "2", "--reason", "no force")
    assert code == 1 and "pass it with --force" in err
    assert champion(two_versions) == "1"
    assert "forced_promotion_reason" not in client(two_versions).get_model_version(MODEL, "2").tags

    code, out, _ = promote(capsys, "2", "--force", "--reason", "DPO sign-off, ticket 42")
    assert code == 0
    result = json.loads(out)
    assert result["previous_champion"] == "1"
    assert result["message"] == (
        "veiltune-adapter v2 is now champion (forced over: gate failed); v1 lost the champion alias"
    )
    assert champion(two_versions) == "2"
    tags = client(two_versions).get_model_version(MODEL, "2").tags
    assert tags["forced_promotion_reason"] == "DPO sign-off, ticket 42"
    assert datetime.fromisoformat(tags["forced_promotion_at"]).tzinfo is not None
    old = client(two_versions).get_model_version(MODEL, "1")
    assert "champion" not in old.aliases and old.tags["superseded_by"] == "2"
    # The registry's pages follow the alias: tags at a glance, the model's description.
    assert (tags["champion"], old.tags["champion"]) == ("yes", "no: superseded by v2")
    description = client(two_versions).get_registered_model(MODEL).description
    assert description.splitlines()[2] == "Champion: version 2 (DPO sign-off, ticket 42)."


def test_promote_a_passing_version_moves_the_alias(
    two_versions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_metrics(two_versions, **{"summary.rouge1": 0.1})  # v3: passes, lower utility
    assert register(two_versions)["champion"] is False
    code, out, _ = promote(capsys, "3")
    assert code == 0 and champion(two_versions) == "3"
    assert json.loads(out)["message"].endswith("v3 is now champion; v1 lost the champion alias")
    assert "forced_promotion_reason" not in client(two_versions).get_model_version(MODEL, "3").tags


def test_demote_takes_the_alias_from_the_champion_only(
    two_versions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["demote", "--params", "params.yaml", "2"]) == 1
    assert "veiltune-adapter v2 is not champion (v1 is champion)" in capsys.readouterr().err
    assert main(["demote", "--params", "params.yaml", "1"]) == 0
    assert "v1 is no longer champion" in json.loads(capsys.readouterr().out)["message"]
    version = client(two_versions).get_model_version(MODEL, "1")
    assert "champion" not in version.aliases and "demoted_at" in version.tags
    assert version.tags["champion"] == "no: demoted"
    description = client(two_versions).get_registered_model(MODEL).description
    assert "No version holds `champion`" in description
    assert "candidate" in client(two_versions).get_model_version(MODEL, "2").aliases
    assert main(["demote", "--params", "params.yaml", "1"]) == 1
    assert "(no version is champion)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["promote", "7"], "veiltune-adapter has no version 7 (versions: 1, 2)"),
        (["demote", "7"], "veiltune-adapter has no version 7 (versions: 1, 2)"),
        (["promote", "latest"], "VERSION must be a version number such as 3, got 'latest'"),
    ],
)
def test_unknown_versions_are_refused_by_name(
    two_versions: Path, capsys: pytest.CaptureFixture[str], *, command: list[str], message: str
) -> None:
    assert main([command[0], "--params", "params.yaml", *command[1:]]) == 1
    assert f"veiltune {command[0]}: error: {message}" in capsys.readouterr().err
    assert champion(two_versions) == "1"


def test_an_unknown_model_is_refused(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_register_params(workspace, model_name="no-such-model")
    assert main(["promote", "--params", "params.yaml", "1"]) == 1
    assert "no registered model 'no-such-model'" in capsys.readouterr().err


def test_register_again_with_nothing_new_reports_the_same_version(workspace: Path) -> None:
    write_metrics(workspace)
    first = register(workspace)
    again = register(workspace)
    assert again == first  # the same version, decision and run: register.json unchanged
    versions = client(workspace).search_model_versions(f"name='{MODEL}'")
    assert [str(v.version) for v in versions] == ["1"]
    write_metrics(workspace, **{"summary.rouge1": 0.31})  # new evidence: a new version
    assert register(workspace)["model_version"] == "2"


def test_register_reports_aliases_as_the_registry_holds_them(workspace: Path) -> None:
    write_metrics(workspace)
    assert register(workspace)["champion"] is True
    assert main(["demote", "1", "--params", "params.yaml"]) == 0
    assert register(workspace)["aliases"] == ["candidate"]  # not replayed from an old file


def test_register_refuses_an_adapter_not_trained_on_the_gated_corpus(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_metrics(workspace)
    train = workspace / "metrics" / "train.json"
    train.write_text(json.dumps({"train_loss": 1.9, CORPUS_KEY: "0" * 64}))
    assert main(["register", "--params", "params.yaml"]) == 3
    assert "not trained on the corpus the gate judged" in capsys.readouterr().err
    write_metrics(workspace)
    (workspace / "data" / "anonymized" / "corpus.jsonl").write_text('{"id": "c1", "text": "x"}\n')
    assert main(["register", "--params", "params.yaml"]) == 3
    assert "changed after the gate" in capsys.readouterr().err
    assert not (workspace / "mlflow.db").exists() or not client(workspace).search_model_versions(
        f"name='{MODEL}'"
    )


def test_a_hand_run_stage_leaves_no_pipeline_run_running(workspace: Path) -> None:
    write_metrics(workspace)
    register(workspace)
    runs = client(workspace).search_runs(
        [client(workspace).get_experiment_by_name("veiltune").experiment_id]
    )
    parents = [r for r in runs if r.data.tags.get("veiltune.kind") == "pipeline"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"


def test_a_locked_store_is_one_error_naming_it(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from components.core.tracking import configure_tracking

    def short_busy_timeout(*args: Any) -> tuple[str, Any]:
        # MLflow has SQLite wait 20 s for a lock before "database is locked": same error, sooner.
        statement, parameters = args[2:4]
        return statement.replace("busy_timeout = 20000", "busy_timeout = 100"), parameters

    configure_tracking("veiltune")  # the store exists, as after any stage
    lock = sqlite3.connect(workspace / "mlflow.db", isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    event.listen(Engine, "before_cursor_execute", short_busy_timeout, retval=True)
    try:
        assert main(["demote", "1", "--params", "params.yaml"]) == 1
    finally:
        event.remove(Engine, "before_cursor_execute", short_busy_timeout)
        lock.close()
    err = capsys.readouterr().err
    assert f"MLflow store sqlite:///{workspace / 'mlflow.db'}: database is locked" in err
    assert "another process" in err and "Traceback" not in err


def test_a_read_only_store_says_what_to_do() -> None:
    from sqlalchemy.exc import OperationalError

    from components.core.errors import BackendError
    from components.core.tracking import store_errors

    orig = sqlite3_error("attempt to write a readonly database")
    read_only = "read-only; make the file and its folder writable"
    with pytest.raises(BackendError, match=read_only), store_errors():
        raise OperationalError("INSERT ...", {}, orig)
    with pytest.raises(ZeroDivisionError), store_errors():
        raise ZeroDivisionError  # anything else passes through


def sqlite3_error(message: str) -> Exception:
    import sqlite3

    return sqlite3.OperationalError(message)
