"""The bundle's second PI scan: the anonymize stage's detector over every text file, each
finding confirmed against the raw corpus.

The inventory scan (``bundle_scan``) finds only values the corpus labelled; a user corpus
without ``pi`` has none, and values in fields nobody labelled (a CRM record among the
labels) are unknown to it. This scan needs no labels: the detector proposes what looks like
PI in the text of each file (HTML as the text a reader sees, JSON as its strings, PNG text
chunks), and a proposal is a leak when it is identifying (several words, digits or a rare
word, as in the inventory scan) and occurs in the raw corpus: in any of its texts, or among
the original record ids of a user corpus (ingest replaced them by pseudonyms; an e-mail
address used as an id is a data subject's value wherever it occurs). The raw corpus's own
ids are veiltune's (pseudonyms, ``conv-00001``, ``dialogsum-dev_1``) and confirm nothing:
"DialogSum" in the model card is no leak. The confirmation keeps out
what the detector flags in veiltune's own prose (metric names, hashes, licence and source
notes), which no data subject wrote, and the policy's exclusions are never findings, as
they are never redacted.

Also here: masking in the review sample whatever the detector finds in it, since that
sample is corpus text by design.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import Any

from components.anonymize import (
    IDENTIFIER_DIGITS,
    AnonymizationPolicy,
    Detector,
    TermLists,
    anonymize_conversation,
    detect_batch,
    text_fields,
)
from components.core.corpus import Conversation, Turn, conversation_from_record, read_corpus
from components.core.placeholders import ANY_PLACEHOLDER
from components.export.scan import HTML_SUFFIXES, PNG_SIGNATURE, describe_leaks, text_views
from components.ingest import is_specific, normalized

# Identifiers of veiltune's own (PHONE_NUMBER, customer_support, summary.rouge1, sha256s):
# words joined by underscores, and long hex runs.
_MACHINE_TOKEN = re.compile(r"\b\w*_\w*\b|\b[0-9a-f]{16,}\b")
_WORD = re.compile(r"[^\W\d_]+")
_CHUNK_CHARS = 20_000  # texts are cut at line ends into pieces the NER pipeline reads quickly


@dataclass(frozen=True)
class DetectorScan:
    """What the detector proposed and what the raw corpus confirmed (types and counts only)."""

    n_files: int = 0
    n_candidates: int = 0
    leaks: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.leaks

    def to_record(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "n_files": self.n_files,
            "n_candidates": self.n_candidates,
            "confirmed_by_file": {name: dict(sorted(t.items())) for name, t in self.leaks.items()},
        }

    def describe_leaks(self) -> str:
        return describe_leaks(self.leaks)


@dataclass(frozen=True)
class DetectorScanPolicy:
    """The anonymize stage's detector and policy (whose exclusions are never findings), the
    raw corpus that confirms (with ``original_ids``, a user corpus's ids before ingest
    replaced them), and the shortest value that counts."""

    detector: Detector
    anonymization: AnonymizationPolicy
    raw_corpus: Path
    min_chars: int
    batch_size: int = 64
    original_ids: tuple[str, ...] = field(default=(), repr=False)

    @property
    def terms(self) -> TermLists:
        return self.anonymization.terms

    def scan(self, files: Iterable[tuple[str, bytes]], masked: Sequence[str] = ()) -> DetectorScan:
        """Scan (bundle name, content) pairs; the files under the ``masked`` prefixes had
        every detector finding masked already (the review sample) and are not read again."""
        candidates: dict[str, set[tuple[str, str]]] = defaultdict(set)  # value → (file, type)
        n_files = 0
        for name, text in _prose(files):
            if name.startswith(tuple(masked)):
                continue
            n_files += 1
            for entity_type, value in self._proposals(text):
                candidates[value].add((name, entity_type))
        confirmed = corpus_values(self.raw_corpus, candidates, more_texts=self.original_ids)
        leaks: dict[str, Counter[str]] = defaultdict(Counter)
        for value in confirmed:
            for name, entity_type in candidates[value]:
                leaks[name][entity_type] += 1
        return DetectorScan(
            n_files, len(candidates), {name: dict(types) for name, types in leaks.items()}
        )

    def _proposals(self, text: str) -> Iterator[tuple[str, str]]:
        """(type, normalized value) of each identifying span the detector finds in ``text``,
        veiltune's own identifiers (info types, keys, category codes, hashes) blanked out."""
        chunks = list(_chunks(_MACHINE_TOKEN.sub(_blank, _neutralized(text))))
        for chunk, spans in zip(chunks, self.detector.detect(chunks, self.batch_size), strict=True):
            for span in spans:
                surface = chunk[span.start : span.end]
                value = normalized(surface)
                if self.terms.excluded(span, chunk) or len(value.replace(" ", "")) < self.min_chars:
                    continue
                if identifying(surface):
                    yield span.entity_type, value


