"""The bundle's second PI scan: the anonymize stage's detector over every text file, each
finding confirmed against the raw corpus.

The inventory scan (``bundle_scan``) finds only values the corpus labelled; a user corpus
without ``pi`` has none, and values in fields nobody labelled (a CRM record among the
labels) are unknown to it. This scan needs no labels: the detector proposes what looks like
PI in the text of each file (HTML as the text a reader sees, JSON as its strings, PNG text
chunks), and a proposal is a leak when it is identifying (several words, digits or a rare
word, as in the inventory scan) and occurs in the raw corpus. The confirmation keeps out
what the detector flags in veiltune's own prose (metric names, hashes, vendor scripts of the
Data Docs), which no data subject wrote, and the policy's exclusions are never findings, as
they are never redacted.

Also here: masking in the review sample whatever the detector finds in it, since that
sample is corpus text by design.
"""

from __future__ import annotations

import html
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import Any

from components.anonymize.engine import Detector, text_fields
from components.anonymize.spans import Span
from components.anonymize.term_lists import TermLists
from components.bundle_scan import RESIDUAL_MARK, text_views
from components.corpus import read_corpus
from components.pi_inventory import is_specific, normalized

_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*\]")
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHUNK_CHARS = 20_000  # texts are cut at line ends into pieces the NER pipeline reads quickly
_HTML_SUFFIXES = (".html", ".htm", ".xml", ".svg")


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
        return "; ".join(
            f"{name}: " + ", ".join(f"{n} {t}" for t, n in sorted(types.items()))
            for name, types in sorted(self.leaks.items())
        )


@dataclass(frozen=True)
class DetectorScanPolicy:
    """The detector, what it may never flag, the raw corpus that confirms, and the shortest
    value that counts."""

    detector: Detector
    terms: TermLists
    raw_corpus: Path
    min_chars: int
    batch_size: int = 64

    def scan(self, files: Iterable[tuple[str, bytes]]) -> DetectorScan:
        """Scan (bundle name, content) pairs."""
        candidates: dict[str, set[tuple[str, str]]] = defaultdict(set)  # value → (file, type)
        n_files = 0
        for name, text in _prose(files):
            n_files += 1
            for entity_type, value in self._proposals(text):
                candidates[value].add((name, entity_type))
        confirmed = corpus_values(self.raw_corpus, candidates)
        leaks: dict[str, Counter[str]] = defaultdict(Counter)
        for value in confirmed:
            for name, entity_type in candidates[value]:
                leaks[name][entity_type] += 1
        return DetectorScan(
            n_files, len(candidates), {name: dict(types) for name, types in leaks.items()}
        )

    def _proposals(self, text: str) -> Iterator[tuple[str, str]]:
        """(type, normalized value) of each identifying span the detector finds in ``text``."""
        chunks = list(_chunks(_neutralized(text)))
        for chunk, spans in zip(chunks, self.detector.detect(chunks, self.batch_size), strict=True):
            for span in spans:
                if self.terms.excluded(span, chunk):
                    continue
                value = normalized(chunk[span.start : span.end])
                if len(value.replace(" ", "")) >= self.min_chars and is_specific(value):
                    yield span.entity_type, value

    def find(self, texts: Sequence[str]) -> list[list[Span]]:
        """The detector's spans in each text, placeholders and exclusions aside."""
        neutral = [_neutralized(t) for t in texts]
        return [
            [s for s in spans if not self.terms.excluded(s, text)]
            for text, spans in zip(
                neutral, self.detector.detect(neutral, self.batch_size), strict=True
            )
        ]


def corpus_values(raw_corpus: Path, values: Iterable[str]) -> set[str]:
    """Which normalized ``values`` occur, as whole word sequences, in any text of the corpus."""
    wanted = set(values)
    if not wanted:
        return set()
    longest = max(len(v.split()) for v in wanted)
    found: set[str] = set()
    for conversation in read_corpus(raw_corpus):
        for _, text in text_fields(conversation):
            tokens = normalized(text).split()
            for n in range(1, longest + 1):
                for i in range(len(tokens) - n + 1):
                    window = " ".join(tokens[i : i + n])
                    if window in wanted:
                        found.add(window)
        if found == wanted:
            break
    return found


def mask_findings(text: str, spans: Sequence[Span], counts: Counter[str]) -> str:
    """``text`` with each span replaced by ``[RESIDUAL_<TYPE>]``, counted by type."""
    parts, cursor = [], 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < cursor:
            continue
        parts += [text[cursor : span.start], RESIDUAL_MARK.format(span.entity_type)]
        counts[span.entity_type] += 1
        cursor = span.end
    return "".join(parts) + text[cursor:]


def _prose(files: Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, str]]:
    """(name, the text a reader of the file sees) for each file that has text."""
    for name, data in files:
        texts, _reason = text_views(name, data)
        if not texts:
            continue
        if data.startswith(_PNG_SIGNATURE):
            yield name, "\n".join(texts)  # its text chunks
        elif PurePosixPath(name).suffix.lower() in _HTML_SUFFIXES:
            yield name, html_text(texts[0])
        else:
            # JSON: its strings (the last view), so escapes do not glue words together.
            yield name, texts[-1]


def mask_records(
    records: Sequence[Any], policy: DetectorScanPolicy, counts: Counter[str]
) -> list[Any]:
    """JSON records with every detector finding in their strings masked as
    ``[RESIDUAL_<TYPE>]`` (a record's top-level ``id`` aside: ids are never anonymized)."""
    texts: list[str] = []
    for record in records:
        _collect(record, texts, top=True)
    found = iter(policy.find(texts))
    masked = {i: mask_findings(t, next(found), counts) for i, t in enumerate(texts)}
    position = iter(range(len(texts)))
    return [_rebuild(record, masked, position, top=True) for record in records]


def _collect(value: Any, texts: list[str], top: bool = False) -> None:
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not (top and key == "id"):
                _collect(item, texts)
    elif isinstance(value, list):
        for item in value:
            _collect(item, texts)


def _rebuild(value: Any, masked: dict[int, str], position: Iterator[int], top: bool = False) -> Any:
    if isinstance(value, str):
        return masked[next(position)]
    if isinstance(value, dict):
        return {
            key: item if top and key == "id" else _rebuild(item, masked, position)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rebuild(item, masked, position) for item in value]
    return value


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
    return _PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)


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
