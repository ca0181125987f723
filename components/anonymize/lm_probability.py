"""Zero-shot redaction by language-model probability (``lm_probability``): a word the model
finds improbable in its context (below ``anonymize.lm_probability.p``) is redacted as
``IMPROBABLE_WORD``, whatever it is; names, codes and rare facts are what a model cannot guess.

A word's probability is the product of its sub-tokens' (the sum of their log-probabilities):
a sub-token belongs to each word its characters, spaces left out, overlap, so the leading
space of a GPT-style token (" Zor") counts with the word it starts. Stop words, punctuation
and placeholders are never judged (``components/anonymize/words.py``).

Scoring and thresholding are apart, so a sweep scores once and thresholds many times:
``scorer.score(texts)`` then ``spans_below(scored, p, texts)`` for each ``p``. Two scorers:

- ``CausalWordScorer`` (the default, the base model at ``models/base``): left context only,
  one forward pass a window, in the texts' order of tokens.
- ``MaskedWordScorer`` (``anonymize.lm_probability.model``: a masked LM folder): both sides;
  all of a word's sub-tokens are masked at once, one row a word.

Both read an optional context before each text (``score(texts, contexts=...)``, the engine's
``detect_in_context``: a turn's conversation so far), tokenized with the text as one string;
only the text's words are judged, at offsets in the text. At most half a window of the
context's last ``context_tokens`` tokens (``anonymize.lm_probability.context_tokens``, half a
window at most) are read: each turn pays for its context again, so the knob trades the first
words' judgement for speed (0: each text alone).
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from components.anonymize.spans import Span
from components.anonymize.words import WORD_SCORE, candidate_words, merge_adjacent
from components.core.errors import BackendError
from components.core.lexicon import stop_words

ENTITY_TYPE = "IMPROBABLE_WORD"
SOURCE = "lm_probability"  # Span.source
DOCUMENT_SEPARATOR = "<|endoftext|>"


@dataclass(frozen=True)
class WordProbability:
    """A word of a text (character offsets) and its probability in context."""

    start: int
    end: int
    probability: float


class WordProbabilityScorer(Protocol):
    """Scores the words of texts: every word the detector may judge, in text order."""

    def score(
        self, texts: Sequence[str], batch_size: int = ..., *, contexts: Sequence[str] | None = None
    ) -> list[list[WordProbability]]: ...


def spans_below(
    scored: Sequence[Sequence[WordProbability]], p: float, *, texts: Sequence[str]
) -> list[list[Span]]:
    """The spans of each text's words with probability below ``p``, runs of them separated
    by spaces joined into one span (``texts``: the texts scored, for the gaps)."""
    return [
        merge_adjacent(
            [
                Span(w.start, w.end, ENTITY_TYPE, WORD_SCORE, SOURCE)
                for w in words
                if w.probability < p
            ],
            text,
        )
        for words, text in zip(scored, texts, strict=True)
    ]


@dataclass
class LmProbabilityDetector:
    """Redacts the words ``scorer`` puts below ``p``; counts its throughput (no text kept)."""

    scorer: WordProbabilityScorer
    p: float
    batch_size: int = 8  # the LM's rows a forward pass (anonymize.lm_probability.batch_size)
    chars: int = field(default=0, init=False)
    seconds: float = field(default=0.0, init=False)

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        """Improbable words of each text, read alone; ``batch_size`` is the engine's texts a
        batch, the LM's batches are ``self.batch_size`` rows."""
        return self._detect(texts, None)

    def detect_in_context(
        self, texts: Sequence[str], contexts: Sequence[str], *, batch_size: int = 64
    ) -> list[list[Span]]:
        """Improbable words of each text, ``contexts[i]`` read before ``texts[i]`` (never
        judged; the throughput counts the texts' characters only)."""
        return self._detect(texts, contexts)

    def _detect(self, texts: Sequence[str], contexts: Sequence[str] | None) -> list[list[Span]]:
        started = time.perf_counter()
        scored = self.scorer.score(texts, self.batch_size, contexts=contexts)
        self.seconds += time.perf_counter() - started
        self.chars += sum(map(len, texts))
        return spans_below(scored, self.p, texts=texts)

    def usage_metrics(self) -> dict[str, Any]:
        """Characters scored, seconds and characters per second (the stage's metrics)."""
        return {
            "lm_probability_chars": self.chars,
            "lm_probability_seconds": round(self.seconds, 3),
            "lm_probability_chars_per_second": round(self.chars / self.seconds, 1)
            if self.seconds
            else 0.0,
        }


