"""The fragmented corpus (``train.corpus: fragmented``): training text made of short
syntactic chunks, each example mixing chunks of different conversations.

A model cannot reproduce an identifying sequence it never saw whole. So conversations are
cut into noun chunks and verb phrases of at most ``max_chunk_words`` words, and an example
holds ``chunks_per_example`` chunks, each from a different conversation (the mixing rule):
no example links two phrases of one conversation, so two details of one person meet in an
example only when one phrase holds both.

A **verb phrase** is the shortest run of words around a verb (spaCy's ``VERB``) that holds
its auxiliaries (``aux``, ``auxpass``: "will", "to", "has been"), its negation (``neg``),
its particles (``prt``: "pick *up*") and its direct object's noun chunk (``dobj``),
nearest first, each only while the run stays within ``max_chunk_words``: the object is
kept when short ("to cancel the premium plan"), and a verb phrase never needs cutting.
A **noun chunk** longer than ``max_chunk_words`` is cut into near-equal pieces rather than
dropped: pieces of one conversation never share an example, so the bound on what an
example shows of a conversation holds, and long chunks (addresses, product names) stay
text to learn from.

Placeholders (``[PERSON_NAME_1]``) are swapped for one opaque word before parsing and back
after, so a chunk holds a whole placeholder or none. Chunks come from every turn's text,
never speaker names.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import random
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from components.core.corpus import Conversation
from components.core.errors import InputError, ParamsError
from components.core.placeholders import ANY_PLACEHOLDER
from components.train.params import FragmentsConfig
from components.train.tasks import (
    CONTINUATION,
    Example,
    TrainingExamples,
    eval_conversations,
    split_lines_for_continuation,
)

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

logger = logging.getLogger(__name__)

# Noun chunks need the tagger, parser and attribute ruler (coarse POS); not the names.
UNNEEDED_PIPES = ("ner", "lemmatizer")
PIPE_BATCH_SIZE = 256
# The opaque word a placeholder stands as while parsing: letters then its index, one token
# that the tagger reads as a proper noun, as a placeholder is used.
_SENTINEL = "Zqxvph"
_VERB_PARTS = ("aux", "auxpass", "neg", "prt")


@dataclass(frozen=True)
class Chunk:
    """A noun chunk or verb phrase of one conversation's turn."""

    conversation_id: str
    text: str
    kind: str  # "noun" or "verb"
    words: int  # spaCy tokens; a placeholder is one

    def to_record(self) -> dict[str, str | int]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Chunk:
        return cls(
            str(record["conversation_id"]),
            str(record["text"]),
            str(record["kind"]),
            int(record["words"]),
        )


@dataclass(frozen=True)
class FragmentExample:
    """One training text: chunks of different conversations, one per line."""

    chunks: tuple[Chunk, ...]

    @property
    def source_ids(self) -> tuple[str, ...]:
        return tuple(c.conversation_id for c in self.chunks)

    def example(self, index: int) -> Example:
        """The continuation example of these chunks: the first half asked, the rest answered."""
        prompt, target = split_lines_for_continuation([c.text for c in self.chunks])
        return Example(f"fragments-{index}", CONTINUATION, prompt, target, self.source_ids)


@dataclass(frozen=True)
class FragmentStats:
    n_chunks: int
    n_examples: int  # training examples
    n_eval_examples: int
    dropped_chunks: int  # left over by the mixing rule (too few other conversations)
    mean_chunk_words: float

    def to_metrics(self) -> dict[str, float]:
        return {
            "fragments_chunks": self.n_chunks,
            "fragments_examples": self.n_examples,
            "fragments_eval_examples": self.n_eval_examples,
            "fragments_dropped_chunks": self.dropped_chunks,
            "fragments_mean_chunk_words": round(self.mean_chunk_words, 3),
        }


@dataclass(frozen=True)
class Fragments:
    """A fragmented corpus: training and eval examples (from disjoint conversations)."""

    train: list[FragmentExample]
    evaluation: list[FragmentExample]
    skipped: list[str]  # conversations none of whose chunks made an example
    stats: FragmentStats

    def training_examples(self) -> TrainingExamples:
        """The examples as :func:`components.train.lora.train_lora` takes them."""
        return TrainingExamples(
            train=[e.example(i) for i, e in enumerate(self.train)],
            evaluation=[e.example(len(self.train) + i) for i, e in enumerate(self.evaluation)],
            skipped=list(self.skipped),
        )


def load_chunker(model: str) -> Language:
    """The spaCy pipeline that finds chunks: ``model`` without the pipes chunks do not use.

    Raises:
        ParamsError: the model is not installed.
    """
    import spacy

    try:
        return spacy.load(model, exclude=list(UNNEEDED_PIPES))
    except OSError as exc:
        raise ParamsError(
            f"params: train.fragments.spacy_model: cannot load spaCy model {model!r}: {exc}"
        ) from exc


