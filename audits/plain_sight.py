"""Hiding in plain sight: can an attacker tell the real names anonymization missed from the
name-like words around them?

Realistic surrogates (``anonymize.replacement: surrogate``) are meant to hide a real name the
detector missed among fake ones; with placeholders, that name is often the only name-like
word left. For each training conversation that still holds a real name word in clear (the
attacker-side ground truth: the raw corpus's gold PERSON_NAME spans), the attacker ranks
the name-like words of its anonymized transcript by how real they look. The figure is the
ROC AUC of the real words (positives) against every other name-like word (surrogates and
ordinary capitalized words): 0.5, the real names hide; 1.0, every one stands out. Two
scores, their direction fixed before looking at the data:

- ``rarity``: in fewer conversations of the whole anonymized training corpus = more real;
- ``lm``: the base model's mean loss on the word's tokens, in its transcript = more real.

Both run on the corpus as anonymized and on its placeholder view (surrogates back to their
placeholders), side by side. The audit reports figures; it never fails the run.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audits.lm import text_token_losses
from audits.membership import roc_auc
from audits.protocol import Audit, AuditContext
from audits.result import AuditResult
from components.core.corpus import Conversation, base_info_type
from components.core.lexicon import SENTENCE_START, known_names, zipf
from components.core.progress import counted
from components.train import load_base, transcript

NAME = "plain_sight"
# Alphabetic words of 3+ letters, none inside a placeholder ("[PERSON_NAME_1]").
_WORD = re.compile(r"(?<![\w\[])[^\W\d_]{3,}(?![\w\]])")
# A name list's word counts only if it is rare as an English word ("adams", not "will"):
# the risk estimate's threshold for a known name in lowercase.
KNOWN_NAME_MAX_ZIPF = 4.5
NOT_COMPUTED = "no training conversation keeps a real name word in clear"


@dataclass(frozen=True)
class Candidate:
    """A name-like word of one transcript: where it is, and whether it is a real name word."""

    start: int
    end: int
    word: str  # lowercase
    real: bool


# Scores each candidate of one transcript (higher: looks more real); None: cannot score it.
WordScorer = Callable[[str, Sequence[Candidate]], list[float | None]]


def real_name_words(conversation: Conversation) -> frozenset[str]:
    """Lowercase words of the raw conversation's gold PERSON_NAME spans."""
    words: set[str] = set()
    for span in conversation.pi:
        if base_info_type(span.entity_type) != "PERSON_NAME":
            continue
        turn = conversation.turns[span.turn]
        source = turn.text if span.field == "text" else turn.speaker or ""
        words.update(word.lower() for word in _WORD.findall(source[span.start : span.end]))
    return frozenset(words)


def name_like_words(text: str, real: frozenset[str]) -> list[Candidate]:
    """The words of ``text`` an attacker would suspect: capitalized and not the first of a
    sentence, or rare words a first- or last-name list holds; ``real`` marks the real ones."""
    return [
        Candidate(match.start(), match.end(), match.group().lower(), match.group().lower() in real)
        for match in _WORD.finditer(text)
        if _name_like(text, match.start(), word=match.group())
    ]


def _name_like(text: str, start: int, *, word: str) -> bool:
    low = word.lower()
    if low in known_names() and zipf(low) < KNOWN_NAME_MAX_ZIPF:
        return True
    return word[0].isupper() and not SENTENCE_START.search(text[max(0, start - 4) : start])


