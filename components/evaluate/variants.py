"""Variant names: what an adapter was trained on, told apart down to the replacement method.

A variant is one setting of ``train.corpus`` (with ``train.mask_loss_weight`` for the masked
corpus and ``train.fragments.source`` for fragments; for the anonymized corpus,
``anonymize.replacement`` and ``anonymize.surrogate.method``), and of ``anonymize.detectors``
when it is not the entity engine alone: ``allow_list`` (placeholders where the allow list
found words), ``entities+lm_probability``, or ``<detectors>:<variant>`` for another variant
built on their spans (``vocab_threshold:masked``). A variant trained with differential privacy
(``train.privacy``) is ``<variant>@dp<epsilon>`` (``surrogate-realistic@dp8``): a DP adapter is
never reported as its non-DP namesake. The evaluate stage names its run's variant from params;
the utility profile turns a name back into the ``dvc exp run -S`` overrides that train it; the
report orders and compares variants by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from components.anonymize import DETECTORS, SURROGATE_METHODS
from components.anonymize import REPLACEMENTS as ANONYMIZE_REPLACEMENTS
from components.core.errors import InputError

ORACLE = "oracle"  # train.corpus raw: the upper bound
MASKED = "masked"  # train.corpus masked: every placeholder a bare [MASK] (Baseline0)
MASKED_NO_LOSS = "masked-no-loss"  # ... and no loss on the [MASK] tokens (Baseline1)
FRAGMENTED = "fragmented"  # train.corpus fragmented: chunks of the anonymized corpus, mixed
FRAGMENTED_RAW = "fragmented-raw"  # chunks of the raw corpus, mixed
PLACEHOLDER = "placeholder"
BASE = "base"  # the base model zero-shot, scored by every evaluate run
SURROGATE = "surrogate"
SURROGATE_PREFIX = f"{SURROGATE}-"
REPLACEMENTS = tuple(r for r in ANONYMIZE_REPLACEMENTS if r != SURROGATE)
SURROGATE_VARIANTS = tuple(f"{SURROGATE_PREFIX}{method}" for method in SURROGATE_METHODS)
DEFAULT_DETECTORS = ("entities",)
# The detector settings the method papers compare with the entity engine (placeholders).
DETECTOR_VARIANTS = ("lm_probability", "entities+lm_probability", "allow_list", "vocab_threshold")
_DETECTOR_SEPARATOR = ":"
DP_MARK = "@dp"  # <variant>@dp<epsilon>: trained with DP-SGD at that (epsilon, delta) budget
TRAINED_VARIANTS = (
    ORACLE,
    MASKED,
    MASKED_NO_LOSS,
    *REPLACEMENTS,
    *SURROGATE_VARIANTS,
    FRAGMENTED,
    FRAGMENTED_RAW,
    *DETECTOR_VARIANTS,
)
# The language-modelling task fragments train on (components/train: fragmented corpus).
FRAGMENT_TASKS = ("continuation",)
# evaluate.json used to name its variant by train.corpus; the anonymized corpus then always
# had placeholders.
_LEGACY = {"anonymized": PLACEHOLDER, "raw": ORACLE}


def variant_name(
    corpus: str,
    replacement: str,
    *,
    surrogate_method: str | None = None,
    detectors: Sequence[str] = DEFAULT_DETECTORS,
    mask_loss_weight: float = 1.0,
    fragments_source: str = "anonymized",
    dp_epsilon: float | None = None,
) -> str:
    """The variant an adapter trained with these settings is: ``oracle``, ``masked``
    (``masked-no-loss``), ``fragmented`` (``fragmented-raw``), the replacement's name or
    ``surrogate-<method>``; with other detectors than the entity engine, their names
    (``allow_list``) or ``<detectors>:<variant>``; trained with DP at ``dp_epsilon``,
    ``<variant>@dp<epsilon>``."""
    name = _plain_variant_name(
        corpus,
        replacement,
        surrogate_method=surrogate_method,
        detectors=detectors,
        mask_loss_weight=mask_loss_weight,
        fragments_source=fragments_source,
    )
    return name if dp_epsilon is None else f"{name}{DP_MARK}{_epsilon_text(dp_epsilon)}"


def _epsilon_text(epsilon: float) -> str:
    """``8``, ``0.5``; the full digits where fewer would name another budget."""
    short = f"{epsilon:g}"
    return short if float(short) == epsilon else repr(epsilon)


def _plain_variant_name(
    corpus: str,
    replacement: str,
    *,
    surrogate_method: str | None,
    detectors: Sequence[str],
    mask_loss_weight: float,
    fragments_source: str,
) -> str:
    if corpus == "raw" or (corpus == "fragmented" and fragments_source == "raw"):
        return FRAGMENTED_RAW if corpus == "fragmented" else ORACLE
    if corpus == "masked":
        base = MASKED_NO_LOSS if mask_loss_weight == 0 else MASKED
    elif corpus == "fragmented":
        base = FRAGMENTED
    elif corpus != "anonymized":
        base = _LEGACY.get(corpus, corpus)
    elif replacement == SURROGATE:
        base = f"{SURROGATE_PREFIX}{surrogate_method}"
    else:
        base = replacement
    if tuple(detectors) == DEFAULT_DETECTORS:
        return base
    named = "+".join(detectors)
    return named if base == PLACEHOLDER else f"{named}{_DETECTOR_SEPARATOR}{base}"


def canonical(variant: str) -> str:
    """The current name of a variant an older evaluate.json recorded (``anonymized``)."""
    return _LEGACY.get(variant, variant)


def variant_overrides(variant: str) -> dict[str, Any]:
    """The params (dotted key → value, typed as in params.yaml) that train ``variant``.

    Raises:
        InputError: ``variant`` is not one of ``TRAINED_VARIANTS`` nor
            ``<detectors>:<one of them>``, each optionally ``@dp<epsilon>`` (epsilon > 0, a
            corpus DP can train on: not fragments).
    """
    plain, epsilon = split_dp(variant)
    overrides = _plain_overrides(plain, name=variant)
    if epsilon is None:
        return overrides
    if overrides["train.corpus"] == "fragmented":
        raise InputError(
            f"unknown variant {variant!r}: DP trains one conversation as one unit, and a "
            "fragment mixes conversations"
        )
    return {**overrides, "train.privacy.enabled": True, "train.privacy.epsilon": epsilon}


def split_dp(variant: str) -> tuple[str, float | None]:
    """``variant`` without its ``@dp<epsilon>``, and that epsilon (None: trained without DP).

    Raises:
        InputError: what follows ``@dp`` is not a positive number written as the evaluate
            stage names it (``8``, ``0.5``: not ``8.0``), so that a planned run and the run
            it evaluates have one name.
    """
    plain, mark, epsilon = variant.partition(DP_MARK)
    if not mark:
        return variant, None
    try:
        value = float(epsilon)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf") or _epsilon_text(value) != epsilon:
        raise InputError(
            f"unknown variant {variant!r}: after {DP_MARK} comes the privacy budget epsilon, "
            f"a positive number written like {DP_MARK}8 or {DP_MARK}0.5 "
            f"(e.g. {plain}{DP_MARK}8)"
        )
    return plain, value


def _plain_overrides(variant: str, *, name: str) -> dict[str, Any]:
    """The params of ``variant`` (without DP), which ``name`` is (the messages say it)."""
    named, _, base = variant.rpartition(_DETECTOR_SEPARATOR)
    if not named and set(base.split("+")) <= set(DETECTORS):
        named, base = base, PLACEHOLDER
    raw_text = base in (ORACLE, FRAGMENTED_RAW)  # no detector touched what these train on
    if base not in TRAINED_VARIANTS or base in DETECTOR_VARIANTS or (named and raw_text):
        raise InputError(
            f"unknown variant {name!r}: expected one of {', '.join(TRAINED_VARIANTS)}, "
            f"or <detectors>{_DETECTOR_SEPARATOR}<variant> (e.g. vocab_threshold:masked)"
        )
    overrides = _base_overrides(base)
    if named:
        detectors = named.split("+")
        if not set(detectors) <= set(DETECTORS):
            raise InputError(f"unknown variant {name!r}: detectors among {', '.join(DETECTORS)}")
        overrides["anonymize.detectors"] = detectors
    return overrides


def _base_overrides(variant: str) -> dict[str, Any]:
    """The params of a variant of the entity engine's spans."""
    if variant == ORACLE:
        return {"train.corpus": "raw"}
    if variant in (MASKED, MASKED_NO_LOSS):  # [MASK] stands where a placeholder was
        return {
            "train.corpus": "masked",
            "train.mask_loss_weight": 0.0 if variant == MASKED_NO_LOSS else 1.0,
            "anonymize.replacement": PLACEHOLDER,
        }
    if variant in (FRAGMENTED, FRAGMENTED_RAW):
        source = "raw" if variant == FRAGMENTED_RAW else "anonymized"
        return {
            "train.corpus": "fragmented",
            "train.fragments.source": source,
            "train.tasks": list(FRAGMENT_TASKS),
            "anonymize.replacement": PLACEHOLDER,
        }
    if variant.startswith(SURROGATE_PREFIX):
        return {
            "train.corpus": "anonymized",
            "anonymize.replacement": SURROGATE,
            "anonymize.surrogate.method": variant.removeprefix(SURROGATE_PREFIX),
        }
    return {"train.corpus": "anonymized", "anonymize.replacement": variant}


def display_order(variants: Iterable[str]) -> list[str]:
    """The base model first, then the baselines and replacement methods, the oracle last,
    each followed by its DP variants from the smallest epsilon; names this module does not
    know after them, alphabetically."""
    known = (
        BASE,
        MASKED,
        MASKED_NO_LOSS,
        *REPLACEMENTS,
        *DETECTOR_VARIANTS,
        *SURROGATE_VARIANTS,
        FRAGMENTED,
        FRAGMENTED_RAW,
        ORACLE,
    )
    present = set(variants)
    by_plain: dict[str, list[tuple[float, str]]] = {}
    for variant in present:
        plain, epsilon = _ordering_key(variant)
        by_plain.setdefault(plain, []).append((epsilon, variant))
    ordered = [v for plain in known for _, v in sorted(by_plain.get(plain, []))]
    return ordered + sorted(present - set(ordered))


def _ordering_key(variant: str) -> tuple[str, float]:
    """The plain variant a name is of, and its epsilon (-1 without DP, or not a number)."""
    try:
        plain, epsilon = split_dp(variant)
    except InputError:
        return variant, -1.0
    return plain, -1.0 if epsilon is None else epsilon
