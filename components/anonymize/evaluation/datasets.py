"""Labelled texts from the formats veiltune evaluates on, with gold types mapped to DLP names.

Gold spans of types the policy deliberately leaves in clear (dates, titles, nationalities;
in WNUT also groups, products, creative works, and unlabelled URLs and @handles) are kept
as ``NEUTRAL``: predictions over them are neither hits nor false positives.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from components.core.corpus import base_info_type
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl, iter_text_lines
from components.ingest import generate_corpus

NEUTRAL = "NEUTRAL"

PRESIDIO_RESEARCH_TYPES = {
    "PERSON": "PERSON_NAME",
    "ADDRESS": "STREET_ADDRESS",
    "STREET_ADDRESS": "STREET_ADDRESS",
    "LOCATION": "LOCATION",
    "GPE": "LOCATION",
    "ORGANIZATION": "ORGANIZATION_NAME",
    "CREDIT_CARD": "CREDIT_CARD_NUMBER",
    "PHONE_NUMBER": "PHONE_NUMBER",
    "EMAIL_ADDRESS": "EMAIL_ADDRESS",
    "US_SSN": "US_SOCIAL_SECURITY_NUMBER",
    "IBAN_CODE": "IBAN_CODE",
    "DOMAIN_NAME": "DOMAIN_NAME",
    "US_DRIVER_LICENSE": "US_DRIVERS_LICENSE_NUMBER",
    "IP_ADDRESS": "IP_ADDRESS",
    "DATE_TIME": NEUTRAL,
    "TITLE": NEUTRAL,
    "PREFIX": NEUTRAL,
    "NRP": NEUTRAL,
}
WNUT_TYPES = {
    "person": "PERSON_NAME",
    "location": "LOCATION",
    "corporation": "ORGANIZATION_NAME",
    "group": NEUTRAL,
    "product": NEUTRAL,
    "creative-work": NEUTRAL,
}
# URLs and @handles WNUT leaves unlabelled: neither hits nor false positives.
_WNUT_UNLABELLED = re.compile(r"^(?:@\w+|https?://\S+|www\.\S+)$")


@dataclass(frozen=True)
class GoldSpan:
    start: int
    end: int
    entity_type: str  # a DLP info type, or NEUTRAL


@dataclass(frozen=True)
class LabelledText:
    id: str
    text: str
    gold: tuple[GoldSpan, ...]
    group: str = ""  # what a split keeps together: presidio-research's template_id
    # The conversation this text is a turn of (consecutive items, in turn order) and its
    # speaker: detected as the anonymize stage does, the whole conversation at once (its
    # names propagate, the LM reads the turns before); "" for a text that stands alone.
    conversation: str = ""
    speaker: str | None = None


# presidio-research's sentences come from 127 templates; one in HELDOUT_SHARE of them (by a
# hash of the template id, so the split never depends on the file's order) is kept out of
# calibration, so a score on it says how the detector does on sentences shaped unlike any
# it was calibrated on. WNUT-17's sentences split the same way, each its own group: the
# conversational NER veiltune ships learned from WNUT-17 train's tuning side only.
SPLITS = ("all", "tuning", "heldout")
SPLIT_KINDS = ("presidio_research", "wnut17")
KINDS = ("embedded", "presidio_research", "wnut17", "jsonl")  # "embedded" needs no file
HELDOUT_SHARE = 4


# A data spec's prefix for the same texts as a speech recognizer writes them (speechlike.py)
SPEECH_PREFIX = "speech:"


def parse_data_spec(spec: str) -> tuple[str, Path | None]:
    """``wnut17=dev.conll`` -> (kind, path); ``embedded`` has no path; a kind may carry
    ``speech:`` before it (``speech:presidio_research=FILE``: its speech-like view)."""
    kind, _, path = spec.partition("=")
    base = kind.removeprefix(SPEECH_PREFIX)
    if base not in KINDS or (base != "embedded") != bool(path):
        raise InputError(
            f"--data {spec}: [speech:]KIND=PATH with KIND among {', '.join(KINDS[1:])}, "
            "or [speech:]embedded"
        )
    return kind, Path(path) if path else None


def in_split(group: str, split: str) -> bool:
    """Whether a text of ``group`` (a template id) belongs to ``split``."""
    if split == "all":
        return True
    heldout = int(hashlib.sha256(group.encode()).hexdigest(), 16) % HELDOUT_SHARE == 0
    return heldout == (split == "heldout")


def load_labelled(
    kind: str, path: Path | None, *, limit: int | None = None, split: str = "all"
) -> list[LabelledText]:
    """Load ``kind`` (presidio_research | wnut17 | jsonl | embedded) from ``path``;
    ``split`` (tuning | heldout) keeps one side of presidio-research's template split, or of
    WNUT-17's sentences."""
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r}; one of: {', '.join(SPLITS)}")
    if split != "all" and kind not in SPLIT_KINDS:
        raise InputError(f"--split {split} applies to {' and '.join(SPLIT_KINDS)} only")
    loaders = {
        "presidio_research": _presidio_research,
        "wnut17": _wnut17,
        "jsonl": _jsonl,
    }
    if kind == "embedded":
        texts = list(embedded_texts(limit or 300))
    elif kind in loaders:
        if path is None or not path.is_file():
            raise InputError(f"{path}: no such file (needed for dataset {kind!r})")
        texts = list(loaders[kind](path))
    else:
        raise InputError(f"unknown dataset kind {kind!r}; one of: embedded, {', '.join(loaders)}")
    texts = [t for t in texts if in_split(t.group, split)]
    if not texts:
        raise InputError(f"{path}: no labelled texts")
    texts = [replace(t, gold=neutral_titles(t.text, t.gold)) for t in texts]
    return texts[:limit] if limit else texts


