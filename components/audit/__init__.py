"""The audit stage: runs the attacks of top-level ``audits/`` against the adapter.

Other stages import from here only; the modules behind these names are this stage's own."""

from __future__ import annotations

from components.audit.config import AuditConfig

__all__ = ["AuditConfig"]
