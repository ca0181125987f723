"""Where each stage reads and writes by default (the same paths dvc.yaml names)."""

from __future__ import annotations

from pathlib import Path

PARAMS = Path("params.yaml")
RAW_DIR = Path("data/raw")
RAW_CORPUS = RAW_DIR / "corpus.jsonl"
SALT = RAW_DIR / "salt"
INVENTORY = Path("data/pi_inventory/gold.jsonl")
SPLITS = Path("data/splits.json")
BASE_MODEL = Path("models/base")
ANON_CORPUS = Path("data/anonymized/corpus.jsonl")
ANON_SPANS = Path("data/anonymized/spans.jsonl")
RISK_TABLE = Path("data/risk/risk_table.csv")
GATE_RESULT = Path("data/gate/validation.json")
ADAPTER = Path("models/adapter")
TRAIN_WORK = Path(".veiltune/train")
BUNDLE = Path("exports/bundle")
DVC_LOCK = Path("dvc.lock")
METRICS_DIR = Path("metrics")


def metrics_file(stage: str) -> Path:
    return METRICS_DIR / f"{stage}.json"
