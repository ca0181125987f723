"""Conversations drawn from the scripts: their turns, speakers, fillers and exact PI offsets.

Every mention of personal information is its own text segment, and its character offsets are
recorded while the turn is concatenated, so the ``pi`` ground truth is exact by construction.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from components.core.corpus import Conversation, PiSpan, Turn
from components.ingest.generate import templates
from components.ingest.generate import vocabulary as vocab
from components.ingest.generate.asr import RENDERERS
from components.ingest.generate.policy import Noise, noise_policy
from components.ingest.generate.templates import Segment, Slot
from components.ingest.generate.values import Cast

if TYPE_CHECKING:  # faker only where a corpus is generated: a GPU node's runner has none
    from faker import Faker

_Lines: TypeAlias = list[tuple[str, tuple[Segment, ...]]]


@dataclass(frozen=True)
class _Piece:
    """A stretch of turn text; personal information carries its type and entity key."""

    text: str
    entity_type: str = ""
    entity: str = ""


def generate_corpus(
    n_conversations: int, seed: int, *, noise: Mapping[str, float] | None = None
) -> list[Conversation]:
    """Generate ``n_conversations`` labelled call transcripts; the same seed gives the same corpus.

    Args:
        n_conversations: how many; a longer corpus of one seed starts with the shorter one.
        seed: seeds this call's own ``random.Random`` and Faker instance (no global state).
        noise: overrides for ``ASR_NOISE_POLICY``.

    Returns:
        Conversations ``conv-00001`` ... with exact ``pi`` spans and PI-free ``labels``.

    Raises:
        ParamsError: a noise key that the policy does not have, or a value outside 0..1.
    """
    policy = noise_policy(noise or {})
    rng = random.Random(seed)
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    # Contexts are drawn lazily, in step with the conversations, so prefixes are stable.
    numbered = zip(range(1, n_conversations + 1), _contexts(rng), strict=False)
    return [
        _conversation(number, context, rng=rng, fake=fake, noise=policy)
        for number, context in numbered
    ]


def _contexts(rng: random.Random) -> Iterator[str]:
    """Contexts in shuffled bags of CONTEXT_WEIGHTS: every context shows up early and often."""
    bag = [context for context, weight in vocab.CONTEXT_WEIGHTS.items() for _ in range(weight)]
    while True:
        rng.shuffle(bag)
        yield from bag


def _conversation(
    number: int, context: str, *, rng: random.Random, fake: Faker, noise: Noise
) -> Conversation:
    scenario = rng.choice([spec for spec in templates.SCENARIOS if spec.context == context])
    ending = rng.choice(scenario.endings)
    closing = vocab.CLOSING_BLOCKS.get(context)
    scripts = [
        scenario.script,
        ending.script,
        *([(templates.Line("", block=closing),)] if closing else []),
    ]
    lines = [line for script in scripts for line in _expand(script, rng, noise=noise)]
    if context not in vocab.SEGMENTED_CONTEXTS:
        lines = _merge_same_speaker(lines)
    cast = Cast(rng, fake)
    full_labels = rng.random() < noise["speaker_full_name"]
    turns: list[Turn] = []
    spans: list[PiSpan] = []
    lowercase = _lowercase_turns(len(lines), rng, noise=noise)
    for index, ((role, segments), lower) in enumerate(zip(lines, lowercase, strict=True)):
        turn, turn_spans = _turn(
            index, role, segments=segments, cast=cast, noise=noise, lower=lower, full=full_labels
        )
        turns.append(turn)
        spans.extend(turn_spans)
    labels: dict[str, Any] = {
        "summary": f"{cast.fill_text(scenario.summary)} {cast.fill_text(ending.summary)}",
        "action_items": [cast.fill_text(item) for item in ending.action_items],
        "purpose": scenario.purpose,
        "outcome": ending.outcome,
    }
    return Conversation(f"conv-{number:05d}", tuple(turns), context, tuple(spans), labels)


def _expand(script: templates.Script, rng: random.Random, *, noise: Noise) -> _Lines:
    """The lines said in one conversation: blocks drawn, optional lines kept or not."""
    lines: _Lines = []
    for line in script:
        if line.optional and rng.random() >= noise["optional_line"]:
            continue
        if line.block:
            lines.extend(_expand(rng.choice(templates.BLOCKS[line.block]), rng, noise=noise))
        else:
            lines.append((line.role, rng.choice(line.variants)))
    return lines


def _merge_same_speaker(lines: _Lines) -> _Lines:
    merged: _Lines = []
    for role, segments in lines:
        if merged and merged[-1][0] == role:
            merged[-1] = (role, (*merged[-1][1], " ", *segments))
        else:
            merged.append((role, segments))
    return merged


def _lowercase_turns(n: int, rng: random.Random, *, noise: Noise) -> list[bool]:
    """Which turns come out without truecasing: the whole call, or stretches of turns."""
    if rng.random() < noise["conversation_lowercase"]:
        return [True] * n
    flags: list[bool] = []
    lower = False
    for _ in range(n):
        lower = rng.random() < noise["lowercase_continue" if lower else "lowercase_start"]
        flags.append(lower)
    return flags


def _turn(
    index: int,
    role: str,
    *,
    segments: tuple[Segment, ...],
    cast: Cast,
    noise: Noise,
    lower: bool,
    full: bool,
) -> tuple[Turn, list[PiSpan]]:
    """One turn's text and spans; offsets are counted while the pieces are joined."""
    pieces = _disfluent(
        [_piece(segment, cast, noise=noise, lower=lower) for segment in segments],
        cast.rng,
        noise=noise,
        lower=lower,
    )
    if lower and cast.rng.random() < noise["strip_punctuation"]:
        pieces = [p if p.entity_type else _Piece(_END_PUNCTUATION.sub("", p.text)) for p in pieces]
    speaker, speaker_key = cast.speaker(role, full)
    spans = [PiSpan(index, 0, len(speaker), "PERSON_NAME", speaker_key, "speaker")]
    position = 0
    for piece in pieces:
        end = position + len(piece.text)
        if piece.entity_type:
            spans.append(PiSpan(index, position, end, piece.entity_type, piece.entity))
        position = end
    return Turn(speaker, "".join(piece.text for piece in pieces)), spans


