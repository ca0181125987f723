"""How well one answer scores against its reference: ROUGE for the generative tasks, the
label an answer names and accuracy / macro-F1 for the classification tasks.

ROUGE is Google's ``rouge-score`` (the implementation the summarization literature reports):
its tokenizer (lowercase alphanumeric tokens) with Porter stemming, F-measure of n-gram
overlap for ROUGE-1/2 and of the longest common subsequence for ROUGE-L.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

ROUGE_KEYS = ("rouge1", "rouge2", "rougeL")


@functools.cache
def _rouge_scorer() -> Any:
    # Imported here: rouge_score pulls in nltk (seconds), which every other command can skip.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_KEYS), use_stemmer=True)


def rouge_scores(prediction: str, reference: str) -> dict[str, float]:
    """ROUGE-1/2/L F1 of one prediction against one reference (stemmed, rouge-score's)."""
    scores = _rouge_scorer().score(reference, prediction)
    return {key: float(scores[key].fmeasure) for key in ROUGE_KEYS}


def rouge(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean ROUGE-1/2/L F1 over pairs (0 for none)."""
    return rouge_means([rouge_scores(p, r) for p, r in zip(predictions, references, strict=True)])


def rouge_means(pairs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {
        key: sum(scores[key] for scores in pairs) / len(pairs) if pairs else 0.0
        for key in ROUGE_KEYS
    }


def predicted_label(output: str, labels: Iterable[str]) -> str:
    """The label an answer names: the first label (underscores as spaces too) it contains,
    longest first so "order_status" wins over "status"; the answer itself when none."""
    text = output.lower()
    for label in sorted(labels, key=len, reverse=True):
        if label.lower() in text or label.lower().replace("_", " ") in text:
            return label
    return output.strip()


def classification(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over the reference label set (scikit-learn's: a label never
    predicted scores F1 0; a predicted label outside the set counts only as a miss)."""
    if not references:
        return {"accuracy": 0.0, "macro_f1": 0.0}
    from sklearn.metrics import accuracy_score, f1_score

    labels = sorted(set(references))
    macro_f1 = f1_score(references, predictions, labels=labels, average="macro", zero_division=0)
    return {
        "accuracy": float(accuracy_score(references, predictions)),
        "macro_f1": float(macro_f1),
    }