@dataclass
class _Row:
    """One forward pass's input: token ids, and which of its logits score which tokens."""

    text: int
    ids: list[int]
    # (position in the row whose logits predict it, token index in the text, its id)
    targets: list[tuple[int, int, int]]
    word: int = -1  # the masked word's index (MaskedWordScorer)


class _LanguageModel:
    """A Hugging Face model and its fast tokenizer, on the GPU when torch sees one."""

    def __init__(self, folder: Path, masked: bool, *, max_tokens: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

        auto = AutoModelForMaskedLM if masked else AutoModelForCausalLM
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder)
            model = auto.from_pretrained(folder, dtype=torch.float32).eval()
        except (OSError, ValueError) as exc:
            kind = "masked" if masked else "causal"
            raise BackendError(f"{folder}: not a {kind} language model folder: {exc}") from exc
        if not self.tokenizer.is_fast:
            raise BackendError(f"{folder}: lm_probability needs a fast tokenizer (offsets)")
        self.model = model.to("cuda" if torch.cuda.is_available() else "cpu")
        limit = getattr(model.config, "max_position_embeddings", None) or max_tokens
        self.max_tokens = min(max_tokens, int(limit))
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self._torch = torch

    def encode(self, texts: Sequence[str]) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
        """Token ids and their character offsets, no special tokens."""
        encoded = self.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True)
        offsets = [[(int(a), int(b)) for a, b in o] for o in encoded["offset_mapping"]]
        return [list(ids) for ids in encoded["input_ids"]], offsets

    def target_log_probs(
        self, rows: list[_Row], batch_size: int
    ) -> Iterator[tuple[_Row, int, float]]:
        """(row, token index in its text, log-probability) of every target of ``rows``,
        batched longest first (least padding)."""
        ordered = sorted(rows, key=lambda r: -len(r.ids))
        for i in range(0, len(ordered), batch_size):
            batch = ordered[i : i + batch_size]
            for row, values in zip(batch, self._batch_log_probs(batch), strict=True):
                for target, value in zip(row.targets, values, strict=True):
                    yield row, target[1], value

    def _batch_log_probs(self, batch: list[_Row]) -> list[list[float]]:
        """The log-probabilities of each row's targets: one forward pass, padded right."""
        torch = self._torch
        width = max(len(row.ids) for row in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for j, row in enumerate(batch):
            ids[j, : len(row.ids)] = torch.tensor(row.ids)
            mask[j, : len(row.ids)] = 1
        device = self.model.device
        with torch.inference_mode():
            logits = self.model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            values = []
            for j, row in enumerate(batch):
                # a row at a time: a batch's log-softmax would be rows x tokens x vocabulary
                scores = torch.log_softmax(logits[j, [t[0] for t in row.targets]].float(), -1)
                wanted = torch.tensor([t[2] for t in row.targets], device=scores.device)
                values.append([float(v) for v in scores.gather(1, wanted[:, None])[:, 0]])
        return values


def word_tokens(
    text: str, words: Sequence[tuple[int, int]], *, offsets: Sequence[tuple[int, int]]
) -> list[list[int]]:
    """For each word, the indices of the tokens whose characters, edge spaces left out,
    overlap it (a GPT-style token's leading space belongs to the word it starts)."""
    starts = [start for start, _ in words]
    found: list[list[int]] = [[] for _ in words]
    for index, (a, b) in enumerate(offsets):
        piece = text[a:b]
        a, b = a + len(piece) - len(piece.lstrip()), b - len(piece) + len(piece.rstrip())
        if b <= a:
            continue
        i = max(bisect.bisect_right(starts, a) - 1, 0)
        while i < len(words) and words[i][0] < b:
            if a < words[i][1]:
                found[i].append(index)
            i += 1
    return found


@dataclass
class _Encoded:
    """A text in its context, tokenized: what a scorer reads and which tokens it judges."""

    ids: list[int]  # the context's last tokens (context_tokens at most), then the text's
    words: list[tuple[int, int]]  # the text's candidate words, offsets in the text
    tokens: list[list[int]]  # each word's tokens, indices in ``ids``


def _encode_in_context(
    lm: _LanguageModel,
    texts: Sequence[str],
    *,
    contexts: Sequence[str] | None,
    max_context_tokens: int,
) -> list[_Encoded]:
    """Each text tokenized after its context (none when ``contexts`` is None), with its
    candidate words (stop words skipped) and their tokens; a word no token covers (a
    character the tokenizer drops) is left out. Context and text are one string to the
    tokenizer, so a word keeps the leading space its token holds ("Agent: Hi")."""
    if contexts is None or max_context_tokens == 0:  # read alone, tokenized alone
        contexts = [""] * len(texts)
    ids, offsets = lm.encode([c + t for c, t in zip(contexts, texts, strict=True)])
    skip = stop_words()
    result = []
    for text, context, text_ids, text_offsets in zip(texts, contexts, ids, offsets, strict=True):
        shift = len(context)
        words = candidate_words(text, skip)
        shifted = [(start + shift, end + shift) for start, end in words]
        tokens = word_tokens(context + text, shifted, offsets=text_offsets)
        # tokens wholly in the context; the first of them are dropped beyond the limit
        dropped = max(0, sum(end <= shift for _, end in text_offsets) - max_context_tokens)
        kept = [(word, found) for word, found in zip(words, tokens, strict=True) if found]
        result.append(
            _Encoded(
                text_ids[dropped:],
                [word for word, _ in kept],
                [[t - dropped for t in found] for _, found in kept],
            )
        )
    return result


class CausalWordScorer:
    """Word probabilities from a causal LM: each token given the tokens before it.

    A text longer than the window is read in windows of ``max_tokens`` (the first being the
    start token); each window after the first starts a quarter window before the last one's
    end, so every token is scored with that much left context at least.
    """

    def __init__(self, folder: Path, max_tokens: int = 512, *, context_tokens: int = 64) -> None:
        self.lm = _LanguageModel(folder, masked=False, max_tokens=max_tokens)
        self.context_tokens = min(context_tokens, self.lm.max_tokens // 2)
        self.start_id = _document_start(self.lm.tokenizer)
        if self.lm.max_tokens < 8:
            raise BackendError(f"{folder}: a window of {self.lm.max_tokens} tokens is too short")

    def score(
        self, texts: Sequence[str], batch_size: int = 8, *, contexts: Sequence[str] | None = None
    ) -> list[list[WordProbability]]:
        """The probability of each text's candidate words given what precedes them: the
        end of ``contexts[i]`` (if given), then the text's earlier tokens."""
        encoded = _encode_in_context(
            self.lm, texts, contexts=contexts, max_context_tokens=self.context_tokens
        )
        rows = [
            row
            for i, text in enumerate(encoded)
            for row in self._windows(i, text.ids, needed={t for w in text.tokens for t in w})
            if row.targets  # nothing to judge there: no forward pass
        ]
        log_probs: list[dict[int, float]] = [{} for _ in texts]
        for row, token, value in self.lm.target_log_probs(rows, batch_size):
            log_probs[row.text][token] = value
        return [
            [
                WordProbability(start, end, math.exp(sum(log_probs[i][t] for t in tokens)))
                for (start, end), tokens in zip(text.words, text.tokens, strict=True)
            ]
            for i, text in enumerate(encoded)
        ]

    def _windows(self, text: int, ids: list[int], *, needed: set[int]) -> list[_Row]:
        """The text's windows, each scoring the ``needed`` tokens (those of candidate words)
        it is the first to reach."""
        width = self.lm.max_tokens - 1  # the start token comes first
        context = width // 4
        rows, begin, scored_from = [], 0, 0
        while True:
            end = min(len(ids), begin + width)
            # logits at row position k (0: the start token) predict token begin + k, so the
            # row stops before its last target: what follows changes nothing before it
            targets = [(t - begin, t, ids[t]) for t in range(scored_from, end) if t in needed]
            last = targets[-1][1] if targets else begin
            rows.append(_Row(text, [self.start_id, *ids[begin:last]], targets))
            if end == len(ids):
                return rows
            begin, scored_from = end - context, end


def _document_start(tokenizer: Any) -> int:
    """The token a text starts after: GPT-style pretraining's document separator where the
    vocabulary has one (SmolLM2's ``bos`` is a chat token, which makes a text's first words
    look far less likely), else the tokenizer's ``bos``, else its ``eos``."""
    separator = tokenizer.convert_tokens_to_ids(DOCUMENT_SEPARATOR)
    if separator is not None and separator != tokenizer.unk_token_id:
        return int(separator)
    if tokenizer.unk_token == DOCUMENT_SEPARATOR:
        return int(tokenizer.unk_token_id)
    start = tokenizer.bos_token_id
    return int(start if start is not None else tokenizer.eos_token_id or 0)


class MaskedWordScorer:
    """Word probabilities from a masked LM: all of a word's sub-tokens masked at once, each
    original sub-token's probability read at its place, context on both sides.

    One row a word: the word centred in a window of ``max_tokens`` (special tokens included);
    a word longer than the window is scored on the sub-tokens that fit.
    """

    def __init__(self, folder: Path, max_tokens: int = 512, *, context_tokens: int = 64) -> None:
        self.lm = _LanguageModel(folder, masked=True, max_tokens=max_tokens)
        self.context_tokens = min(context_tokens, self.lm.max_tokens // 2)
        tokenizer = self.lm.tokenizer
        if tokenizer.mask_token_id is None:
            raise BackendError(f"{folder}: the tokenizer has no mask token (not a masked LM)")
        self.mask_id = int(tokenizer.mask_token_id)
        self.prefix = [] if tokenizer.cls_token_id is None else [int(tokenizer.cls_token_id)]
        self.suffix = [] if tokenizer.sep_token_id is None else [int(tokenizer.sep_token_id)]
        if self.lm.max_tokens - len(self.prefix) - len(self.suffix) < 4:
            raise BackendError(f"{folder}: a window of {self.lm.max_tokens} tokens is too short")

    def score(
        self, texts: Sequence[str], batch_size: int = 8, *, contexts: Sequence[str] | None = None
    ) -> list[list[WordProbability]]:
        """The probability of each text's candidate words given both sides: the text, after
        the end of ``contexts[i]`` (if given)."""
        encoded = _encode_in_context(
            self.lm, texts, contexts=contexts, max_context_tokens=self.context_tokens
        )
        rows = [
            self._row(i, w, ids=text.ids, tokens=tokens)
            for i, text in enumerate(encoded)
            for w, tokens in enumerate(text.tokens)
        ]
        sums: list[list[float]] = [[0.0] * len(text.words) for text in encoded]
        for row, _token, value in self.lm.target_log_probs(rows, batch_size):
            sums[row.text][row.word] += value
        return [
            [
                WordProbability(start, end, math.exp(total))
                for (start, end), total in zip(text.words, sums[i], strict=True)
            ]
            for i, text in enumerate(encoded)
        ]

    def _row(self, text: int, word: int, *, ids: list[int], tokens: list[int]) -> _Row:
        width = self.lm.max_tokens - len(self.prefix) - len(self.suffix)
        first, last = tokens[0], tokens[-1] + 1
        begin = max(0, min(first - (width - (last - first)) // 2, len(ids) - width))
        begin = min(begin, first)  # a word longer than the window starts it
        end = min(len(ids), begin + width)
        masked = set(tokens)
        window = [self.mask_id if t in masked else ids[t] for t in range(begin, end)]
        shift = len(self.prefix) - begin
        targets = [(t + shift, t, ids[t]) for t in tokens if t < end]
        return _Row(text, [*self.prefix, *window, *self.suffix], targets, word)


def load_scorer(
    folder: Path, masked: bool, *, max_tokens: int, context_tokens: int = 64
) -> WordProbabilityScorer:
    """The masked or causal scorer on the model in ``folder``."""
    scorer = MaskedWordScorer if masked else CausalWordScorer
    return scorer(folder, max_tokens, context_tokens=context_tokens)
