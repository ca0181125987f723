"""A tiny BERT token classifier built in the tests, whose every token's label is known.

Random-init BERT of one layer and width 16 whose attention and feed-forward outputs are
zeroed, and position and token-type embeddings too: each token's last hidden state is its
word embedding, normalized, whatever its context or position. Each word's embedding points
at its label and the classifier reads the label back, so the model labels ``alice`` B-PER
and ``##son`` I-PER wherever they are: a test knows the spans it must find, and that batching,
windows and padding leave them exactly as they are. Only ``maybe`` is unsure (two labels
close), for scores under 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

LABELS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# word -> label index; every other word of the vocabulary is O
NAMED = {
    "alice": 1,
    "bob": 1,
    "smith": 2,
    "jones": 2,
    "##son": 2,
    "boston": 3,
    "york": 4,
    "new": 3,
}
COMMON = [
    *("pay", "my", "bill", "the", "call", "at", "and", "in", "lives", "is", "hello", "to"),
    *("from", "went", "new", ".", ",", "!", "?", "maybe"),
    *"abcdefghijklmnopqrstuvwxyz0123456789",
]
HIDDEN = 16
SHARPNESS = 8.0  # classifier weight: the labelled token's probability close to 1


def vocabulary() -> list[str]:
    return [*SPECIAL, *NAMED, *[w for w in COMMON if w not in NAMED]]


def build_tiny_ner(
    folder: Path, labels: tuple[str, ...] = LABELS, *, max_positions: int = 24
) -> Path:
    """A token-classification folder (config.json, weights, tokenizer.json) at ``folder``."""
    from transformers import BertConfig, BertForTokenClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    words = vocabulary()
    # transformers 5's BertTokenizer is the fast (Rust) one, built from a WordPiece vocabulary
    tokenizer = BertTokenizer(vocab={word: i for i, word in enumerate(words)})
    config = BertConfig(
        vocab_size=len(words),
        hidden_size=HIDDEN,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    model = BertForTokenClassification(config).eval()
    _wire(model, words, n_labels=len(labels))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _wire(model: Any, words: list[str], *, n_labels: int) -> None:
    """Make each token's logits its own label's, whatever surrounds it."""
    bert = model.bert
    with torch.no_grad():
        for layer in bert.encoder.layer:
            for dense in (layer.attention.output.dense, layer.output.dense):
                dense.weight.zero_()
                dense.bias.zero_()
        bert.embeddings.position_embeddings.weight.zero_()
        bert.embeddings.token_type_embeddings.weight.zero_()
        embeddings = torch.zeros(len(words), HIDDEN)
        for row, word in enumerate(words):
            label = NAMED.get(word, 0) % n_labels
            embeddings[row, label] = 1.0
            embeddings[row, HIDDEN - 1 - label] = -1.0  # zero mean: layer norm keeps it
        maybe = words.index("maybe")
        embeddings[maybe] = 0.0
        embeddings[maybe, 1], embeddings[maybe, 0] = 1.0, 0.9  # B-PER, just ahead of O
        embeddings[maybe, HIDDEN - 1] = -1.9
        bert.embeddings.word_embeddings.weight.copy_(embeddings)
        classifier = model.classifier
        classifier.weight.zero_()
        classifier.bias.zero_()
        for label in range(n_labels):
            classifier.weight[label, label] = SHARPNESS
