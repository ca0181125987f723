"""The GPU LoRA benchmark's code path, run tiny on this CPU (its numbers mean nothing here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_gpu_benchmark_runs_its_smoke_configuration(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_lora", "--smoke", "--work-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout[run.stdout.rindex('{\n  "') :])  # after the Trainer logs
    assert result["engine"] == "DeepSpeedEngine" and result["steps_timed"] == 2
    assert (
        result["tokens_per_s_per_gpu"] > 0
        and 0 < result["mfu_lora"] < result["mfu_full_finetune_convention"]
    )
    assert 0 < result["lora_parameters"] < result["frozen_parameters"]


def test_model_flops_count_lora_below_full_finetuning() -> None:
    from benchmarks.gpu_lora import model_flops_per_token

    flops = model_flops_per_token(n_frozen=1000, n_lora=10, layers=2, hidden=8, seq=16)
    assert flops == {"lora": 4 * 1000 + 60 + 12 * 2 * 8 * 16, "full": 6 * 1010 + 12 * 2 * 8 * 16}
