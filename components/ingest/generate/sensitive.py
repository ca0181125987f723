"""Calls in the taxonomy's settings with sensitive facts planted and labelled by path, each
with a normal, a privacy-preserving and a leaking reference summary.

A conversation's turns carry exact ``pi`` spans (names, numbers: made up by ``Cast`` and
written by the ASR renderers, as in the main corpus) and exact ``sensitive`` spans, one per
mention of a fact, so both ground truths hold by construction. Labels: ``summary`` (the
normal summary), ``summary_private`` and ``summary_leaking`` (a preference pair), and
``setting``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.core.corpus import Conversation, PiSpan, SensitiveSpan, Turn
from components.ingest.generate import templates
from components.ingest.generate import vocabulary as vocab
from components.ingest.generate.asr import RENDERERS
from components.ingest.generate.policy import Noise, noise_policy
from components.ingest.generate.sensitive_scripts import (
    SENSITIVE_SCENARIOS,
    Fact,
    SensitiveScenario,
)
from components.ingest.generate.templates import Slot
from components.ingest.generate.values import Cast

if TYPE_CHECKING:  # faker only where a corpus is generated: a GPU node's runner has none
    from faker import Faker

_FACT = re.compile(r"\[([a-z_]+)\]")
ID_PREFIX = "sens-"
SENSITIVE = "sensitive"  # the dataset's name in the corpus's metrics and evaluation
# Every call is a service call (a pharmacy, a bank, an HR line...): the embedded corpus's
# context, which anonymize keeps as a category and the gate knows.
CONTEXT = "customer_support"


@dataclass(frozen=True)
class _Piece:
    text: str
    entity_type: str = ""
    entity: str = ""
    path: str = ""  # a sensitive fact's taxonomy path
    element: str = ""


def generate_sensitive_corpus(
    n_conversations: int, seed: int, *, noise: Mapping[str, float] | None = None
) -> list[Conversation]:
    """``n_conversations`` calls ``sens-00001`` ..., the settings in turn; the same seed
    gives the same corpus and a longer corpus of one seed starts with the shorter one.

    Raises:
        ParamsError: a noise key that the policy does not have, or a value outside 0..1.
    """
    policy = noise_policy(noise or {})
    rng = random.Random(seed)
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    order = list(SENSITIVE_SCENARIOS)
    conversations = []
    for number in range(1, n_conversations + 1):
        if (number - 1) % len(order) == 0:
            rng.shuffle(order)  # each setting once per round, in a new order
        scenario = order[(number - 1) % len(order)]
        conversations.append(_conversation(number, scenario, rng=rng, fake=fake, noise=policy))
    return conversations


def is_generated_sensitive(conversation: Conversation) -> bool:
    """Whether a conversation is one of these generated calls (by its id and labels)."""
    return conversation.id.startswith(ID_PREFIX) and "setting" in conversation.labels


def _conversation(
    number: int, scenario: SensitiveScenario, *, rng: random.Random, fake: Faker, noise: Noise
) -> Conversation:
    cast = Cast(rng, fake)
    facts = {name: rng.choice(options) for name, options in sorted(scenario.facts.items())}
    turns: list[Turn] = []
    pi: list[PiSpan] = []
    sensitive: list[SensitiveSpan] = []
    for index, (role, line) in enumerate(scenario.lines):
        pieces = _pieces(line, facts, cast=cast, noise=noise)
        speaker, speaker_key = cast.speaker(role, False)
        pi.append(PiSpan(index, 0, len(speaker), "PERSON_NAME", speaker_key, "speaker"))
        position = 0
        for piece in pieces:
            end = position + len(piece.text)
            if piece.entity_type:
                pi.append(PiSpan(index, position, end, piece.entity_type, piece.entity))
            if piece.path:
                sensitive.append(_extended(sensitive, index, start=position, end=end, piece=piece))
            position = end
        turns.append(Turn(speaker, "".join(piece.text for piece in pieces)))
    labels = {
        "summary": _summary(scenario.summary, facts, abstractions=None, cast=cast),
        "summary_private": _summary(
            scenario.private, facts, abstractions=scenario.abstractions, cast=cast
        ),
        "summary_leaking": _summary(scenario.leaking, facts, abstractions=None, cast=cast),
        "setting": scenario.setting,
    }
    return Conversation(
        f"{ID_PREFIX}{number:05d}",
        tuple(turns),
        CONTEXT,
        tuple(pi),
        labels,
        sensitive=tuple(sensitive),
    )


def _extended(
    spans: list[SensitiveSpan], turn: int, *, start: int, end: int, piece: _Piece
) -> SensitiveSpan:
    """The span of a fact's piece: one mention's pieces (its words and the personal
    information inside it) make one span, so the last span grows instead."""
    last = spans[-1] if spans else None
    if last and (last.turn, last.end, last.element) == (turn, start, piece.element):
        spans.pop()
        return SensitiveSpan(turn, last.start, end, piece.path, piece.element)
    return SensitiveSpan(turn, start, end, piece.path, piece.element)


def _pieces(line: str, facts: Mapping[str, Fact], *, cast: Cast, noise: Noise) -> list[_Piece]:
    """A line's text as pieces: literals, personal information, and whole facts."""
    pieces: list[_Piece] = []
    position = 0
    for match in _FACT.finditer(line):
        pieces.extend(_slot_pieces(line[position : match.start()], cast, noise=noise))
        fact = facts[match[1]]
        inner = _slot_pieces(fact.mention, cast, noise=noise)
        pieces.extend(_Piece(p.text, p.entity_type, p.entity, fact.path, match[1]) for p in inner)
        position = match.end()
    pieces.extend(_slot_pieces(line[position:], cast, noise=noise))
    return _capitalized(pieces)


def _slot_pieces(text: str, cast: Cast, *, noise: Noise) -> list[_Piece]:
    pieces = []
    for segment in templates.parse_segments(text):
        if isinstance(segment, Slot) and segment.name not in vocab.FILL_VALUES:
            item = cast.item(segment.name)
            written = RENDERERS[item.kind](item, segment.form, rng=cast.rng, noise=noise)
            pieces.append(_Piece(written, item.entity_type, item.key))
        else:
            pieces.append(_Piece(segment if isinstance(segment, str) else cast.fill(segment.name)))
    return pieces


def _capitalized(pieces: list[_Piece]) -> list[_Piece]:
    """A turn that starts with a literal starts with a capital letter."""
    if pieces and not pieces[0].entity_type and pieces[0].text:
        first = pieces[0]
        pieces[0] = _Piece(
            first.text[0].upper() + first.text[1:], "", "", first.path, first.element
        )
    return pieces


def _summary(
    text: str, facts: Mapping[str, Fact], *, abstractions: Mapping[str, str] | None, cast: Cast
) -> str:
    """A reference summary: each ``[fact]`` said, or abstracted when ``abstractions`` is
    given, and each ``{slot}`` as the call filled it (personal information written out)."""

    def fact(match: re.Match[str]) -> str:
        return abstractions[match[1]] if abstractions is not None else facts[match[1]].said

    filled = _FACT.sub(fact, text)
    return "".join(
        segment
        if isinstance(segment, str)
        else cast.fill(segment.name)
        if segment.name in vocab.FILL_VALUES
        else cast.item(segment.name).written
        for segment in templates.parse_segments(filled)
    )
