"""How much of the generated text looks like raw ASR output, and how a caller may change it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TypeAlias

from components.core.errors import ParamsError

Noise: TypeAlias = Mapping[str, float]

# Probabilities, each drawn independently where it applies. With these defaults about 30% of
# the personal-information mentions come out lowercase, spelled or spoken.
ASR_NOISE_POLICY: Final[Mapping[str, float]] = MappingProxyType(
    {
        "conversation_lowercase": 0.06,  # an engine without truecasing wrote the whole call
        "lowercase_start": 0.08,  # a lowercase stretch starts at a turn ...
        "lowercase_continue": 0.5,  # ... and carries on into the next turn
        "strip_punctuation": 0.5,  # a lowercase turn also lost its punctuation
        "name_lowercase": 0.12,  # a name, organization, city or street written lowercase
        "name_spelled": 0.03,  # a person's name spelled out unprompted (M-A-R-K)
        "spell_lowercase": 0.2,  # spelled letters written lowercase (m-a-r-k)
        "spell_spaced": 0.1,  # spelled letters separated by spaces (M A R K)
        "email_spoken": 0.2,  # mark dot kowalski at gmail dot com
        "email_spelled": 0.04,  # M-A-R-K dot K-O-W-A-L-S-K-I at gmail dot com
        "digits_spoken": 0.25,  # a number said as digit words
        "digit_zero_as_oh": 0.6,
        "digit_misheard": 0.1,  # "four" written "for" inside a digit run
        "digit_double": 0.1,  # "double five" for 55
        "date_spoken": 0.25,  # march fourth nineteen eighty five
        "url_spoken": 0.25,  # acme dot com slash support
        "username_spelled": 0.15,
        "filler_turn_start": 0.15,
        "filler_mid_turn": 0.12,
        "repeat_word": 0.07,
        "optional_line": 0.5,  # an optional script line is kept
        "speaker_full_name": 0.5,  # speaker labels are full names (else first names)
    }
)


def noise_policy(overrides: Mapping[str, float]) -> Noise:
    """``ASR_NOISE_POLICY`` with ``overrides`` applied.

    Raises:
        ParamsError: a key that the policy does not have, or a value outside 0..1.
    """
    unknown = sorted(set(overrides) - set(ASR_NOISE_POLICY))
    if unknown:
        raise ParamsError(
            f"generate: unknown noise keys {unknown}; allowed: {list(ASR_NOISE_POLICY)}"
        )
    for key, value in overrides.items():
        if not 0.0 <= value <= 1.0:
            raise ParamsError(f"generate: noise '{key}' must be a probability in 0..1")
    return {**ASR_NOISE_POLICY, **overrides}