def _piece(segment: Segment, cast: Cast, *, noise: Noise, lower: bool) -> _Piece:
    """The text of one template segment, with its entity when it is personal information."""
    if isinstance(segment, Slot) and segment.name not in vocab.FILL_VALUES:
        item = cast.item(segment.name)
        text = RENDERERS[item.kind](item, segment.form, rng=cast.rng, noise=noise)
        return _Piece(text.lower() if lower else text, item.entity_type, item.key)
    text = segment if isinstance(segment, str) else cast.fill(segment.name)
    return _Piece(text.lower() if lower else text)


_END_PUNCTUATION = re.compile(r"[.,?!;:](?=\s|$)")
_SHORT_WORD = re.compile(r"(?<![\w'])[A-Za-z']{1,5}(?= )")
_WORD_END = re.compile(r"[A-Za-z](?= )")
_KEEPS_CAPITAL = re.compile(r"I\b|[A-Z]{2}")


def _disfluent(
    pieces: list[_Piece], rng: random.Random, *, noise: Noise, lower: bool
) -> list[_Piece]:
    """Add a repeated word, a filler inside the turn and a filler at its start, each by chance."""
    if rng.random() < noise["repeat_word"]:
        _edit_literal(pieces, rng, edit=_repeat_word)
    if rng.random() < noise["filler_mid_turn"]:
        _edit_literal(pieces, rng, edit=_insert_filler)
    if rng.random() < noise["filler_turn_start"]:
        first = pieces[0]
        if not first.entity_type and not _KEEPS_CAPITAL.match(first.text):
            pieces[0] = _Piece(first.text[:1].lower() + first.text[1:])
        filler = rng.choice(vocab.START_FILLERS)
        pieces.insert(0, _Piece(filler.lower() if lower else filler))
    return pieces


def _edit_literal(
    pieces: list[_Piece], rng: random.Random, *, edit: Callable[[str, random.Random], str]
) -> None:
    candidates = [
        i for i, piece in enumerate(pieces) if not piece.entity_type and " " in piece.text
    ]
    if candidates:
        index = rng.choice(candidates)
        pieces[index] = _Piece(edit(pieces[index].text, rng))


def _repeat_word(text: str, rng: random.Random) -> str:
    words = list(_SHORT_WORD.finditer(text))
    if not words:
        return text
    word = rng.choice(words)
    return f"{text[: word.start()]}{word[0]} {text[word.start() :]}"


def _insert_filler(text: str, rng: random.Random) -> str:
    ends = [match.end() for match in _WORD_END.finditer(text)]
    if not ends:
        return text
    at = rng.choice(ends)
    return f"{text[:at]}{rng.choice(vocab.MID_FILLERS)}{text[at:]}"
