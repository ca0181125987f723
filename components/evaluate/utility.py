"""Utility of a fine-tuned model: what anonymizing the training data cost in usefulness.

Generative tasks (summary, action items) score ROUGE-1/2/L F1 against the references;
classification tasks (purpose, outcome) score accuracy and macro-F1 over the label set;
the privacy-preserving summaries (private_summary, dual_summary) the judge's Privacy,
Completeness and acceptable rate, overall and per setting (``private_summary.py``);
perplexity is measured on held-out **raw** transcripts, because what matters is how well
the model serves real conversations, names and numbers included. Each dataset of the corpus
(the main one, DialogSum) is scored apart.
How one answer scores (ROUGE, the label it names): ``answer_scores.py``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from components.core.corpus import Conversation
from components.core.progress import counted
from components.evaluate.answer_scores import (
    classification,
    predicted_label,
    rouge_means,
    rouge_scores,
)
from components.evaluate.judge import SummaryJudge
from components.evaluate.private_summary import private_summary_scores
from components.ingest import MAIN
from components.train import (
    CLASSIFICATION_TASKS,
    DUAL_SUMMARY,
    SUMMARY_PRIVACY_TASKS,
    Example,
    fit_prompt,
    generate,
    task_examples,
    transcript,
)

logger = logging.getLogger(__name__)

GENERATIVE_TASKS = ("summary", "action_items")


@dataclass(frozen=True)
class ConversationScores:
    """One held-out conversation's scores: each generative task's ROUGE F1s and each
    classification task's 0/1 correctness (``<task>.accuracy``, whose mean is the accuracy),
    and its summed next-token loss and token count, from which the perplexity of any set
    of conversations (a bootstrap resample) is recomputed. Numbers only, never text."""

    scores: dict[str, float]
    loss_sum: float
    n_tokens: int


@dataclass(frozen=True)
class UtilityResult:
    metrics: dict[str, float]
    n_examples: dict[str, int]
    per_conversation: dict[str, ConversationScores]

    def to_metrics(self) -> dict[str, Any]:
        return {**{k: round(v, 4) for k, v in self.metrics.items()}, "n_examples": self.n_examples}


def _examples_by_task(
    heldout: Sequence[Conversation],
    label_sets: Mapping[str, Sequence[str]],
    *,
    tasks: Collection[str] | None,
) -> dict[str, list[Example]]:
    """The held-out conversations' examples of each task scored: all (None) is the call
    tasks; the privacy-preserving summaries only when named."""
    examples: dict[str, list[Example]] = {
        task: []
        for task in (*GENERATIVE_TASKS, *CLASSIFICATION_TASKS, *SUMMARY_PRIVACY_TASKS)
        if (task not in SUMMARY_PRIVACY_TASKS if tasks is None else task in tasks)
    }
    for conversation in heldout:
        for example in task_examples(conversation, options=label_sets):
            if example.task in examples:
                examples[example.task].append(example)
    return examples


def evaluate_utility(
    model: Any,
    tokenizer: Any,
    *,
    heldout: Sequence[Conversation],
    label_sets: Mapping[str, Sequence[str]],
    max_new_tokens: int,
    max_prompt_tokens: int,
    batch_size: int = 8,
    progress: str = "evaluate",
    tasks: Collection[str] | None = None,
    judge: SummaryJudge | None = None,
) -> UtilityResult:
    """Task scores and perplexity on held-out raw conversations the model was not trained
    on (a deployed model serves real conversations, whatever it was trained on), in all and
    per conversation; a bar on stderr per task, named ``progress`` and the task. ``tasks``
    (default: the call tasks) are the tasks scored by generating; perplexity is always
    measured.
    ``judge`` scores the privacy-preserving summaries (default: the offline judge)."""
    examples = _examples_by_task(heldout, label_sets, tasks=tasks)
    metrics: dict[str, float] = {}
    scores: dict[str, dict[str, float]] = {c.id: {} for c in heldout}
    for task, items in examples.items():
        if not items:
            continue
        prompts = [fit_prompt(e.prompt, tokenizer, max_tokens=max_prompt_tokens) for e in items]
        outputs = generate(
            model,
            tokenizer,
            prompts=prompts,
            max_new_tokens=_token_budget(task, max_new_tokens),
            batch_size=batch_size,
            progress=f"{progress} {task}",
        )
        if task in SUMMARY_PRIVACY_TASKS:
            by_id = {c.id: c for c in heldout}
            overall, per_example = private_summary_scores(
                task, outputs, items=items, conversations=by_id, judge=judge
            )
        else:
            overall, per_example = _task_scores(task, outputs, items=items, label_sets=label_sets)
        metrics.update({f"{task}.{k}": v for k, v in overall.items()})
        for example, example_scores in zip(items, per_example, strict=True):
            scores[example.conversation_id].update(
                {f"{task}.{k}": v for k, v in example_scores.items()}
            )
    texts = [transcript(c) for c in heldout]
    sums = loss_sums(model, tokenizer, texts=texts, progress=f"{progress} perplexity")
    metrics["perplexity_raw"] = corpus_perplexity(sums)
    per_conversation = {
        c.id: ConversationScores(scores[c.id], loss, n)
        for c, (loss, n) in zip(heldout, sums, strict=True)
    }
    n_examples = {task: len(items) for task, items in examples.items()}
    return UtilityResult(metrics, n_examples, per_conversation)


def _token_budget(task: str, max_new_tokens: int) -> int:
    """A label needs a few tokens, a summary the whole budget, a dual summary twice that."""
    if task in CLASSIFICATION_TASKS:
        return min(12, max_new_tokens)
    return 2 * max_new_tokens if task == DUAL_SUMMARY else max_new_tokens


def _task_scores(
    task: str,
    outputs: Sequence[str],
    *,
    items: Sequence[Example],
    label_sets: Mapping[str, Sequence[str]],
) -> tuple[dict[str, float], list[dict[str, float]]]:
    """One task's scores over its examples, and each example's."""
    references = [e.target for e in items]
    if task in GENERATIVE_TASKS:
        pairs = [rouge_scores(o, r) for o, r in zip(outputs, references, strict=True)]
        return rouge_means(pairs), pairs
    labels = label_sets.get(task) or sorted(set(references))
    predicted = [predicted_label(o, labels) for o in outputs]
    correct = [{"accuracy": float(p == r)} for p, r in zip(predicted, references, strict=True)]
    return classification(predicted, references), correct


def evaluate_datasets(
    model: Any,
    tokenizer: Any,
    *,
    datasets: Mapping[str, Sequence[Conversation]],
    label_sets: Mapping[str, Sequence[str]],
    max_new_tokens: int,
    max_prompt_tokens: int,
    tasks: Collection[str] | None = None,
    judge: SummaryJudge | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:func:`evaluate_utility` on each dataset's held-out conversations apart: the main
    corpus's metrics keep their names (``summary.rouge1``), another dataset's carry its name
    (``dialogsum.summary.rouge1``, ``dialogsum.perplexity_raw``). Empty datasets are left out.

    Returns:
        The metrics, and a record per conversation: ``dataset``, ``id``, ``scores``
        (unprefixed keys), ``loss_sum`` and ``n_tokens``.
    """
    metrics: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for name, conversations in datasets.items():
        if not conversations:
            continue
        result = evaluate_utility(
            model,
            tokenizer,
            heldout=conversations,
            label_sets=label_sets,
            max_new_tokens=max_new_tokens,
            max_prompt_tokens=max_prompt_tokens,
            progress=name,
            tasks=tasks,
            judge=judge,
        )
        prefix = "" if name == MAIN else f"{name}."
        metrics.update({f"{prefix}{key}": value for key, value in result.to_metrics().items()})
        records += [
            {"dataset": name, "id": cid, **asdict(scores)}
            for cid, scores in result.per_conversation.items()
        ]
    return metrics, records


