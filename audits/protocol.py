"""The one shape of an audit: a name, what it needs from the shared inputs, and ``run``.

Every audit is a subclass of :class:`Audit` in a module of its own, registered by name in
``audits.registry``; the audit stage builds one :class:`AuditContext` (the model under
attack, what the attacker knows, the params) and runs each audit ``audit.audits`` selects.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from audits.result import AuditResult
from components.core import paths
from components.core.corpus import Conversation
from components.ingest import AuditCanary, Canary, InventoryEntry


@dataclass(frozen=True)
class DpClaim:
    """What DP training claims: the accountant's ε spent, at δ (``metrics/train.json``)."""

    epsilon: float
    delta: float


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
    # The one-run audit: every canary ingest drew, with its coin; and what training claims
    # (``dp.epsilon`` spent at ``dp.delta``), None without train.privacy.
    audit_canaries: Sequence[AuditCanary] = ()
    dp_claim: DpClaim | None = None


class AuditSettings(Protocol):
    """The ``audit`` params the audits read (``components.audit.config.AuditConfig`` has
    them, with their checks and defaults; an audit that needs another adds it to both)."""

    @property
    def max_new_tokens(self) -> int: ...
    @property
    def n_prompts(self) -> int: ...
    @property
    def min_value_chars(self) -> int: ...
    @property
    def max_leaks(self) -> int: ...
    @property
    def canary_candidates(self) -> int: ...
    @property
    def max_canary_exposure(self) -> float: ...
    @property
    def extraction_prefixes(self) -> int: ...
    @property
    def extraction_k(self) -> int: ...
    @property
    def max_extraction_rate(self) -> float: ...
    @property
    def mia_conversations(self) -> int: ...
    @property
    def max_mia_auc(self) -> float: ...
    @property
    def plain_sight_conversations(self) -> int: ...
    @property
    def max_prompt_tokens(self) -> int: ...
    @property
    def dp_guesses(self) -> int: ...
    @property
    def seed(self) -> int: ...


class StandInSource(Protocol):
    """Where the membership attack's reference values come from (the audit stage passes the
    anonymize stage's realistic surrogate generator, ``components.anonymize.StandIns``)."""

    def replace(
        self, key: str, text: str, *, spans: Sequence[tuple[int, int, str, str]]
    ) -> tuple[str, list[tuple[int, int]]]:
        """``text`` with each span (start, end, info type, entity) replaced by a value of
        its kind and shape, the same one per entity, and where the values sit."""
        ...


@dataclass(frozen=True)
class AuditContext:
    """Everything an audit may use: the model under attack and its tokenizer, what the
    attacker knows, the params, and the tools the audit stage lends (built once a run)."""

    model: Any
    tokenizer: Any
    inputs: AuditInputs
    settings: AuditSettings
    stand_ins: StandInSource
    # the anonymize stage's entity engine (``detect(texts)``: each text's spans), or None
    detector: Any = None


class Audit(ABC):
    """One attack: ``name`` is its key in ``audit.audits`` and ``metrics/audit.json``;
    ``needs`` names the :class:`AuditInputs` fields it cannot run without (the stage skips
    the audit, reporting nothing, when one is empty)."""

    name: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()

    def applies(self, inputs: AuditInputs) -> bool:
        """Whether every input this audit needs is there (not empty)."""
        return all(getattr(inputs, field) for field in self.needs)

    @abstractmethod
    def run(self, context: AuditContext) -> AuditResult:
        """Attack ``context.model``; the verdict, its figures and thresholds."""
