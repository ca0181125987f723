"""The CLI's logging: veiltune's progress at INFO, other libraries' warnings only, unless -v."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from veiltune.cli import OWN_LOGGERS, configure_logging

THIRD_PARTY = ("great_expectations", "great_expectations.datasource.fluent.config", "httpx")


@pytest.fixture
def restored_levels() -> Iterator[None]:
    """Put back the levels configure_logging sets, so later tests see the ones they had."""
    names = ["", *OWN_LOGGERS, *THIRD_PARTY, "mlflow.store.db.utils"]
    levels = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("restored_levels")
def test_veiltune_logs_progress_and_other_libraries_only_warnings() -> None:
    configure_logging(verbose=False)
    for name in ("components.gate.suite", "audits.membership", "flows.pipeline", "veiltune"):
        assert logging.getLogger(name).getEffectiveLevel() == logging.INFO, name
    for name in THIRD_PARTY:
        assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING, name
    assert logging.getLogger("mlflow.store.db.utils").getEffectiveLevel() == logging.CRITICAL


@pytest.mark.usefixtures("restored_levels")
def test_verbose_logs_everything_at_debug() -> None:
    configure_logging(verbose=True)
    for name in ("components.evaluate.utility", "audits", *THIRD_PARTY):
        assert logging.getLogger(name).getEffectiveLevel() == logging.DEBUG, name


def test_a_gate_error_is_the_one_line_the_gate_prints(tmp_path: Path) -> None:
    # Great Expectations logs 200+ INFO lines when imported; they used to bury this error.
    corpus = tmp_path / "data" / "anonymized" / "corpus.jsonl"
    corpus.parent.mkdir(parents=True)
    corpus.write_text('{"id": "c1", "text": "Hi [PERSON_NAME_1]"}\n')
    (tmp_path / "data" / "risk").mkdir()
    (tmp_path / "data" / "risk" / "risk_table.csv").write_text(
        "conversation_id,context,score,n_leaked\nc1,sales,0,0\n"
    )
    (tmp_path / "data" / "splits.json").write_text('{"train": ["c1"], "heldout": []}')
    (tmp_path / "metrics").mkdir()
    # Another corpus's hash: the gate refuses it in its run, after GX is imported (a bad
    # param, .inf, is refused before: tests/core/test_config.py).
    (tmp_path / "metrics" / "risk.json").write_text(
        json.dumps({"anonymized_corpus_sha256": hashlib.sha256(b"other").hexdigest()})
    )
    (tmp_path / "params.yaml").write_text("gate: {threshold: 5.0}\n")
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    done = subprocess.run(
        [sys.executable, "-m", "veiltune.cli", "gate"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith(
        "veiltune gate: error: data/anonymized/corpus.jsonl is not the corpus the risk table "
        "was computed on"
    )
    assert done.stdout == ""
