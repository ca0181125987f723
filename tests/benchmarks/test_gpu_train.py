"""The GPU training benchmark's code path, tiny on this CPU (its speeds mean nothing here):
the stage's own train_lora timed per step, a failing setting kept in its own row, and the
benchmark's switches really changing what trains."""

from __future__ import annotations

import argparse
import json
import types
from pathlib import Path
from typing import Any

import pytest

from components.ingest.generate import generate_corpus


def test_a_setting_trains_the_stage_and_is_timed_per_step(
    tmp_path: Path, base_model_dir: Path
) -> None:
    from benchmarks.gpu_train import run_setting

    corpus = _corpus(tmp_path)
    row = run_setting("stage_default", base_model_dir, corpus=corpus, steps=2, warmup=1, smoke=True)
    assert row["setting"] == "stage_default" and row["engine"] == "torch"
    assert row["steps_timed"] == 2 and row["tokens_per_s"] > 0 and row["median_step_s"] > 0
    assert row["tokens_per_step"] <= row["batch_size"] * row["max_seq_length"]
    assert row["lora_model_tflops_per_s"] >= 0 and row["peak_memory_gib"] is None  # no GPU


def test_a_failing_setting_stays_in_its_own_row(tmp_path: Path) -> None:
    from benchmarks.gpu_train import _child

    rows = tmp_path / "rows.jsonl"
    arguments = argparse.Namespace(
        config=tmp_path / "no-model", corpus=tmp_path / "no-corpus.jsonl", steps=1, warmup=1,
        smoke=True, output=rows,
    )  # fmt: skip
    row = _child("stage_default", arguments)
    assert row["setting"] == "stage_default" and "error" in row
    assert (
        json.loads(rows.read_text()) == row
        and "stage_default" in rows.with_suffix(".log").read_text()
    )


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.jsonl"
    records = (json.dumps(c.to_record()) for c in generate_corpus(6, 1))
    corpus.write_text("".join(line + "\n" for line in records), encoding="utf-8")
    return corpus


def test_the_switches_change_the_model_and_the_trainer_arguments() -> None:
    import torch

    from benchmarks.gpu_train import _apply_switches

    stage = types.SimpleNamespace(
        base_model=lambda *a: torch.nn.Linear(2, 2),
        schedule_arguments=lambda *a, **k: {"bf16": True},
    )
    _apply_switches(stage, {"bf16_weights": True, "liger": True, "compile": True})
    assert stage.base_model(None, None).weight.dtype == torch.bfloat16
    arguments: dict[str, Any] = stage.schedule_arguments()
    assert arguments == {"bf16": True, "use_liger_kernel": True, "torch_compile": True}
    untouched = types.SimpleNamespace(base_model=None, schedule_arguments=None)
    _apply_switches(untouched, dict.fromkeys(("bf16_weights", "liger", "compile"), False))
    assert untouched.base_model is None and untouched.schedule_arguments is None


def test_mfu_is_the_lora_flops_rate_over_the_peak() -> None:
    from benchmarks.gpu_train import _figures

    figures = _figures([{"setting": "a", "lora_model_tflops_per_s": 98.9}, {"error": "x"}], 989.0)
    assert figures["settings"][0]["mfu_lora"] == pytest.approx(0.1)
    assert "mfu_lora" not in figures["settings"][1]
