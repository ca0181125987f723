"""What a stage prints on the terminal: one summary line, not its metrics JSON (which stays
in metrics/<stage>.json, and on stdout with --json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.lineage import sha256_file
from veiltune.cli import main


@pytest.fixture
def gate_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What the gate reads, as the risk stage leaves it: two conversations of low risk."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    corpus = tmp_path / "data" / "anonymized" / "corpus.jsonl"
    corpus.parent.mkdir(parents=True)
    corpus.write_text('{"id": "c1", "text": "Hi [PERSON_NAME_1]"}\n{"id": "c2", "text": "Hi"}\n')
    (tmp_path / "data" / "risk").mkdir()
    (tmp_path / "data" / "risk" / "risk_table.csv").write_text(
        "conversation_id,context,score,n_leaked\nc1,sales,0,0\nc2,sales,1,0\n"
    )
    (tmp_path / "data" / "splits.json").write_text('{"train": ["c1"], "heldout": ["c2"]}')
    (tmp_path / "metrics").mkdir()
    risk = {"anonymized_corpus_sha256": sha256_file(corpus)}
    (tmp_path / "metrics" / "risk.json").write_text(json.dumps(risk))
    (tmp_path / "params.yaml").write_text("gate: {threshold: 5.0}\n")
    return tmp_path


def test_a_stage_prints_one_summary_line_not_its_metrics(
    gate_inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gate", "--params", "params.yaml"]) == 0
    out = capsys.readouterr().out
    # mean 0.5, std 0.5 (population): mu + sigma 1.0 against the threshold 5
    assert out.splitlines() == ["gate: passed (mu+sigma 1 < 5, 2 conversations)"]
    assert "{" not in out
    written = json.loads((gate_inputs / "metrics" / "gate.json").read_text())
    assert written["passed"] is True and written["mu_plus_sigma"] == 1.0


def test_json_prints_the_stage_metrics_as_before(
    gate_inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gate", "--params", "params.yaml", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((gate_inputs / "metrics" / "gate.json").read_text())
