"""``lm``: the base model proposes what could stand in a span, in its context.

The model reads the text before the mention and proposes the words that could come next:
its ``PROPOSALS`` most likely first tokens that start a word, each continued greedily (all
in one batch) to the end of the word (or, for organizations and places, of up to
``PROPOSED_TYPES`` words). A proposal is kept
only if the detector, reading it in the mention's place, tags it with the mention's type;
then the most likely kept one (``top1``) or one of the ``k`` most likely, drawn by their
probability. When none is kept the realistic value stands in (the spans file says so:
``surrogate_source: realistic``). Numbers and identifiers always take the realistic
shape-kept value.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from components.anonymize.surrogates.book import Context, Drawn
from components.anonymize.surrogates.realistic import RealisticValues

PROPOSED_TYPES = {"ORGANIZATION_NAME": 4, "LOCATION": 3}  # whole values: their most words
PROPOSALS = 24  # first tokens considered
MAX_STEPS = 6  # tokens a proposal may take
WINDOW = 400  # characters of left context the model reads


class TypeCheck(Protocol):
    """For each text, whether the (start, end) of the candidate in it is tagged ``info_type``."""

    def __call__(
        self, texts: list[str], places: list[tuple[int, int]], *, info_type: str
    ) -> list[bool]: ...


class LanguageModelProposer:
    """Next-word proposals of a causal LM folder, with their probabilities."""

    def __init__(self, model_dir: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self._decode: Callable[[list[int]], str] = self.tokenizer.decode  # type: ignore[assignment]
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()

    def propose(self, left: str, max_words: int) -> list[tuple[str, float]]:
        """Words that could follow ``left`` (which ends before the mention's first
        character), most likely first, each with its probability."""
        torch = self._torch
        prompt = left.rstrip()[-WINDOW:] or self.tokenizer.bos_token or ""
        spaced = left[-1:].isspace() or not left
        ids = self.tokenizer(prompt, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            first = torch.log_softmax(self.model(ids).logits[0, -1], dim=-1)
        top = torch.topk(first, PROPOSALS * 4)
        starts = [
            (token, logp)
            for logp, token in zip(top.values.tolist(), top.indices.tolist(), strict=True)
            if _starts_word(self._decode([token]), spaced)
        ][:PROPOSALS]
        if not starts:
            return []
        words = self._continue(ids, starts, max_words=max_words)
        ranked = sorted(words, key=lambda item: -item[1])
        return [(word.strip(), math.exp(total)) for word, total in ranked]

    def _continue(
        self, ids: Any, starts: list[tuple[int, float]], *, max_words: int
    ) -> list[tuple[str, float]]:
        """Every first token continued greedily, all in one batch, until its word (or
        words) end: a step appends to every sequence, and a finished one ignores the rest."""
        torch = self._torch
        sequences = [[token] for token, _ in starts]
        totals = [logp for _, logp in starts]
        open_ = [True] * len(starts)
        lengths = [1] * len(starts)
        with torch.no_grad():
            for _ in range(MAX_STEPS - 1):
                batch = torch.cat([ids.repeat(len(starts), 1), torch.tensor(sequences)], dim=1)
                scores = torch.log_softmax(self.model(batch).logits[:, -1], dim=-1)
                best = scores.argmax(dim=-1).tolist()
                for i, token in enumerate(best):
                    sequences[i].append(token)
                    if open_[i] and self._extends(
                        sequences[i][: lengths[i]], token, max_words=max_words
                    ):
                        lengths[i] += 1
                        totals[i] += float(scores[i, token])
                    else:
                        open_[i] = False
                if not any(open_):
                    break
        return [
            (self._decode(sequence[:length]), total)
            for sequence, length, total in zip(sequences, lengths, totals, strict=True)
        ]

    def _extends(self, sequence: list[int], token: int, *, max_words: int) -> bool:
        """Whether ``token`` continues the word(s) of ``sequence``: letters, a hyphen or an
        apostrophe, and a new word only while fewer than ``max_words`` are written."""
        piece = self._decode([token])
        if not piece.strip() or not piece.strip().replace("-", "").replace("'", "").isalpha():
            return False
        return not (piece.startswith(" ") and len(self._decode(sequence).split()) >= max_words)


def _starts_word(piece: str, spaced: bool) -> bool:
    """A first token that begins a word where the mention starts (after a space, if the
    text before it ends with one)."""
    return not (spaced and not piece.startswith(" ")) and piece.strip()[:1].isalpha()


class LmSource:
    """Surrogates the base model proposes in context, checked by the detector."""

    def __init__(
        self,
        values: RealisticValues,
        model_dir: Path,
        *,
        k: int,
        top1: bool,
        check: TypeCheck,
        proposer: Any | None = None,
    ) -> None:
        self.values, self.model_dir, self.k, self.top1, self.check = (
            values,
            model_dir,
            k,
            top1,
            check,
        )
        self._proposer = proposer

    @functools.cached_property
    def proposer(self) -> Any:
        return self._proposer or LanguageModelProposer(self.model_dir)

    def first_name(
        self, rng: random.Random, gender: str | None, *, original: str, context: Context
    ) -> Drawn:
        chosen = self._choose("PERSON_NAME", original, rng=rng, context=context, words=1)
        return (chosen, "lm") if chosen else (self.values.first_name(rng, gender), "realistic")

    def last_name(self, rng: random.Random, original: str, *, context: Context) -> Drawn:
        chosen = self._choose("PERSON_NAME", original, rng=rng, context=context, words=1)
        return (chosen, "lm") if chosen else (self.values.last_name(rng), "realistic")

    def whole_value(
        self, info_type: str, surface: str, *, rng: random.Random, context: Context
    ) -> Drawn | None:
        chosen = (
            self._choose(
                info_type, surface, rng=rng, context=context, words=PROPOSED_TYPES[info_type]
            )
            if info_type in PROPOSED_TYPES
            else None
        )
        if chosen:
            return chosen, "lm"
        value = self.values.whole_value(info_type, surface, rng=rng)
        return None if value is None else (value, "realistic")

    def _choose(
        self, info_type: str, original: str, *, rng: random.Random, context: Context, words: int
    ) -> str | None:
        """The most likely proposal (``top1``), or one of the ``k`` most likely by their
        probability, among those the detector tags with ``info_type`` in place; the ``2k``
        most likely are checked, in one batch."""
        left, right = context
        proposals = [
            (word, p)
            for word, p in self.proposer.propose(left, words)
            if word.lower() != original.lower()
        ][: 2 * self.k]
        tagged = self.check(
            [left + word + right for word, _ in proposals],
            [(len(left), len(left) + len(word)) for word, _ in proposals],
            info_type=info_type,
        )
        kept = [proposal for proposal, ok in zip(proposals, tagged, strict=True) if ok]
        if not kept:
            return None
        return kept[0][0] if self.top1 else _weighted(kept[: self.k], rng)


def _weighted(items: Sequence[tuple[str, float]], rng: random.Random) -> str:
    total = sum(p for _, p in items)
    pick, acc = rng.random() * total, 0.0
    for word, p in items:
        acc += p
        if pick <= acc:
            return word
    return items[-1][0]


def detector_check(detector: Any) -> TypeCheck:
    """A :data:`TypeCheck` by the anonymizer's own detector, all texts in one batch: some
    span of the type covers the candidate."""

    def check(texts: list[str], places: list[tuple[int, int]], *, info_type: str) -> list[bool]:
        found = detector.detect(texts) if texts else []
        return [
            any(s.entity_type == info_type and s.start <= start and s.end >= end for s in spans)
            for spans, (start, end) in zip(found, places, strict=True)
        ]

    return check
