"""Every audit by name, in the order the audit stage runs them: ``audit.audits`` may name
these and no other. Adding an audit is its module and one line below."""

from __future__ import annotations

import dataclasses

from audits.canary import CanaryAudit
from audits.dp_one_run import DpOneRunAudit
from audits.extraction import ExtractionAudit
from audits.membership import MembershipAudit
from audits.pii_output import PiOutputAudit
from audits.plain_sight import PlainSightAudit
from audits.protocol import Audit, AuditInputs

_INPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(AuditInputs))


def registry(*audits: Audit) -> dict[str, Audit]:
    """The audits by name; two of one name, or a need that is no ``AuditInputs`` field, is
    a mistake in the code, caught at import."""
    by_name: dict[str, Audit] = {}
    for audit in audits:
        if audit.name in by_name:
            raise ValueError(f"two audits named {audit.name!r}")
        unknown = sorted(set(audit.needs) - _INPUT_FIELDS)
        if unknown:
            raise ValueError(f"audit {audit.name!r} needs {unknown}: not AuditInputs fields")
        by_name[audit.name] = audit
    return by_name


AUDITS: dict[str, Audit] = registry(
    PiOutputAudit(),
    CanaryAudit(),
    ExtractionAudit(),
    MembershipAudit(),
    PlainSightAudit(),
    DpOneRunAudit(),
)