_TITLE = re.compile(r"(?:mr|mrs|ms|mx|miss|dr|prof|sir|madam|dame|lord|lady)\.?(?=\s|$)\s*", re.I)


def neutral_titles(text: str, gold: tuple[GoldSpan, ...]) -> tuple[GoldSpan, ...]:
    """Titles are left in clear on purpose: a gold span that opens with one ("Mr. Ford",
    or a lone "Dr." that a data set labels as a person) gives the title to ``NEUTRAL``."""
    spans: list[GoldSpan] = []
    for span in gold:
        title = _TITLE.match(text, span.start, span.end)
        if span.entity_type == NEUTRAL or not title:
            spans.append(span)
            continue
        spans.append(GoldSpan(span.start, title.end(), NEUTRAL))
        if title.end() < span.end:
            spans.append(GoldSpan(title.end(), span.end, span.entity_type))
    return tuple(spans)


def _presidio_research(path: Path) -> Iterator[LabelledText]:
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InputError(f"{path}: not a JSON list of presidio-research records: {reason}") from exc
    for i, record in enumerate(records):
        gold = tuple(
            GoldSpan(
                s["start_position"],
                s["end_position"],
                PRESIDIO_RESEARCH_TYPES.get(s["entity_type"], s["entity_type"]),
            )
            for s in record["spans"]
        )
        yield LabelledText(f"pr-{i}", record["full_text"], gold, str(record.get("template_id", "")))


def _wnut17(path: Path) -> Iterator[LabelledText]:
    sentence: list[tuple[str, str]] = []
    count = 0
    for _, line in iter_text_lines(path):
        if line.strip():
            token, _, tag = line.partition("\t")
            sentence.append((token, tag.strip() or "O"))
        elif sentence:
            count += 1
            yield _wnut_sentence(f"wnut-{count}", sentence)
            sentence = []
    if sentence:
        yield _wnut_sentence(f"wnut-{count + 1}", sentence)


def _wnut_sentence(sentence_id: str, tokens: list[tuple[str, str]]) -> LabelledText:
    """Join tokens with single spaces; BIO tags become character spans."""
    parts: list[str] = []
    gold: list[GoldSpan] = []
    current: GoldSpan | None = None
    current_label, offset = "", 0
    for token, tag in tokens:
        start, end = offset, offset + len(token)
        offset = end + 1
        parts.append(token)
        prefix, _, label = tag.partition("-")
        if prefix == "I" and current is not None and label == current_label:
            current = GoldSpan(current.start, end, current.entity_type)
            continue
        if current is not None:
            gold.append(current)
            current = None
        if prefix in {"B", "I"}:
            current, current_label = GoldSpan(start, end, WNUT_TYPES.get(label, NEUTRAL)), label
        elif _WNUT_UNLABELLED.match(token):
            gold.append(GoldSpan(start, end, NEUTRAL))
    if current is not None:
        gold.append(current)
    return LabelledText(sentence_id, " ".join(parts), tuple(gold), group=sentence_id)


def _jsonl(path: Path) -> Iterator[LabelledText]:
    for line_no, obj in iter_jsonl(path):
        where = f"{path}:{line_no}"
        if not isinstance(obj.get("text"), str) or "id" not in obj:
            raise InputError(f"{where}: needs 'id' and a string 'text'")
        try:
            gold = tuple(GoldSpan(int(s), int(e), str(t)) for s, e, t in obj.get("gold", []))
        except (TypeError, ValueError) as exc:
            raise InputError(f"{where}: 'gold' must be a list of [start, end, type]") from exc
        yield LabelledText(str(obj["id"]), obj["text"], gold)


# The embedded corpus's conversations evaluation and calibration read; training reads others
EMBEDDED_SEED = 2024


def embedded_texts(n_conversations: int, seed: int = EMBEDDED_SEED) -> Iterator[LabelledText]:
    """The turns of ``n_conversations`` generated calls, each labelled with its PI."""
    for conversation in generate_corpus(n_conversations, seed=seed):
        for i, turn in enumerate(conversation.turns):
            gold = tuple(
                GoldSpan(s.start, s.end, base_info_type(s.entity_type))
                for s in conversation.pi
                if s.turn == i and s.field == "text"
            )
            yield LabelledText(
                f"{conversation.id}/{i}", turn.text, gold, "", conversation.id, turn.speaker
            )
