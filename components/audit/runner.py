"""Run the audits params select against one model, from the corpus's splits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audits.canary import audit_canaries
from audits.extraction import audit_extraction
from audits.membership import audit_membership
from audits.pii_output import adversarial_prompts, audit_outputs, task_prompts
from audits.plain_sight import audit_plain_sight
from audits.result import AuditResult
from components.anonymize import StandIns
from components.audit.config import AuditConfig
from components.core import paths
from components.core.corpus import Conversation
from components.ingest import Canary, InventoryEntry


@dataclass(frozen=True)
class AuditInputs:
    """What the attacks know. Raw text is the attacker's side knowledge (the attacks score
    or prompt with it); only anonymized text is ever shown in prompts whose outputs are
    searched for PI, so a value in an output came from the model."""

    train_raw: Sequence[Conversation]
    heldout_raw: Sequence[Conversation]
    heldout_anonymized: Sequence[Conversation]
    canaries: Sequence[Canary]
    inventory: Sequence[InventoryEntry]
    salt: str
    # Hiding in plain sight: ``train_raw``'s conversations as anonymized, and as read with
    # their surrogates back to placeholders; and the public base model the attacker asks.
    train_anonymized: Sequence[Conversation] = ()
    train_placeholder_view: Sequence[Conversation] = ()
    base_model: Path = paths.BASE_MODEL
    locale: str = "en_US"  # of the membership attack's stand-in values (the surrogates')


def run_audits(
    model: Any, tokenizer: Any, config: AuditConfig, inputs: AuditInputs, detector: Any = None
) -> list[AuditResult]:
    from components.train import generate

    results = []
    if "pii_output" in config.audits:
        prompts = task_prompts(inputs.heldout_anonymized, config.n_prompts)
        prompts += adversarial_prompts(inputs.heldout_anonymized)
        outputs = generate(
            model, tokenizer, prompts, config.max_new_tokens, progress="audit pii_output"
        )
        pii = audit_outputs(
            outputs,
            inputs.inventory,
            inputs.salt,
            config.min_value_chars,
            config.max_leaks,
            detector,
        )
        results.append(pii)
    if "canary" in config.audits and inputs.canaries:
        hosts = {c.id: c for c in inputs.train_raw}
        canary = audit_canaries(
            model,
            tokenizer,
            inputs.canaries,
            hosts,
            config.canary_candidates,
            config.max_canary_exposure,
            config.seed,
        )
        results.append(canary)
    if "extraction" in config.audits:
        extraction = audit_extraction(
            model,
            tokenizer,
            inputs.train_raw,
            config.extraction_prefixes,
            config.extraction_k,
            config.max_extraction_rate,
            config.max_prompt_tokens,
        )
        results.append(extraction)
    if "membership" in config.audits:
        n = config.mia_conversations
        membership = audit_membership(
            model,
            tokenizer,
            inputs.train_raw[:n],
            inputs.heldout_raw[:n],
            config.max_mia_auc,
            config.max_prompt_tokens,
            StandIns(inputs.salt, inputs.locale),
        )
        results.append(membership)
    if "plain_sight" in config.audits and inputs.train_anonymized:
        from components.train import load_base

        base, base_tokenizer = load_base(inputs.base_model)
        views = {
            "anonymized": inputs.train_anonymized,
            "placeholders": inputs.train_placeholder_view,
        }
        plain_sight = audit_plain_sight(
            base,
            base_tokenizer,
            inputs.train_raw,
            views,
            config.plain_sight_conversations,
            config.max_prompt_tokens,
        )
        results.append(plain_sight)
    return results