def evaluate_models(
    models: Mapping[str, Callable[[], tuple[Any, Any]]],
    datasets: Mapping[str, Sequence[Conversation]],
    *,
    label_sets: Mapping[str, Sequence[str]],
    max_new_tokens: int,
    max_prompt_tokens: int,
    tasks: Collection[str] | None = None,
    judge: SummaryJudge | None = None,
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """:func:`evaluate_datasets` for each model, loaded by its loader one at a time.

    Returns:
        Each model's metrics by its name, and every per-conversation record with a
        ``model`` key naming whose it is.
    """
    metrics: dict[str, dict[str, Any]] = {}
    records: list[dict[str, Any]] = []
    for number, (name, load) in enumerate(models.items(), start=1):
        logger.info("evaluating %s (model %d of %d)", name, number, len(models))
        model, tokenizer = load()
        metrics[name], scored = evaluate_datasets(
            model,
            tokenizer,
            datasets=datasets,
            label_sets=label_sets,
            max_new_tokens=max_new_tokens,
            max_prompt_tokens=max_prompt_tokens,
            tasks=tasks,
            judge=judge,
        )
        records += [{"model": name, **record} for record in scored]
        del model  # the next model loads without this one beside it
    return metrics, records


def loss_sums(
    model: Any,
    tokenizer: Any,
    *,
    texts: Sequence[str],
    max_length: int = 512,
    progress: str | None = None,
) -> list[tuple[float, int]]:
    """Each text's summed next-token loss and the number of tokens it is over (each text cut
    to max_length; ``(0.0, 0)`` for a text too short to predict anything); ``progress``
    names a bar on stderr counting the texts (none when None)."""
    import torch

    sums: list[tuple[float, int]] = []
    model.eval()
    with torch.no_grad():
        for text in counted(texts, progress or "", unit="texts", shown=bool(progress)):
            ids = tokenizer(text, return_tensors="pt", truncation=True, max_length=max_length).to(
                model.device
            )
            n = int(ids["input_ids"].shape[1]) - 1
            if n < 1:
                sums.append((0.0, 0))
                continue
            loss = model(**ids, labels=ids["input_ids"]).loss
            sums.append((float(loss) * n, n))
    return sums


def corpus_perplexity(sums: Iterable[tuple[float, int]]) -> float:
    """exp of the mean next-token loss over every token the sums cover."""
    pairs = list(sums)
    total_loss = sum(loss for loss, _ in pairs)
    total_tokens = sum(n for _, n in pairs)
    return math.exp(total_loss / total_tokens) if total_tokens else float("nan")


def perplexity(model: Any, tokenizer: Any, *, texts: Sequence[str], max_length: int = 512) -> float:
    """exp of the mean next-token loss over all tokens of ``texts`` (each cut to max_length)."""
    return corpus_perplexity(loss_sums(model, tokenizer, texts=texts, max_length=max_length))
