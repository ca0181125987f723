"""Stage metrics in the shapes the export reads, for the report and model card tests."""

from __future__ import annotations

import copy
from typing import Any

from components.core.corpus import Conversation, PiSpan, Turn
from components.ingest.pi_inventory import InventoryEntry, inventory_entries

AUDIT_NEW = {
    "passed": False,
    "train_corpus": "anonymized",
    "audits": {
        "pii_output": {
            "passed": True,
            "figures": {
                "pii_leaks_by_type": {"PHONE_NUMBER": 0},
                "n_leaks": 0,
                "n_prompts": 40,
                "detector_findings_by_type": {},
            },
            "thresholds": {"max_leaks": 0},
        },
        "canary": {
            "passed": True,
            "figures": {"canary_exposure": {"1": 1.3, "4": 0.8, "16": 2.1}, "n_candidates": 1000},
            "thresholds": {"max_exposure": 6.0},
        },
        "extraction": {
            "passed": True,
            "figures": {"extraction_rate": 0.02, "k": 16, "n_prefixes": 50},
            "thresholds": {"max_extraction_rate": 0.2},
        },
        "membership": {
            "passed": False,
            "figures": {"mia_auc": 0.81, "mia_tpr_at_1pct_fpr": 0.0},
            "thresholds": {"max_auc": 0.7},
        },
    },
}

AUDIT_OLD = {
    "passed": False,
    "pii_output": {
        "max_leaks": 0,
        "n_leaks": 1,
        "n_outputs_with_leaks": 1,
        "n_prompts": 24,
        "passed": False,
        "pii_leaks_by_type": {"ORGANIZATION_NAME_SPEAKER": 1},
    },
}

SCORES = {
    "summary.rouge1": 0.33,
    "summary.rougeL": 0.28,
    "purpose.macro_f1": 0.07,
    "perplexity_raw": 21.5,
    "n_examples": {"summary": 20},
}


def stage_metrics(audit: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    return {
        "ingest": {
            "n_conversations": 300,
            "n_turns": 3247,
            "n_characters": 178420,
            "n_pi_mentions": 5575,
            "n_train": 271,
            "n_heldout": 29,
            "by_context": {"sales": 74, "voicemail": 37},
        },
        "base_model": {
            "model_type": "llama",
            "n_parameters": 134515008,
            "source": "bundled:smollm2",
        },
        "anonymize": {
            "n_conversations": 300,
            "n_replacements": 4709,
            "replacements_by_type": {"PERSON_NAME": 4587, "EMAIL_ADDRESS": 122},
        },
        "risk": {
            "count": 300,
            "mean": 0.17,
            "std": 0.57,
            "p95": 2.0,
            "max": 3.0,
            "mu_plus_sigma": 0.74,
            "source": "ground_truth",
            "by_context": {
                "sales": {
                    "count": 74,
                    "mean": 0.2,
                    "std": 0.66,
                    "p95": 2.0,
                    "max": 3.0,
                    "mu_plus_sigma": 0.86,
                }
            },
        },
        "gate": {
            "passed": True,
            "threshold": 5.0,
            "mu_plus_sigma": 0.74,
            "n_expectations": 10,
            "n_failed_expectations": 0,
        },
        "train": {"steps": 30, "train_loss": 2.5, "n_examples": 1084},
        "evaluate": {
            "variant": "anonymized",
            "n_conversations": 20,
            "adapter": SCORES,
            "base": {**SCORES, "summary.rouge1": 0.15, "perplexity_raw": 20.5},
        },
        "audit": copy.deepcopy(AUDIT_NEW if audit is None else audit),
        "register": {
            "model_name": "veiltune-adapter",
            "model_version": "3",
            "aliases": ["candidate"],
            "champion": False,
        },
    }


PARAMS: dict[str, Any] = {
    "ingest": {"corpus_path": None},
    "base_model": {"source": "bundled:smollm2"},
    "anonymize": {"replacement": "placeholder", "score_threshold": 0.35},
    "gate": {"threshold": 5.0},
    "train": {"corpus": "anonymized", "max_steps": 30, "lora_r": 32},
}
REGISTRY = {
    "model_name": "veiltune-adapter",
    "model_version": "3",
    "aliases": ["candidate"],
    "aliases_source": "MLflow model registry at export time",
    "champion_version": "2",
}
LINEAGE = {
    "git_commit": "abc123",
    "dvc_lock_sha256": "f" * 64,
    "params_hash": "0" * 16,
    "mlflow": {"pipeline_run_id": "p1", "export_run_id": "e1"},
}

SALT = "bundle-salt"
TEXT = "Hi, this is Marta Kowalczyk from Brightwave Logistics, call 555 010 4477"


def inventory() -> list[InventoryEntry]:
    """Three specific values of one conversation: a name, a speaker's company, a phone."""
    conversation = Conversation(
        "c1",
        (Turn("Agent", TEXT),),
        pi=(
            PiSpan(0, 12, 27, "PERSON_NAME", "p1"),
            PiSpan(0, 33, 53, "ORGANIZATION_NAME_SPEAKER", "o1"),
            PiSpan(0, 60, 72, "PHONE_NUMBER", "t1"),
        ),
    )
    return list(inventory_entries([conversation], SALT))
