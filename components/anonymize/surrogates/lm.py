"""``lm``: the base model proposes what could stand in a span, in its context.

The model reads the text before the mention and proposes the words that could come next:
its ``PROPOSALS`` most likely first tokens, each continued greedily to the end of the
word (or, for organizations and places, up to ``MAX_WORDS`` words). A proposal is kept
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
from typing import Any

from components.anonymize.surrogates.book import Context, Drawn
from components.anonymize.surrogates.realistic import RealisticValues

PROPOSED_TYPES = {"ORGANIZATION_NAME": 4, "LOCATION": 3}  # whole values: their most words
PROPOSALS = 24  # first tokens considered
MAX_STEPS = 6  # tokens a proposal may take
WINDOW = 400  # characters of left context the model reads
# Whether ``text`` read in place tags ``candidate`` (at ``start``) with ``info_type``.
TypeCheck = Callable[[str, int, int, str], bool]


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
        proposals: list[tuple[str, float]] = []
        for logp, token in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            piece = self._decode([token])
            if (spaced and not piece.startswith(" ")) or not piece.strip()[:1].isalpha():
                continue
            word, total = self._continue(ids, token, logp, max_words)
            proposals.append((word.strip(), math.exp(total)))
            if len(proposals) == PROPOSALS:
                break
        return proposals

    def _continue(self, ids: Any, token: int, logp: float, max_words: int) -> tuple[str, float]:
        """Greedy continuation of one first token until the word (or words) end."""
        torch = self._torch
        sequence, total = [token], logp
        with torch.no_grad():
            for _ in range(MAX_STEPS - 1):
                context = torch.cat([ids, torch.tensor([sequence])], dim=1)
                scores = torch.log_softmax(self.model(context).logits[0, -1], dim=-1)
                nxt = int(scores.argmax())
                piece = self._decode([nxt])
                text = self._decode(sequence)
                new_word = piece.startswith(" ")
                if (
                    not piece.strip()
                    or not piece.strip().replace("-", "").replace("'", "").isalpha()
                ):
                    break
                if new_word and len(text.split()) >= max_words:
                    break
                sequence.append(nxt)
                total += float(scores[nxt])
        return self._decode(sequence), total


class LmSource:
    """Surrogates the base model proposes in context, checked by the detector."""

    def __init__(
        self,
        values: RealisticValues,
        model_dir: Path,
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
        self, rng: random.Random, gender: str | None, original: str, context: Context
    ) -> Drawn:
        chosen = self._choose("PERSON_NAME", original, rng, context, 1)
        return (chosen, "lm") if chosen else (self.values.first_name(rng, gender), "realistic")

    def last_name(self, rng: random.Random, original: str, context: Context) -> Drawn:
        chosen = self._choose("PERSON_NAME", original, rng, context, 1)
        return (chosen, "lm") if chosen else (self.values.last_name(rng), "realistic")

    def whole_value(
        self, info_type: str, surface: str, rng: random.Random, context: Context
    ) -> Drawn | None:
        chosen = (
            self._choose(info_type, surface, rng, context, PROPOSED_TYPES[info_type])
            if info_type in PROPOSED_TYPES
            else None
        )
        if chosen:
            return chosen, "lm"
        value = self.values.whole_value(info_type, surface, rng)
        return None if value is None else (value, "realistic")

    def _choose(
        self, info_type: str, original: str, rng: random.Random, context: Context, words: int
    ) -> str | None:
        left, right = context
        kept = [
            (word, p)
            for word, p in self.proposer.propose(left, words)
            if word.lower() != original.lower()
            and self.check(left + word + right, len(left), len(left) + len(word), info_type)
        ][: 1 if self.top1 else self.k]
        if not kept:
            return None
        return kept[0][0] if self.top1 else _weighted(kept, rng)


def _weighted(items: Sequence[tuple[str, float]], rng: random.Random) -> str:
    total = sum(p for _, p in items)
    pick, acc = rng.random() * total, 0.0
    for word, p in items:
        acc += p
        if pick <= acc:
            return word
    return items[-1][0]


def detector_check(detector: Any) -> TypeCheck:
    """A :data:`TypeCheck` by the anonymizer's own detector: some span of the type covers
    the candidate."""

    def check(text: str, start: int, end: int, info_type: str) -> bool:
        (spans,) = detector.detect([text])
        return any(s.entity_type == info_type and s.start <= start and s.end >= end for s in spans)

    return check
