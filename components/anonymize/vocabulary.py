"""Redaction by vocabulary: every word outside a list of safe words is masked as
``UNLISTED_WORD``. One detector, two sources of its list:

- ``allow_list``: a word-list file (``anonymize.allow_list``; one word a line, ``#``
  comments, compared case-insensitively);
- ``vocab_threshold``: the N most frequent English words by wordfreq
  (``anonymize.vocab_threshold``).

A word with a digit is in no list (numbers, codes, "2nd" are masked); a possessive is
judged by its stem ("manager's" is kept when "manager" is listed). Placeholders are never
judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from components.anonymize.spans import Span
from components.anonymize.term_lists import read_terms
from components.anonymize.words import WORD_SCORE, candidate_words, merge_adjacent, normal_form
from components.core.errors import InputError

ENTITY_TYPE = "UNLISTED_WORD"
ALLOW_LIST_SOURCE = "allow_list"
VOCAB_THRESHOLD_SOURCE = "vocab_threshold"
_POSSESSIVE = "'s"


@dataclass(frozen=True)
class VocabularyDetector:
    """Masks the words not in ``words`` (normal forms: lowercase, ``'`` apostrophes);
    ``source`` names the list in ``Span.source``."""

    words: frozenset[str]
    source: str

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        """Unlisted words of each text, runs of them separated by spaces as one span."""
        return [merge_adjacent(self._unlisted(text), text) for text in texts]

    def listed(self, word: str) -> bool:
        """Whether ``word`` is safe: listed, or a possessive of a listed word."""
        form = normal_form(word)
        if form in self.words:
            return True
        return form.endswith(_POSSESSIVE) and form[: -len(_POSSESSIVE)] in self.words

    def _unlisted(self, text: str) -> list[Span]:
        return [
            Span(start, end, ENTITY_TYPE, WORD_SCORE, self.source)
            for start, end in candidate_words(text)
            if not self.listed(text[start:end])
        ]


def vocabulary(words: Iterable[str], source: str) -> VocabularyDetector:
    """A detector listing ``words`` (any case); words with a digit are left out."""
    return VocabularyDetector(
        frozenset(normal_form(w) for w in words if w and not any(c.isdigit() for c in w)),
        source,
    )


def allow_list_detector(path: Path) -> VocabularyDetector:
    """The ``allow_list`` detector on the word list at ``path``.

    Raises:
        InputError: the file is missing (naming ``anonymize.allow_list``) or not UTF-8.
    """
    if not path.is_file():
        raise InputError(f"{path}: no such word list (anonymize.allow_list)")
    return vocabulary(read_terms(path), ALLOW_LIST_SOURCE)


def vocab_threshold_detector(n: int) -> VocabularyDetector:
    """The ``vocab_threshold`` detector: wordfreq's ``n`` most frequent English words."""
    from wordfreq import top_n_list

    return vocabulary(top_n_list("en", n), VOCAB_THRESHOLD_SOURCE)
