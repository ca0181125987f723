"""Controls: every audit must be able to fail, and pass a model that never saw the PI.

Two tiny models (tests/tiny_model.py: a 2-layer Llama with a tokenizer of the corpus) learn
the same dozen calls with planted canaries by heart, on the continuation task in the chat
format training uses: one on the raw text, one on the anonymized text. The raw one must fail
every audit that can fail (PI in outputs, canary exposure, verbatim extraction, membership);
the anonymized one must pass them all. The anonymized model knows the calls by heart too, so
the membership attack must tell knowing a person from knowing where a name comes: before it
was calibrated against stand-in values it flagged this model in four seeds of seven (AUC
up to 0.89 at five a side). Seconds, not the 21 minutes of the three LoRA
adapters on SmolLM2 this replaced: how much power the audits have on a real model, at the
pipeline's scale and at several canary repetitions, is `benchmarks/audit_controls.py`'s
measure (docs, Results).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audits.result import audit_summary
from components.anonymize.config import AnonymizeConfig
from components.audit.config import AuditConfig
from components.audit.runner import AuditInputs, run_audits
from tests.tiny_model import memorize, tiny_memorizer

SEED = 5
REPETITIONS = [1, 4]  # the canary planted once, and four times
STEPS = 200  # the tiny models' loss falls to about 0.01: by heart
CONTROL_AUDIT = AuditConfig(
    n_prompts=12, max_new_tokens=96, canary_candidates=50, extraction_prefixes=8,
    mia_conversations=6,
)  # fmt: skip
# plain_sight never fails. pii_output is held to nothing here: whether a 12-call memorizer
# prompted with held-out calls happens to emit a training call's value is chance (0 leaks
# at this seed in benchmarks/results/audit_controls.json); that it fails a model that does
# is tests/audits/test_pii_output.py's.
FAILING = ("canary", "extraction", "membership")


@pytest.fixture(scope="module")
def audited(detector: Any, base_model_dir: Path) -> dict[str, dict[str, Any]]:
    """``metrics/audit.json``-shaped results of the raw and the anonymized memorizer."""
    from transformers import AutoTokenizer

    from components.anonymize.engine import anonymize_corpus
    from components.anonymize.factory import anonymization_policy
    from components.anonymize.surrogates import SurrogateKey
    from components.ingest.canaries import plant_canaries
    from components.ingest.generate import generate_corpus
    from components.ingest.pi_inventory import inventory_entries
    from components.ingest.sources import split_ids
    from components.train.chat_tokens import tokenize_example
    from components.train.tasks import training_examples, transcript

    corpus = generate_corpus(12, SEED)
    splits = split_ids([c.id for c in corpus], 0.4, seed=SEED)
    corpus, canaries = plant_canaries(
        corpus,
        splits["train"],
        entity_types=["PHONE_NUMBER", "FINANCIAL_ACCOUNT_NUMBER"],
        repetitions=REPETITIONS,
        seed=SEED,
    )
    # the default replacement (surrogates) under a fixed key: a key drawn per process made
    # the anonymized calls, and so the audits' figures, differ from run to run
    key = SurrogateKey("salt", frozenset(e.digest for e in inventory_entries(corpus, "salt")))
    policy = anonymization_policy(AnonymizeConfig(), key=key)
    anonymized = [a for a, _ in anonymize_corpus(corpus, detector, policy=policy)]
    train = set(splits["train"])
    inputs = AuditInputs(
        train_raw=[c for c in corpus if c.id in train],
        heldout_raw=[c for c in corpus if c.id not in train],
        heldout_anonymized=[c for c in anonymized if c.id not in train],
        canaries=canaries,
        inventory=list(inventory_entries(corpus, "salt")),
        salt="salt",
    )
    chat = AutoTokenizer.from_pretrained(base_model_dir).chat_template  # SmolLM2's
    texts = [transcript(c) for c in (*corpus, *anonymized)]
    results = {}
    for name, calls in (("raw", corpus), ("anonymized", anonymized)):
        model, tokenizer = tiny_memorizer(texts, chat)
        examples = training_examples(
            [c for c in calls if c.id in train], ["continuation"], eval_fraction=0, seed=SEED
        )
        rows = [tokenize_example(e, tokenizer, max_length=512) for e in examples.train]
        memorize(model, rows, pad_id=tokenizer.pad_token_id, steps=STEPS)
        results[name] = audit_summary(
            run_audits(model, tokenizer, config=CONTROL_AUDIT, inputs=inputs, detector=detector),
            name,
        )
    return results


def figures(result: dict[str, Any], audit: str) -> dict[str, Any]:
    return dict(result["audits"][audit]["figures"])


@pytest.mark.parametrize("audit", FAILING)
def test_a_model_that_learnt_the_raw_calls_fails_every_audit(
    audited: dict[str, dict[str, Any]], audit: str
) -> None:
    raw = audited["raw"]
    assert raw["audits"][audit]["passed"] is False, figures(raw, audit)
    assert raw["passed"] is False


def test_what_the_raw_model_gives_away_is_beyond_each_threshold(
    audited: dict[str, dict[str, Any]],
) -> None:
    raw = audited["raw"]
    exposure = figures(raw, "canary")["canary_exposure"]
    assert min(exposure.values()) > CONTROL_AUDIT.max_canary_exposure  # even planted once
    assert figures(raw, "extraction")["extraction_rate"] > CONTROL_AUDIT.max_extraction_rate
    membership = figures(raw, "membership")
    assert membership["mia_attack"] == "pi_calibrated"
    assert membership["mia_auc"] > CONTROL_AUDIT.max_mia_auc
    assert membership["mia_p_value"] < 0.01  # not chance: every member above every other


def test_the_same_model_on_the_anonymized_calls_passes(
    audited: dict[str, dict[str, Any]],
) -> None:
    anonymized = audited["anonymized"]
    assert anonymized["passed"] is True, anonymized
    assert figures(anonymized, "pii_output")["n_leaks"] == 0
    assert figures(anonymized, "extraction")["extraction_rate"] == 0
    raw, safe = figures(audited["raw"], "canary"), figures(anonymized, "canary")
    assert all(
        safe["canary_exposure"][k] < raw["canary_exposure"][k] for k in raw["canary_exposure"]
    )
