"""How the anonymize stage treats what it finds: what to find beyond the backend, what to
leave, and how to replace (``AnonymizationPolicy``), built from params by ``factory.py``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from components.anonymize.label_keys import PiLabelKeys
from components.anonymize.term_lists import TermLists

if TYPE_CHECKING:
    from components.anonymize.evidence import NameEvidence
    from components.anonymize.surrogates import Surrogates


@dataclass(frozen=True)
class AnonymizationPolicy:
    """What to find beyond the backend, what to leave, and how to replace."""

    # placeholder | mask | type | surrogate, or residual: [RESIDUAL_<TYPE>], for what
    # anonymized text still holds (the compliance bundle's copy of the review sample)
    mode: str = "placeholder"
    mask_char: str = "*"
    speaker_roles: frozenset[str] = frozenset()
    terms: TermLists = field(default_factory=TermLists)
    # Known category values, by "context" and classification label ("purpose", "outcome"):
    # only a value listed here is a category; any other is scanned as text.
    class_labels: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # The surrogate maker, in surrogate mode.
    surrogates: Surrogates | None = None
    # Label keys whose value is PI whatever it holds (a PIN, a ZIP code), by info type.
    pi_label_keys: PiLabelKeys = field(default_factory=PiLabelKeys)
    # What vouches for a span on an everyday word ("my bill"); None keeps every span.
    evidence: NameEvidence | None = None