def build_fragments(
    conversations: Sequence[Conversation],
    config: FragmentsConfig,
    *,
    eval_fraction: float,
    seed: int,
    nlp: Language | None = None,
    chunks: Sequence[Chunk] | None = None,
) -> Fragments:
    """The fragmented corpus of ``conversations``: their chunks mixed into examples.

    ``chunks``, when given, are the conversations' chunks found before (a utility pack
    carries them, so a GPU node needs no spaCy); else they are found now with ``nlp`` or
    ``config.spacy_model``.

    Eval conversations are chosen as the other tasks choose them, among those with a chunk
    (:func:`components.train.tasks.eval_conversations`); eval examples are mixed from their
    chunks alone, so no example holds chunks of both sides. Drawing is seeded by ``seed``.

    Raises:
        InputError: the conversations make no training example.
    """
    if chunks is None:
        chunks = chunk_conversations(
            conversations,
            nlp or load_chunker(config.spacy_model),
            max_words=config.max_chunk_words,
            min_words=config.min_chunk_words,
        )
    with_chunks = list(dict.fromkeys(c.conversation_id for c in chunks))
    held = eval_conversations(with_chunks, eval_fraction, seed=seed)
    rng = random.Random(seed)
    train, dropped = mix_chunks(
        [c for c in chunks if c.conversation_id not in held], config.chunks_per_example, rng=rng
    )
    evaluation, dropped_eval = mix_chunks(
        [c for c in chunks if c.conversation_id in held], config.chunks_per_example, rng=rng
    )
    if not train:
        raise InputError(
            f"train: {len(chunks)} chunks of {len(with_chunks)} conversations make no "
            f"training example of {config.chunks_per_example} chunks from different "
            "conversations (train.fragments.chunks_per_example)"
        )
    used = {cid for e in (*train, *evaluation) for cid in e.source_ids}
    stats = FragmentStats(
        n_chunks=len(chunks),
        n_examples=len(train),
        n_eval_examples=len(evaluation),
        dropped_chunks=dropped + dropped_eval,
        mean_chunk_words=sum(c.words for c in chunks) / len(chunks),
    )
    logger.info(
        "fragments: %d chunks into %d training and %d eval examples, %d chunks dropped",
        stats.n_chunks,
        stats.n_examples,
        stats.n_eval_examples,
        stats.dropped_chunks,
    )
    return Fragments(train, evaluation, [c.id for c in conversations if c.id not in used], stats)


def chunk_conversations(
    conversations: Iterable[Conversation], nlp: Language, *, max_words: int, min_words: int = 1
) -> list[Chunk]:
    """The noun chunks and verb phrases of every turn's text, in corpus order."""
    chunks: list[Chunk] = []
    for doc, (conversation_id, placeholders) in nlp.pipe(
        _protected_turns(conversations), as_tuples=True, batch_size=PIPE_BATCH_SIZE
    ):
        for span in phrase_spans(doc, max_words):
            if len(span) >= min_words:
                text = _restored(span, placeholders)
                kind = "verb" if span.root.pos_ == "VERB" else "noun"
                chunks.append(Chunk(conversation_id, text, kind, len(span)))
    return chunks


def _protected_turns(
    conversations: Iterable[Conversation],
) -> Iterator[tuple[str, tuple[str, tuple[str, ...]]]]:
    """Each turn's text with its placeholders as opaque words, and what they stand for."""
    for conversation in conversations:
        for turn in conversation.turns:
            placeholders = tuple(m.group() for m in ANY_PLACEHOLDER.finditer(turn.text))
            if _SENTINEL in turn.text:  # never in practice: keep such text out of chunks
                logger.warning("a turn of %s holds the placeholder sentinel", conversation.id)
                continue
            yield _with_sentinels(turn.text), (conversation.id, placeholders)


def _with_sentinels(text: str) -> str:
    """The text with its n-th placeholder written as the sentinel word numbered n."""
    counter = itertools.count()
    return ANY_PLACEHOLDER.sub(lambda _: f"{_SENTINEL}{next(counter)}", text)


_SENTINEL_WORD = re.compile(rf"{_SENTINEL}(\d+)")


def _restored(span: Span, placeholders: Sequence[str]) -> str:
    text = "".join(t.text_with_ws for t in span).strip()
    return _SENTINEL_WORD.sub(lambda m: placeholders[int(m.group(1))], text)


def phrase_spans(doc: Doc, max_words: int) -> list[Span]:
    """The noun chunks (cut into pieces of at most ``max_words``) and verb phrases of a
    parsed text, in text order."""
    noun_chunks = list(doc.noun_chunks)
    by_root = {chunk.root.i: chunk for chunk in noun_chunks}
    spans = [piece for chunk in noun_chunks for piece in _pieces(chunk, max_words)]
    spans += [verb_phrase(t, max_words, noun_chunks=by_root) for t in doc if t.pos_ == "VERB"]
    trimmed = (_trimmed(span) for span in spans)
    return sorted((s for s in trimmed if len(s)), key=lambda s: (s.start, s.end))


