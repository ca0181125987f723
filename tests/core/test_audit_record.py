"""metrics/audit.json keeps each audit's verdict, thresholds and the figures they hold; the
other figures (per canary, per info type...) go to the detail file, and come back whole for
the readers that show them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.core.audit_record import bound_figure, split_details, with_details

CANARIES = {
    f"canary-{kind}-x{r}": {"entity_type": kind.upper(), "exposure": 1.5, "rank": 9,
                            "rank_exposure": 1.2, "repetitions": r}
    for kind in ("financial_account_number", "phone_number") for r in (1, 4, 16)
}  # fmt: skip
# audit_summary's record as a default run's audit stage makes it.
SUMMARY: dict[str, Any] = {
    "passed": True,
    "train_corpus": "anonymized",
    "audits": {
        "canary": {
            "passed": True,
            "figures": {
                "canaries": CANARIES,
                "canary_exposure": {"1": 3.218, "16": 6.521, "4": 0.05},
                "max_rank_exposure": 7.651,
                "n_candidates": 200,
            },
            "thresholds": {"max_exposure": 10.0},
        },
        "pii_output": {
            "passed": True,
            "figures": {
                "detector_findings_by_type": {"PERSON_NAME": 8, "USER_NAME": 3},
                "n_leaks": 0,
                "n_prompts": 24,
            },
            "thresholds": {"max_leaks": 0},
        },
        "membership": {
            "passed": True,
            "figures": {"mia_auc": 0.41, "mia_attack": "pi_calibrated"},
            "thresholds": {"max_auc": 0.75},
        },
        "plain_sight": {
            "passed": True,
            "figures": {
                "n_with_residual": 1,
                "anonymized": {"n_conversations": 1, "rarity_auc": 0.5, "lm_auc": 1.0},
            },
            "thresholds": {},
        },
    },
}


def test_a_threshold_holds_the_figure_it_names() -> None:
    figures = SUMMARY["audits"]["canary"]["figures"]
    assert bound_figure("max_exposure", figures) == "canary_exposure"
    assert bound_figure("max_auc", {"mia_auc": 0.4, "mia_attack": "x"}) == "mia_auc"
    assert bound_figure("max_leaks", {"n_leaks": 0, "detector_findings_by_type": {}}) == "n_leaks"
    assert bound_figure("limit", figures) is None


def test_per_item_figures_move_to_the_detail_file_and_come_back_whole() -> None:
    metrics, details = split_details(SUMMARY)
    canary = metrics["audits"]["canary"]
    assert canary == {
        "passed": True,
        "figures": {"canary_exposure": {"1": 3.218, "16": 6.521, "4": 0.05}},
        "thresholds": {"max_exposure": 10.0},
    }
    assert metrics["audits"]["pii_output"]["figures"] == {"n_leaks": 0}
    assert metrics["audits"]["membership"]["figures"] == {"mia_auc": 0.41}
    # held to no threshold: its verdict alone
    assert metrics["audits"]["plain_sight"] == {"passed": True, "figures": {}, "thresholds": {}}
    assert (metrics["passed"], metrics["train_corpus"]) == (True, "anonymized")
    figures = {name: audit["figures"] for name, audit in SUMMARY["audits"].items()}
    assert details == {
        "canary": {k: v for k, v in figures["canary"].items() if k != "canary_exposure"},
        "pii_output": {"detector_findings_by_type": {"PERSON_NAME": 8, "USER_NAME": 3},
                       "n_prompts": 24},
        "membership": {"mia_attack": "pi_calibrated"},
        "plain_sight": figures["plain_sight"],
    }  # fmt: skip
    assert with_details(metrics, details) == SUMMARY


def _metrics_show_width(folder: Path, audit: dict[str, Any]) -> tuple[int, str]:
    (folder / "metrics").mkdir(parents=True)
    (folder / "metrics" / "audit.json").write_text(json.dumps(audit))
    (folder / "dvc.yaml").write_text(
        "stages:\n  audit:\n    cmd: 'true'\n    metrics:\n"
        "      - metrics/audit.json: {cache: false}\n"
    )
    dvc = str(Path(sys.executable).parent / "dvc")
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run([dvc, "init", "-q"], cwd=folder, check=True)
    shown = subprocess.run(
        [dvc, "metrics", "show"], cwd=folder, check=True, capture_output=True, text=True,
        env={**os.environ, "COLUMNS": "120"},
    ).stdout  # fmt: skip
    return max(len(line) for line in shown.splitlines()), shown


def test_dvc_metrics_show_of_the_audit_has_no_column_per_item(tmp_path: Path) -> None:
    before, _ = _metrics_show_width(tmp_path / "before", SUMMARY)
    after, shown = _metrics_show_width(tmp_path / "after", split_details(SUMMARY)[0])
    assert "canary-phone_number" not in shown and "PERSON_NAME" not in shown, shown
    assert "audits.canary.figures.canary_exposure.16" in shown
    assert after < before / 3, (before, after)


@pytest.mark.parametrize("metrics", [{"passed": True}, {"passed": True, "audits": "x"}])
def test_an_older_file_without_audits_reads_as_it_is(metrics: dict[str, Any]) -> None:
    assert with_details(metrics, {"canary": {"canaries": {}}}) == metrics
