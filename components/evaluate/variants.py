"""Variant names: what an adapter was trained on, told apart down to the replacement method.

A variant is one setting of ``train.corpus`` (and, for the anonymized corpus, of
``anonymize.replacement`` and ``anonymize.surrogate.method``). The evaluate stage names its
run's variant from params; the utility profile turns a name back into the ``dvc exp run -S``
overrides that train it; the report orders and compares variants by name.
"""

from __future__ import annotations

from collections.abc import Iterable

from components.anonymize import REPLACEMENTS as ANONYMIZE_REPLACEMENTS
from components.anonymize import SURROGATE_METHODS
from components.core.errors import InputError

ORACLE = "oracle"  # train.corpus raw: the upper bound
MASKED = "masked"  # train.corpus masked: every placeholder a bare [MASK]
PLACEHOLDER = "placeholder"
BASE = "base"  # the base model zero-shot, scored by every evaluate run
SURROGATE = "surrogate"
SURROGATE_PREFIX = f"{SURROGATE}-"
REPLACEMENTS = tuple(r for r in ANONYMIZE_REPLACEMENTS if r != SURROGATE)
SURROGATE_VARIANTS = tuple(f"{SURROGATE_PREFIX}{method}" for method in SURROGATE_METHODS)
TRAINED_VARIANTS = (ORACLE, MASKED, *REPLACEMENTS, *SURROGATE_VARIANTS)
# evaluate.json used to name its variant by train.corpus; the anonymized corpus then always
# had placeholders.
_LEGACY = {"anonymized": PLACEHOLDER, "raw": ORACLE}


def variant_name(corpus: str, replacement: str, surrogate_method: str | None = None) -> str:
    """The variant an adapter trained with these settings is: ``oracle``, ``masked``, the
    replacement's name, or ``surrogate-<method>``."""
    if corpus != "anonymized":
        return _LEGACY.get(corpus, corpus)
    if replacement == SURROGATE:
        return f"{SURROGATE_PREFIX}{surrogate_method}"
    return replacement


def canonical(variant: str) -> str:
    """The current name of a variant an older evaluate.json recorded (``anonymized``)."""
    return _LEGACY.get(variant, variant)


def variant_overrides(variant: str) -> dict[str, str]:
    """The params (dotted key → value) that train ``variant``.

    Raises:
        InputError: ``variant`` is not one of ``TRAINED_VARIANTS``.
    """
    if variant not in TRAINED_VARIANTS:
        raise InputError(
            f"unknown variant {variant!r}: expected one of {', '.join(TRAINED_VARIANTS)}"
        )
    if variant == ORACLE:
        return {"train.corpus": "raw"}
    if variant == MASKED:  # [MASK] stands where a placeholder was
        return {"train.corpus": "masked", "anonymize.replacement": PLACEHOLDER}
    if variant.startswith(SURROGATE_PREFIX):
        return {
            "train.corpus": "anonymized",
            "anonymize.replacement": SURROGATE,
            "anonymize.surrogate.method": variant.removeprefix(SURROGATE_PREFIX),
        }
    return {"train.corpus": "anonymized", "anonymize.replacement": variant}


def display_order(variants: Iterable[str]) -> list[str]:
    """The base model first, then the baselines and replacement methods, the oracle last;
    names this module does not know after them, alphabetically."""
    known = (BASE, MASKED, *REPLACEMENTS, *SURROGATE_VARIANTS, ORACLE)
    present = set(variants)
    return [v for v in known if v in present] + sorted(present - set(known))