def identifying(surface: str) -> bool:
    """Whether a detector finding in veiltune's own files is shaped like a data subject's
    value: a run of 6 or more digits (a phone, an account, a card), an e-mail address, or a
    proper name (capitalized words, at least two of them or one the dictionary does not
    know). Lowercase words are not: in reports and configs they are veiltune's vocabulary
    ("phone number", "backend"), which the corpus uses too."""
    if sum(c.isdigit() for c in surface) >= IDENTIFIER_DIGITS or "@" in surface:
        return True
    words = _WORD.findall(surface)
    if not words or not all(w[0].isupper() and not w.isupper() for w in words):
        return False
    return len(words) >= 2 or is_specific(words[0].lower())


def corpus_values(
    raw_corpus: Path, values: Iterable[str], *, more_texts: Iterable[str] = ()
) -> set[str]:
    """Which normalized ``values`` occur, as whole word sequences, in any text of the corpus
    or in ``more_texts``."""
    wanted = set(values)
    if not wanted:
        return set()
    longest = max(len(v.split()) for v in wanted)
    found: set[str] = set()
    for text in _corpus_texts(raw_corpus, more_texts):
        tokens = normalized(text).split()
        for n in range(1, longest + 1):
            for i in range(len(tokens) - n + 1):
                window = " ".join(tokens[i : i + n])
                if window in wanted:
                    found.add(window)
        if found == wanted:
            break
    return found


def _corpus_texts(raw_corpus: Path, more_texts: Iterable[str]) -> Iterator[str]:
    """Each conversation's texts, then ``more_texts``."""
    for conversation in read_corpus(raw_corpus):
        for _, text in text_fields(conversation):
            yield text
    yield from more_texts


def _prose(files: Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, str]]:
    """(name, the text a reader of the file sees) for each file that has text."""
    for name, data in files:
        texts, _reason = text_views(name, data)
        if not texts:
            continue
        if data.startswith(PNG_SIGNATURE):
            yield name, "\n".join(texts)  # its text chunks
        elif PurePosixPath(name).suffix.lower() in HTML_SUFFIXES:
            yield name, html_text(texts[0])
        else:
            # JSON: its strings (the last view), so escapes do not glue words together.
            yield name, texts[-1]


def mask_records(
    records: Sequence[dict[str, Any]], policy: DetectorScanPolicy, *, counts: Counter[str]
) -> list[dict[str, Any]]:
    """Conversation records (of anonymized text) with what the anonymize stage would still
    replace in them masked as ``[RESIDUAL_<TYPE>]``: the same detector and policy (roles,
    known categories, exclusions, names propagated through the conversation), placeholders
    blanked so they are no names to find. Keys beside the conversation's are kept."""
    originals = [conversation_from_record(r, f"record {i}") for i, r in enumerate(records)]
    blanked = [_blanked(c) for c in originals]
    residual = replace(policy.anonymization, mode="residual")
    found = detect_batch(blanked, policy.detector, policy=policy.anonymization)
    masked = []
    for record, original, (_, spans) in zip(records, originals, found, strict=True):
        fields = text_fields(
            original, policy.anonymization.class_labels, pi_keys=policy.anonymization.pi_label_keys
        )
        cleaned, replaced = anonymize_conversation(original, fields, spans=spans, policy=residual)
        counts.update(r.span.entity_type for r in replaced)
        masked.append({**record, **cleaned.to_record()})
    return masked


def _blanked(conversation: Conversation) -> Conversation:
    """The conversation with every placeholder blanked (same length) in its turns."""
    turns = tuple(
        Turn(_neutralized(t.speaker) if t.speaker else t.speaker, _neutralized(t.text))
        for t in conversation.turns
    )
    labels = json.loads(_neutralized(json.dumps(conversation.labels)))
    context = _neutralized(conversation.context)
    return replace(conversation, turns=turns, context=context, labels=labels)


def html_text(page: str) -> str:
    """The text of an HTML page, one text node per line, entities decoded; scripts and
    styles included (a page could carry data in them)."""
    parser = _TextNodes()
    parser.feed(page)
    parser.close()
    return "\n".join(parser.nodes)


class _TextNodes(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.nodes: list[str] = []

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.nodes.append(html.unescape(data.strip()))


def _neutralized(text: str) -> str:
    """Placeholders blanked out (same length): ``[PERSON_NAME_1]`` is no name to detect."""
    return ANY_PLACEHOLDER.sub(_blank, text)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group())


def _chunks(text: str) -> Iterator[str]:
    """``text`` in pieces of at most about ``_CHUNK_CHARS``, cut at line ends."""
    piece: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        if size + len(line) > _CHUNK_CHARS and piece:
            yield "".join(piece)
            piece, size = [], 0
        piece.append(line)
        size += len(line)
    if piece:
        yield "".join(piece)
