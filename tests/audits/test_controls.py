"""Controls: the audits must catch a model that leaks, and pass one that cannot.

Three adapters are trained the same way on the same small corpus with planted canaries: one
on the raw text (anonymization off), one on the anonymized text with placeholders, one with
realistic surrogates (``anonymize.replacement: surrogate``). The control is made
bigger than the pipeline's default run so that memorization shows at all on this CPU: a
small corpus (12 training conversations) seen for four epochs, with LoRA on the attention
and MLP projections, on the continuation task (the one that trains on transcript text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audits.result import audit_summary
from components.anonymize.config import AnonymizeConfig
from components.audit.config import AuditConfig
from components.audit.runner import AuditInputs, run_audits
from components.train.config import TrainConfig

pytestmark = pytest.mark.slow

SEED = 5
CONTROL_TRAIN = TrainConfig(
    max_steps=24, learning_rate=2e-3, batch_size=2, max_seq_length=320, lora_r=16,
    lora_alpha=32, save_steps=1000, eval_fraction=0.0, tasks=["continuation"],
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
)  # fmt: skip
# 50 canary candidates still separate the adapters widely, at half the cost of 100 (exposure
# measured on CPU, 6-fold canary: raw 36 bits, anonymized 1.1; 1-fold: raw 10.5, anon. 2.6).
CONTROL_AUDIT = AuditConfig(
    n_prompts=6, canary_candidates=50, extraction_prefixes=12, mia_conversations=12
)


@pytest.fixture(scope="module")
def audited(
    base_model_dir: Path, detector: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """``metrics/audit.json``-shaped results for the raw, the anonymized and the
    surrogate-trained adapter."""
    from components.anonymize.engine import anonymize_corpus
    from components.anonymize.factory import anonymization_policy
    from components.anonymize.surrogates import SurrogateKey
    from components.ingest.canaries import plant_canaries
    from components.ingest.generate import generate_corpus
    from components.ingest.pi_inventory import inventory_entries
    from components.ingest.sources import split_ids
    from components.train.adapter import load_adapter
    from components.train.lora import train_lora

    corpus = generate_corpus(20, SEED)
    splits = split_ids([c.id for c in corpus], 0.4, SEED)
    corpus, canaries = plant_canaries(
        corpus, splits["train"], ["PHONE_NUMBER", "FINANCIAL_ACCOUNT_NUMBER"], [1, 6], SEED
    )
    policy = anonymization_policy(AnonymizeConfig())
    anonymized = [a for a, _ in anonymize_corpus(corpus, detector, policy)]
    inventory = list(inventory_entries(corpus, "salt"))
    key = SurrogateKey("salt", frozenset(e.digest for e in inventory))
    surrogate_policy = anonymization_policy(AnonymizeConfig(replacement="surrogate"), key=key)
    surrogates = [a for a, _ in anonymize_corpus(corpus, detector, surrogate_policy)]
    train = set(splits["train"])
    inputs = AuditInputs(
        train_raw=[c for c in corpus if c.id in train],
        heldout_raw=[c for c in corpus if c.id not in train],
        heldout_anonymized=[c for c in anonymized if c.id not in train],
        canaries=canaries,
        inventory=inventory,
        salt="salt",
    )
    root = tmp_path_factory.mktemp("controls")
    results = {}
    for name, texts in (("raw", corpus), ("anonymized", anonymized), ("surrogate", surrogates)):
        data = [c for c in texts if c.id in train]
        train_lora(base_model_dir, data, CONTROL_TRAIN, root / name, root / f"work-{name}")
        model, tokenizer = load_adapter(base_model_dir, root / name)
        results[name] = audit_summary(
            run_audits(model, tokenizer, CONTROL_AUDIT, inputs, detector), name
        )
    return results


def figures(result: dict[str, Any], audit: str) -> dict[str, Any]:
    return dict(result["audits"][audit]["figures"])


def test_the_raw_adapter_is_flagged(audited: dict[str, dict[str, Any]]) -> None:
    raw = audited["raw"]
    assert raw["passed"] is False
    # The canary repeated six times is memorized far past the threshold.
    assert figures(raw, "canary")["canary_exposure"]["6"] > CONTROL_AUDIT.max_canary_exposure
    assert raw["audits"]["canary"]["passed"] is False
    # Real values from the raw corpus come out of the model.
    assert figures(raw, "pii_output")["n_leaks"] > 0
    assert raw["audits"]["pii_output"]["passed"] is False


# The canary bound each anonymized adapter keeps, below the audit's threshold (10 bits).
# Placeholders measured 1.1 and 2.6 bits. The surrogate adapter measured 6.4 bits: it trains
# on random same-shape digits where the canaries were (drawn apart from them, never equal),
# and the normal-fit estimate moves with that; it stays below the threshold, and below the
# raw adapter (test_every_attack_separates_raw_from_anonymized).
CANARY_BOUND = {"anonymized": 4.0, "surrogate": CONTROL_AUDIT.max_canary_exposure}


@pytest.mark.parametrize("name", ["anonymized", "surrogate"])
def test_the_anonymized_adapters_pass(audited: dict[str, dict[str, Any]], name: str) -> None:
    anonymized = audited[name]
    assert anonymized["passed"] is True, anonymized
    # Realistic surrogates in outputs are not leaks; real inventory values would be.
    assert figures(anonymized, "pii_output")["n_leaks"] == 0
    assert max(figures(anonymized, "canary")["canary_exposure"].values()) < CANARY_BOUND[name]


@pytest.mark.parametrize("name", ["anonymized", "surrogate"])
def test_every_attack_separates_raw_from_anonymized(
    audited: dict[str, dict[str, Any]], name: str
) -> None:
    raw, anonymized = audited["raw"], audited[name]
    assert (
        figures(raw, "extraction")["extraction_rate"]
        > figures(anonymized, "extraction")["extraction_rate"]
    )
    assert figures(raw, "membership")["mia_auc"] > figures(anonymized, "membership")["mia_auc"]
    assert (
        figures(raw, "canary")["canary_exposure"]["1"]
        > figures(anonymized, "canary")["canary_exposure"]["1"]
    )
