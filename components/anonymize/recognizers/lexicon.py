"""English word knowledge shared by the recognizers: how common a word is, and stop words."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=200_000)
def zipf(word: str) -> float:
    """wordfreq's Zipf frequency of ``word`` in English (0 for unknown, ~7.7 for "the")."""
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


@functools.lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """spaCy's English stop words."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)
