"""The gate's verdict is bound to the corpus it judged: train and register refuse another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.errors import GateFailed
from components.core.lineage import sha256_file
from components.gate.binding import (
    CORPUS_KEY,
    RISK_TABLE_KEY,
    gate_digests,
    require_gate_passed,
    require_trained_on_gated_corpus,
)
from veiltune.cli import main

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "c1", "text": "Hi [PERSON_NAME_1]"}\n')
    return path


def test_the_gate_records_what_it_judged_and_refuses_a_stale_risk_table(
    corpus: Path, tmp_path: Path
) -> None:
    table = tmp_path / "risk_table.csv"
    table.write_text("conversation_id,context,score,n_leaked\nc1,sales,0,0\n")
    digests = gate_digests(
        {CORPUS_KEY: sha256_file(corpus)}, corpus, risk_table=table, risk_source="metrics/risk.json"
    )
    assert digests == {CORPUS_KEY: sha256_file(corpus), RISK_TABLE_KEY: sha256_file(table)}
    corpus.write_text('{"id": "c1", "text": "Hi Jim"}\n')  # anonymize re-run after risk
    with pytest.raises(GateFailed, match="not the corpus the risk table was computed on"):
        gate_digests(
            {CORPUS_KEY: digests[CORPUS_KEY]},
            corpus,
            risk_table=table,
            risk_source="metrics/risk.json",
        )


def test_train_refuses_a_corpus_the_gate_did_not_pass(corpus: Path) -> None:
    verdict = {"passed": True, CORPUS_KEY: sha256_file(corpus)}
    assert require_gate_passed(verdict, Path("gate.json"), corpus=corpus) == sha256_file(corpus)
    with pytest.raises(GateFailed, match="no gate result"):
        require_gate_passed(None, Path("gate.json"), corpus=corpus)
    with pytest.raises(GateFailed, match="failed the gate"):
        require_gate_passed({**verdict, "passed": False}, Path("gate.json"), corpus=corpus)
    with pytest.raises(GateFailed, match="names no corpus hash"):
        require_gate_passed({"passed": True}, Path("gate.json"), corpus=corpus)
    corpus.write_text('{"id": "c1", "text": "Hi Jim Halpert"}\n')  # weaker params, by hand
    with pytest.raises(GateFailed, match="changed after the gate passed it"):
        require_gate_passed(verdict, Path("gate.json"), corpus=corpus)


def test_register_refuses_an_adapter_trained_on_another_corpus(corpus: Path) -> None:
    judged = {CORPUS_KEY: sha256_file(corpus)}
    require_trained_on_gated_corpus(judged, judged, train_file=Path("train.json"), corpus=corpus)
    with pytest.raises(GateFailed, match="not trained on the corpus the gate judged"):
        require_trained_on_gated_corpus({}, judged, train_file=Path("train.json"), corpus=corpus)


def test_veiltune_train_stops_before_loading_anything_when_the_corpus_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "anonymized").mkdir(parents=True)
    corpus = tmp_path / "data" / "anonymized" / "corpus.jsonl"
    corpus.write_text('{"id": "c1", "text": "Hi [PERSON_NAME_1]"}\n')
    (tmp_path / "metrics").mkdir()
    gate = {"passed": True, "mu_plus_sigma": 0.5, "threshold": 5.0, CORPUS_KEY: sha256_file(corpus)}
    (tmp_path / "metrics" / "gate.json").write_text(json.dumps(gate))
    corpus.write_text('{"id": "c1", "text": "Hi Jim Halpert"}\n')
    assert main(["train", "--params", str(REPO_PARAMS)]) == 3
    assert "changed after the gate passed it" in capsys.readouterr().err
    assert not (tmp_path / "models").exists() and not (tmp_path / "mlflow.db").exists()
