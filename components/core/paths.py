"""Where each stage reads and writes by default (the same paths dvc.yaml names)."""

from __future__ import annotations

from pathlib import Path

PARAMS = Path("params.yaml")
# The folder that holds veiltune's packages: the checkout in a development install,
# site-packages in a plain one. Without a params file, the config defaults' relative paths
# (the policy files, veiltune/policy/...) are read from here: the copy shipped as package data.
INSTALL_ROOT = Path(__file__).resolve().parents[2]
PACKAGED_POLICY = INSTALL_ROOT / "veiltune" / "policy"
RAW_DIR = Path("data/raw")
RAW_CORPUS = RAW_DIR / "corpus.jsonl"
SALT = RAW_DIR / "salt"
GRADES_EXPORT = RAW_DIR / "grading" / "summaries.jsonl"  # summaries for graders: raw text
CANARIES = RAW_DIR / "canaries.jsonl"  # planted secrets: raw data, read only by the audit
# the one-run audit's canaries and their coins: which training inserted (train, audit read)
AUDIT_CANARIES = RAW_DIR / "audit_canaries.jsonl"
# The producer's signing key (export.signing_key's default): owner-only, outside data/raw so
# that erasing the raw data (purge-raw, make clean) never takes the key that vouches for
# every bundle and registered version signed before. Releases before 2026-11-27 kept it in
# data/raw; it is moved here on first use (components/core/signing.py).
KEYS_DIR = Path(".veiltune/keys")
SIGNING_KEY = KEYS_DIR / "signing_key.pem"
LEGACY_SIGNING_KEY = RAW_DIR / "signing_key.pem"
# A user corpus's original record ids → their pseudonyms (components/ingest/pseudonyms.py):
# raw data, never copied downstream.
ID_PSEUDONYMS = RAW_DIR / "id_pseudonyms.jsonl"
INVENTORY = Path("data/pi_inventory/gold.jsonl")
SPLITS = Path("data/splits.json")
BASE_MODEL = Path("models/base")
ANON_CORPUS = Path("data/anonymized/corpus.jsonl")
ANON_SPANS = Path("data/anonymized/spans.jsonl")
RISK_DIR = Path("data/risk")
RISK_TABLE = RISK_DIR / "risk_table.csv"  # the table the gate reads (risk.source)
RISK_ESTIMATE_TABLE = RISK_DIR / "estimate_table.csv"  # the automatic estimate, always
RISK_ITEMS = RISK_DIR / "residual_items.jsonl"  # every leaked item, by source; never its text
RISK_REPORT_MD = RISK_DIR / "report.md"
RISK_REPORT_HTML = RISK_DIR / "report.html"
RISK_HISTOGRAM = RISK_DIR / "histogram.png"
RISK_BREAKDOWN = RISK_DIR / "breakdown.json"  # every statistic; metrics/risk.json the headline
# The review sample: anonymized text, never logged to MLflow as it is. Only the bundle's copy,
# with its residual PI masked and scanned, reaches the artifact store (the export run's bundle/).
REVIEW_DIR = Path("data/review")
GATE_RESULT = Path("data/gate/validation.json")
GATE_PAGE = Path("data/gate/validation.html")  # the validation result, as an offline page
ADAPTER = Path("models/adapter")
TRAIN_WORK = Path(".veiltune/train")
PER_CONVERSATION = Path("data/evaluate/per_conversation.jsonl")  # scores by conversation id
# Every utility score's 95% interval (metrics/evaluate.json keeps the headline scores')
UTILITY_INTERVALS = Path("data/evaluate/intervals.json")
# Each audit's per-item figures (per canary, per info type): core.audit_record
AUDIT_DETAILS = Path("data/audit/details.json")
BUNDLE = Path("exports/bundle")
UTILITY_REPORT = Path("reports/utility")
DVC_LOCK = Path("dvc.lock")
METRICS_DIR = Path("metrics")
# Plot data beside the metrics (dvc.yaml's plots, committed with them): numbers, no text.
TRAIN_LOSS = METRICS_DIR / "train_loss.csv"  # step, loss
UTILITY_SCORES = METRICS_DIR / "utility.csv"  # metric, adapter, base
# The run's verdicts in one row (core.headline.dvc_headline): register's, the last verdict.
HEADLINE = METRICS_DIR / "headline.json"


# The folders the pipeline writes into; an output there may have its sub-folder created.
OUTPUT_ROOTS = (Path("data"), METRICS_DIR, Path("models"), Path("exports"), Path("reports"))


def metrics_file(stage: str) -> Path:
    return METRICS_DIR / f"{stage}.json"


def is_pipeline_output(path: Path, workspace: Path = Path(".")) -> bool:
    """Whether ``path`` lies in one of the pipeline's own output folders (``OUTPUT_ROOTS``)
    of ``workspace``."""
    resolved = path.resolve()
    return any(resolved.is_relative_to((workspace / root).resolve()) for root in OUTPUT_ROOTS)


GRADES_REPORT = Path("reports/grading.json")  # graders' and the judge's agreement: numbers
