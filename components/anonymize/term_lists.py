"""Policy word lists per info type: exclusions (never redact) and custom dictionaries
(always redact), read from plain-text files named in params, one term per line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from components.anonymize.spans import DICTIONARY_SOURCE, Span
from components.core.errors import InputError
from components.core.placeholders import entity_tokens

DICTIONARY_SCORE = 1.0


@dataclass(frozen=True)
class TermLists:
    """Exclusions (compared as lowercase word tokens) and compiled dictionary patterns."""

    exclusions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    dictionaries: tuple[tuple[str, re.Pattern[str]], ...] = ()

    def excluded(self, span: Span, text: str) -> bool:
        terms = self.exclusions.get(span.entity_type, frozenset())
        return _key(text[span.start : span.end]) in terms

    def dictionary_spans(self, text: str) -> list[Span]:
        """Every whole-word, case-insensitive occurrence of a dictionary term."""
        return [
            Span(m.start(), m.end(), info_type, DICTIONARY_SCORE, DICTIONARY_SOURCE)
            for info_type, pattern in self.dictionaries
            for m in pattern.finditer(text)
        ]


def term_lists(
    exclusions: Mapping[str, Iterable[str]], dictionaries: Mapping[str, Iterable[str]]
) -> TermLists:
    """Term lists from in-memory terms per info type."""
    patterns = []
    for info_type, terms in sorted(dictionaries.items()):
        ordered = sorted({t for t in terms if t}, key=len, reverse=True)  # longest first
        if ordered:
            alternatives = "|".join(re.escape(t) for t in ordered)
            patterns.append((info_type, re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.I)))
    return TermLists(
        {t: frozenset(map(_key, terms)) for t, terms in exclusions.items()}, tuple(patterns)
    )


def read_term_lists(
    exclusion_files: Mapping[str, str], dictionary_files: Mapping[str, str], *, base_dir: Path
) -> TermLists:
    """Read the files params name (paths relative to ``base_dir``)."""
    return term_lists(
        {t: read_terms(base_dir / p) for t, p in exclusion_files.items()},
        {t: read_terms(base_dir / p) for t, p in dictionary_files.items()},
    )


def read_terms(path: Path) -> list[str]:
    """The terms of one policy list: a term a line, blank lines and ``#`` comments skipped.

    Raises:
        InputError: the file is missing or not UTF-8, naming it.
    """
    if not path.is_file():
        raise InputError(f"{path}: no such term list (named in anonymize params)")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8") from exc
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _key(surface: str) -> str:
    return " ".join(entity_tokens(surface))
