"""Run the audits params select against one model, from the corpus's splits."""

from __future__ import annotations

from typing import Any

from audits.protocol import AuditContext, AuditInputs
from audits.registry import AUDITS
from audits.result import AuditResult
from components.anonymize import StandIns
from components.audit.config import AuditConfig

__all__ = ["AuditInputs", "run_audits"]


def run_audits(
    model: Any, tokenizer: Any, *, config: AuditConfig, inputs: AuditInputs, detector: Any = None
) -> list[AuditResult]:
    """Each audit of ``config.audits`` that has the inputs it needs, in the registry's
    order (``metrics/audit.json`` lists them so).

    Args:
        detector: the entity engine whose findings in outputs ``pii_output`` reports.
    """
    # the membership attack's stand-ins: the anonymize stage's realistic surrogates
    stand_ins = StandIns(inputs.salt, inputs.locale)
    context = AuditContext(model, tokenizer, inputs, config, stand_ins, detector)
    selected = [audit for name, audit in AUDITS.items() if name in config.audits]
    return [audit.run(context) for audit in selected if audit.applies(inputs)]
