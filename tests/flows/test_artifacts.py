"""What a run's Prefect artifacts say, built from the stages' metrics files."""

from __future__ import annotations

from flows.artifacts import (
    StageReport,
    artifact_key,
    flatten,
    mlflow_run_url,
    run_markdown,
    stage_markdown,
    verdict,
)

GATE = {"passed": False, "mu_plus_sigma": 5.61234, "threshold": 5.0, "n_conversations": 20,
        "risk_table_sha256": "ab" * 32}  # fmt: skip


def test_keys_are_lowercase_with_dashes() -> None:
    assert artifact_key("base_model", "summary") == "base-model-summary"
    assert artifact_key("pipeline", "Summary") == "pipeline-summary"


def test_a_stage_summary_says_what_it_did_its_check_and_its_key_metrics() -> None:
    text = stage_markdown(StageReport("gate", "Ran", 3.25, GATE))
    assert text.startswith("## gate: ran in 3.2 s")
    assert "Check: **FAILED**" in text
    assert "| mu_plus_sigma | 5.612 |" in text and "| n_conversations | 20 |" in text
    assert "sha256" not in text  # hashes stay in the table, not the glance
    skipped = stage_markdown(StageReport("ingest", "Skipped", 1.0, {"n_train": 8}))
    assert "skipped: nothing it depends on changed" in skipped
    restored = stage_markdown(StageReport("risk", "Restored", 2.0, {"mean": 0.2}))
    assert restored.startswith("## risk: restored: the run cache held its outputs")
    assert "another worker" in restored and "| mean | 0.2 |" in restored
    failed = stage_markdown(StageReport("ingest", "Failed"))
    assert "**failed**: its error is the task run's state message" in failed


def test_verdicts_of_the_gate_the_audit_and_register() -> None:
    assert verdict(StageReport("gate", "Ran", metrics={"passed": True})) == "passed"
    assert verdict(StageReport("audit", "Ran", metrics={"passed": False})) == "FAILED"
    assert verdict(StageReport("register", "Ran", metrics={"champion": False})) == "candidate"
    assert verdict(StageReport("train", "Ran", metrics={"passed": True})) == ""
    assert verdict(StageReport("gate", "Failed")) == ""


def test_the_metrics_table_flattens_nested_metrics() -> None:
    metrics = {"adapter": {"rouge1": 0.5, "n_examples": {"summary": 2}}, "tasks": ["a", "b"],
               "audits": [{"x": 1}]}  # fmt: skip
    assert flatten(metrics) == {
        "adapter.rouge1": 0.5,
        "adapter.n_examples.summary": 2,
        "tasks": "a, b",
        "audits": "1 items",
    }


def test_the_run_summary_has_one_row_per_stage() -> None:
    reports = [
        StageReport("ingest", "Skipped", 1.04, {"n_train": 8}),
        StageReport("gate", "Ran", 2.0, GATE),
        StageReport("train", "Failed"),
    ]
    text = run_markdown(reports, ["Flow run: `x`."])
    assert "| ingest | Skipped |  | 1.0 |" in text
    assert "| gate | Ran | FAILED | 2.0 |" in text
    assert "| train | Failed |  |  |" in text


def test_the_mlflow_link_points_at_the_tracking_server_or_the_local_ui(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("VEILTUNE_MLFLOW_UI_URL", raising=False)
    assert mlflow_run_url("sqlite:////w/mlflow.db", "1", run_id="abc") == (
        "http://127.0.0.1:5000/#/experiments/1/runs/abc"
    )
    assert mlflow_run_url("http://mlflow:8080/", "2", run_id="r").startswith(
        "http://mlflow:8080/#/"
    )
    monkeypatch.setenv("VEILTUNE_MLFLOW_UI_URL", "http://127.0.0.1:5001")
    assert mlflow_run_url("sqlite:///x", "1", run_id="r").startswith("http://127.0.0.1:5001/#/")


def test_a_stage_dvc_ran_nothing_for_is_completed_under_its_own_name() -> None:
    from flows.pipeline import stage_state

    names = {
        s: stage_state(StageReport("risk", s, 1.0)).name for s in ("Ran", "Skipped", "Restored")
    }
    assert names == {"Ran": "Completed", "Skipped": "Skipped", "Restored": "Restored"}
    assert stage_state(StageReport("risk", "Restored", 1.0)).is_completed()