def corpus_frequency(texts: Iterable[str]) -> Counter[str]:
    """In how many of ``texts`` each lowercase word occurs."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({match.group().lower() for match in _WORD.finditer(text)})
    return counts


def rarity_scorer(frequency: Counter[str]) -> WordScorer:
    """Minus the number of corpus texts a word occurs in: rarer looks more real."""

    def score(text: str, candidates: Sequence[Candidate]) -> list[float | None]:
        return [-float(frequency[c.word]) for c in candidates]

    return score


def lm_scorer(model: Any, tokenizer: Any, *, max_tokens: int) -> WordScorer:
    """The LM's mean loss on a word's tokens in its transcript (one forward pass over the
    transcript's first ``max_tokens`` tokens): less likely looks more real; a word beyond
    them is not scored."""

    def score(text: str, candidates: Sequence[Candidate]) -> list[float | None]:
        losses = text_token_losses(model, tokenizer, text=text, max_tokens=max_tokens)
        return [losses.mean([(c.start, c.end)]) for c in candidates]

    return score


def view_figures(
    texts: Sequence[str], real: Sequence[frozenset[str]], *, scorers: Mapping[str, WordScorer]
) -> dict[str, Any]:
    """The attack on one view of the chosen transcripts: counts, the share of transcripts
    whose name-like words are all real (found without scoring), and each scorer's AUC of
    real words against the others (None without both)."""
    scored: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in scorers}
    n_words = n_real = real_only = 0
    for text, words in zip(
        counted(texts, "audit plain_sight", unit="conversations"), real, strict=True
    ):
        candidates = name_like_words(text, words)
        n_words += len(candidates)
        n_real += sum(c.real for c in candidates)
        real_only += all(c.real for c in candidates)
        for name, scorer in scorers.items():
            for candidate, value in zip(candidates, scorer(text, candidates), strict=True):
                if value is not None:
                    scored[name][0 if candidate.real else 1].append(value)
    figures: dict[str, Any] = {
        "n_conversations": len(texts),
        "n_words": n_words,
        "n_real_words": n_real,
        "real_only_share": round(real_only / len(texts), 4) if texts else None,
    }
    for name, (positives, negatives) in scored.items():
        auc = roc_auc(positives, negatives) if positives and negatives else None
        figures[f"{name}_auc"] = None if auc is None else round(auc, 4)
        figures[f"n_{name}_scored"] = len(positives) + len(negatives)
    return figures


def audit_plain_sight(
    model: Any,
    tokenizer: Any,
    *,
    raw: Sequence[Conversation],
    views: Mapping[str, Sequence[Conversation]],
    max_conversations: int,
    max_tokens: int,
) -> AuditResult:
    """Both attacks on each view (name → the training conversations as that view reads
    them, in ``raw``'s order; the first view chooses the conversations), on at most
    ``max_conversations`` conversations that keep a real name word in the first view.

    Args:
        model, tokenizer: the base LM the ``lm`` score asks.
    """
    real = [real_name_words(c) for c in raw]
    texts = {name: [transcript(c) for c in conversations] for name, conversations in views.items()}
    first = texts[next(iter(texts))]
    chosen = [
        i for i, text in enumerate(first) if any(c.real for c in name_like_words(text, real[i]))
    ]
    if not chosen:
        return AuditResult(NAME, True, {"n_with_residual": 0, "not_computed": NOT_COMPUTED})
    lm = lm_scorer(model, tokenizer, max_tokens=max_tokens)
    kept = chosen[:max_conversations]
    figures: dict[str, Any] = {"n_with_residual": len(chosen)}
    for name, view in texts.items():
        scorers = {"rarity": rarity_scorer(corpus_frequency(view)), "lm": lm}
        figures[name] = view_figures(
            [view[i] for i in kept], [real[i] for i in kept], scorers=scorers
        )
    return AuditResult(NAME, True, figures)


class PlainSightAudit(Audit):
    """Attacks the anonymized training data with the public base model; never fails."""

    name = NAME
    needs = ("train_anonymized",)

    def run(self, context: AuditContext) -> AuditResult:
        inputs = context.inputs
        base, base_tokenizer = load_base(inputs.base_model)
        views = {
            "anonymized": inputs.train_anonymized,
            "placeholders": inputs.train_placeholder_view,
        }
        return audit_plain_sight(
            base,
            base_tokenizer,
            raw=inputs.train_raw,
            views=views,
            max_conversations=context.settings.plain_sight_conversations,
            max_tokens=context.settings.max_prompt_tokens,
        )