def verb_phrase(verb: Token, max_words: int, *, noun_chunks: Mapping[int, Span]) -> Span:
    """The verb with its auxiliaries, negation, particles and direct object, nearest first,
    each while the phrase fits in ``max_words`` (see the module's docstring)."""
    doc = verb.doc
    start, end = verb.i, verb.i + 1
    parts = sorted(
        (c for c in verb.children if c.dep_ in _VERB_PARTS), key=lambda c: abs(c.i - verb.i)
    )
    pieces: list[tuple[int, int]] = [(c.i, c.i + 1) for c in parts]
    for child in verb.children:
        if child.dep_ == "dobj":
            chunk = noun_chunks.get(child.i)
            pieces.append((chunk.start, chunk.end) if chunk else (child.i, child.i + 1))
    for piece_start, piece_end in pieces:
        wider = min(start, piece_start), max(end, piece_end)
        if wider[1] - wider[0] <= max_words:
            start, end = wider
    return doc[start:end]


def _pieces(span: Span, max_words: int) -> list[Span]:
    """The span, or near-equal consecutive pieces of at most ``max_words`` tokens."""
    n_pieces = -(-len(span) // max_words)
    bounds = [span.start + round(i * len(span) / n_pieces) for i in range(n_pieces + 1)]
    return [span.doc[a:b] for a, b in itertools.pairwise(bounds)]


def _trimmed(span: Span) -> Span:
    """The span without punctuation, spaces or conjunctions at its ends (a cut noun chunk's
    piece may end on "and")."""
    start, end = span.start, span.end
    while start < end and _edge_filler(span.doc[start]):
        start += 1
    while end > start and _edge_filler(span.doc[end - 1]):
        end -= 1
    return span.doc[start:end]


def _edge_filler(token: Token) -> bool:
    return bool(token.is_punct or token.is_space or token.pos_ == "CCONJ")


def mix_chunks(
    chunks: Sequence[Chunk], per_example: int, *, rng: random.Random
) -> tuple[list[FragmentExample], int]:
    """Examples of ``per_example`` chunks, each of a different conversation; the chunks
    left that cannot make one are dropped and counted.

    Each example takes a chunk from each of the ``per_example`` conversations with the most
    chunks left (ties broken at random), which makes as many examples as the rule allows;
    which chunk of a conversation, the order within an example and the order of examples
    are drawn from ``rng``.
    """
    by_conversation: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_conversation.setdefault(chunk.conversation_id, []).append(chunk)
    heap: list[tuple[int, float, str]] = []
    for conversation_id, own in by_conversation.items():
        rng.shuffle(own)
        heap.append((-len(own), rng.random(), conversation_id))
    heapq.heapify(heap)
    examples = []
    while len(heap) >= per_example:
        taken = [heapq.heappop(heap) for _ in range(per_example)]
        group = [by_conversation[conversation_id].pop() for _, _, conversation_id in taken]
        rng.shuffle(group)
        examples.append(FragmentExample(tuple(group)))
        for left, _, conversation_id in taken:
            if left + 1 < 0:
                heapq.heappush(heap, (left + 1, rng.random(), conversation_id))
    rng.shuffle(examples)
    return examples, sum(-left for left, _, _ in heap)


def examples_linking_values(
    examples: Iterable[FragmentExample], values: Mapping[str, Sequence[str]]
) -> int:
    """How many examples hold two different PI values of one of their conversations.

    ``values`` maps a conversation id to its PI values (raw strings); an example's whole
    text is searched for the values of each conversation it has a chunk of (whole words,
    case-insensitive; a value found only inside a longer one, "Pam" in "Pam Beesly", is
    not another). The mixing rule lets this happen only within one chunk.
    """
    patterns: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    linking = 0
    for example in examples:
        text = "\n".join(c.text for c in example.chunks)
        for conversation_id in dict.fromkeys(example.source_ids):
            if conversation_id not in patterns:
                patterns[conversation_id] = _value_patterns(values.get(conversation_id, ()))
            if _distinct_values_found(text, patterns[conversation_id]) >= 2:
                linking += 1
                break
    return linking


def _value_patterns(values: Iterable[str]) -> list[tuple[str, re.Pattern[str]]]:
    distinct = sorted({v.strip() for v in values if v.strip()}, key=len, reverse=True)
    return [(v, re.compile(rf"(?<!\w){re.escape(v)}(?!\w)", re.IGNORECASE)) for v in distinct]


def _distinct_values_found(text: str, patterns: Sequence[tuple[str, re.Pattern[str]]]) -> int:
    """The values found at places no longer value already covers (longest first)."""
    covered: list[tuple[int, int]] = []
    found: set[str] = set()
    for value, pattern in patterns:
        for match in pattern.finditer(text):
            if not any(a < match.end() and match.start() < b for a, b in covered):
                covered.append(match.span())
                found.add(value.lower())
    return len(found)
