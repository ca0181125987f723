"""What replaces one span: one function a replacement method, one registry of them.

A replacer gets the span in its place (``Target``) and what the conversation's replacing
holds (``Replacing``), and returns the text that replaces the span and the method to record
in the spans file. ``anonymize.replacement`` names one of ``REPLACERS`` (its validation reads
this registry); adding a method is one function here and one line in ``REPLACERS``. The
numbered placeholder every method may fall back on comes from the one placeholder grammar,
``components/core/placeholders.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from components.anonymize.spans import Span

if TYPE_CHECKING:
    from components.anonymize.surrogates import SurrogateBook

# How a span was replaced (the spans file's "method"): the replacer's name, or, in surrogate
# mode, the placeholder a type without a generator keeps.
SURROGATE_METHOD = "surrogate"
FALLBACK_METHOD = "placeholder/fallback"


@dataclass(frozen=True)
class Target:
    """One span to replace, where it stands.

    Attributes:
        span: what was found.
        surface: the text it covers.
        token: its numbered placeholder in the conversation (``[PERSON_NAME_1]``).
        before: the text of its field before it.
        after: the text of its field after it.
    """

    span: Span
    surface: str
    token: str
    before: str
    after: str


@dataclass(frozen=True)
class Replacing:
    """What one conversation's replacing holds: the mask character, and in surrogate mode
    the conversation's surrogate book."""

    mask_char: str = "*"
    surrogates: SurrogateBook | None = None


class Replacer(Protocol):
    def __call__(self, target: Target, replacing: Replacing, /) -> tuple[str, str]:
        """The text that replaces ``target`` and the method to record."""
        ...


def placeholder(target: Target, replacing: Replacing) -> tuple[str, str]:
    """``[PERSON_NAME_1]``: the type, numbered within the conversation."""
    return target.token, "placeholder"


def mask(target: Target, replacing: Replacing) -> tuple[str, str]:
    """``*****``: one mask character for each character replaced."""
    return replacing.mask_char * len(target.surface), "mask"


def type_tag(target: Target, replacing: Replacing) -> tuple[str, str]:
    """``[PERSON_NAME]``: the type alone."""
    return f"[{target.span.entity_type}]", "type"


def surrogate(target: Target, replacing: Replacing) -> tuple[str, str]:
    """A realistic value of the same type, the same for every mention in the conversation;
    the placeholder for a type with no generator."""
    assert replacing.surrogates is not None, "the surrogate replacer needs a surrogate book"
    span = target.span
    context = (target.before, target.after)
    value = replacing.surrogates.render(
        span.entity_type, target.surface, entity=target.token, context=context
    )
    return (target.token, FALLBACK_METHOD) if value is None else (value, SURROGATE_METHOD)


def residual(target: Target, replacing: Replacing) -> tuple[str, str]:
    """``[RESIDUAL_PERSON_NAME]``: what anonymized text still held (the compliance bundle's
    copy of the review sample); not a value of ``anonymize.replacement``."""
    return f"[RESIDUAL_{target.span.entity_type}]", "residual"


# anonymize.replacement's values, each its replacer.
REPLACERS: Mapping[str, Replacer] = {
    "placeholder": placeholder,
    "mask": mask,
    "type": type_tag,
    SURROGATE_METHOD: surrogate,
}
# Modes veiltune itself uses, never a param value.
INTERNAL_REPLACERS: Mapping[str, Replacer] = {"residual": residual}


def replacer(mode: str) -> Replacer:
    """The replacer of ``mode`` (``AnonymizationPolicy.mode``)."""
    return {**REPLACERS, **INTERNAL_REPLACERS}[mode]
