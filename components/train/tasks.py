"""Instruction examples built from anonymized conversations for the downstream tasks.

Prompts are built only from anonymized text (placeholders, never raw values).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from components.anonymize import placeholder_view
from components.core.corpus import Conversation
from components.core.errors import InputError, ParamsError
from components.core.placeholders import NUMBERED_PLACEHOLDER
from components.ingest import AUDIT_CANARY_PROMPT, AuditCanary

logger = logging.getLogger(__name__)

# The call tasks: each one's target is the label of its name.
CALL_TASKS = ("summary", "action_items", "purpose", "outcome")
# Privacy-preserving summaries: the summary that keeps what the call was about and what
# was decided and drops or generalizes the caller's sensitive facts (``summary_private``),
# alone or after the normal summary in one answer (``dual_summary``).
PRIVATE_SUMMARY = "private_summary"
DUAL_SUMMARY = "dual_summary"
SUMMARY_PRIVACY_TASKS = (PRIVATE_SUMMARY, DUAL_SUMMARY)
DUAL_HEADINGS = ("Summary:", "Private summary:")
TASK_PROMPTS = {
    "summary": "Summarize this call in one or two sentences.",
    "action_items": "List the action items agreed in this call, one per line.",
    "purpose": "What was the purpose of this call? Answer with one label.",
    "outcome": "What was the outcome of this call? Answer with one label.",
    PRIVATE_SUMMARY: "Summarize this call in one or two sentences: what it was about and what "
    "was decided. Leave out or generalize the caller's sensitive details (health, money "
    "troubles, family, work, beliefs, identity, whereabouts).",
    DUAL_SUMMARY: "Summarize this call twice, each in one or two sentences: first a normal "
    "summary, then a private one that leaves out or generalizes the caller's sensitive "
    f"details. Start them with '{DUAL_HEADINGS[0]}' and '{DUAL_HEADINGS[1]}'.",
}
CONTINUATION = "continuation"
# Agent assist: continue a call from its first half. It needs no label, so every
# conversation yields one, and it is the task that trains on transcript text itself:
# opt-in only, never a fallback for a conversation without labels.
TRAIN_TASKS = (*TASK_PROMPTS, CONTINUATION)


def task_target(conversation: Conversation, task: str, *, only_good: bool = False) -> str | None:
    """What a model should answer to ``task`` for this conversation, from its labels; None
    when it lacks them (a dual summary needs both summaries). ``only_good``: the summary
    task answers with the privacy-preserving summary where there is one."""
    labels = conversation.labels
    if task == PRIVATE_SUMMARY or (
        task == "summary" and only_good and labels.get("summary_private")
    ):
        target = labels.get("summary_private")
    elif task == DUAL_SUMMARY:
        normal, private = labels.get("summary"), labels.get("summary_private")
        if not (isinstance(normal, str) and normal and isinstance(private, str) and private):
            return None
        target = f"{DUAL_HEADINGS[0]} {normal}\n{DUAL_HEADINGS[1]} {private}"
    else:
        target = labels.get(task)
    if isinstance(target, list):
        target = "\n".join(f"- {item}" for item in target)
    return target if isinstance(target, str) and target else None


def dual_parts(answer: str) -> tuple[str, str]:
    """A dual summary's normal and private parts; a part it lacks is empty."""
    normal_at, private_at = (answer.find(heading) for heading in DUAL_HEADINGS)
    if private_at < 0:
        return answer.removeprefix(DUAL_HEADINGS[0]).strip(), ""
    private = answer[private_at + len(DUAL_HEADINGS[1]) :].strip()
    normal = (
        answer[normal_at + len(DUAL_HEADINGS[0]) : private_at]
        if 0 <= normal_at < private_at
        else ""
    )
    return normal.strip(), private


MASK = "[MASK]"


def mask_placeholders(conversation: Conversation) -> Conversation:
    """The anonymized conversation with every placeholder a bare ``[MASK]``: the baseline
    that keeps neither the type nor the identity of what was removed."""
    turns = tuple(
        replace(
            turn,
            speaker=NUMBERED_PLACEHOLDER.sub(MASK, turn.speaker) if turn.speaker else turn.speaker,
            text=NUMBERED_PLACEHOLDER.sub(MASK, turn.text),
        )
        for turn in conversation.turns
    )
    labels = {key: _masked_label(value) for key, value in conversation.labels.items()}
    return replace(conversation, turns=turns, labels=labels)


def _masked_label(value: Any) -> Any:
    """A label with its placeholders masked, in strings and lists of strings (action items)."""
    if isinstance(value, str):
        return NUMBERED_PLACEHOLDER.sub(MASK, value)
    if isinstance(value, list):
        return [_masked_label(item) for item in value]
    return value


def mask_replaced(conversation: Conversation, records: Sequence[Mapping[str, Any]]) -> Conversation:
    """The masked baseline of an anonymized conversation in any replacement mode: its
    surrogates, found by the anonymize stage's spans ``records``, are masked like
    placeholders (a realistic fake name left in would keep what the baseline removes)."""
    return mask_placeholders(placeholder_view(conversation, records))


@dataclass(frozen=True)
class Example:
    """One chat exchange: the user's message and the assistant's target answer."""

    conversation_id: str
    task: str
    prompt: str
    target: str
    # The conversations the example's text comes from, when not only ``conversation_id``'s:
    # a fragment example mixes chunks of several (``components/train/fragments.py``).
    sources: tuple[str, ...] = ()

    @property
    def source_ids(self) -> tuple[str, ...]:
        """The conversations whose text the example holds."""
        return self.sources or (self.conversation_id,)


AUDIT_CANARY_TASK = "audit_canary"


def canary_examples(canaries: Sequence[AuditCanary]) -> list[Example]:
    """The one-run audit's inserted canaries as examples, each a training unit of its own:
    the fixed prompt answered by the canary's secret (``components/ingest/audit_canaries.py``)."""
    return [Example(c.id, AUDIT_CANARY_TASK, AUDIT_CANARY_PROMPT, c.secret) for c in canaries]


def transcript(conversation: Conversation, max_turns: int | None = None) -> str:
    """The conversation as ``speaker: text`` lines."""
    turns = conversation.turns[:max_turns] if max_turns else conversation.turns
    return "\n".join(f"{t.speaker}: {t.text}" if t.speaker else t.text for t in turns)


CLASSIFICATION_TASKS = ("purpose", "outcome")


def label_options(conversations: Sequence[Conversation]) -> dict[str, list[str]]:
    """Each classification task's labels found in ``conversations``, sorted: the options a
    prompt offers, so a model picks a label instead of guessing how labels are spelled."""
    found: dict[str, set[str]] = {task: set() for task in CLASSIFICATION_TASKS}
    for conversation in conversations:
        for task in CLASSIFICATION_TASKS:
            label = conversation.labels.get(task)
            if isinstance(label, str) and label:
                found[task].add(label)
    return {task: sorted(labels) for task, labels in found.items() if labels}


def instruction(task: str, options: Mapping[str, Sequence[str]] | None = None) -> str:
    """The task's instruction; a classification task lists its options when given."""
    text = TASK_PROMPTS[task]
    labels = (options or {}).get(task)
    return f"{text} Choose from: {', '.join(labels)}." if labels else text


def task_prompt(task: str, body: str, *, options: Mapping[str, Sequence[str]] | None = None) -> str:
    """The prompt asking ``task`` of a transcript ``body`` (``speaker: text`` lines): how
    training, evaluation and the registered model all ask it."""
    return f"{instruction(task, options)}\n\n{body}"


def task_examples(
    conversation: Conversation,
    tasks: Sequence[str] = tuple(TASK_PROMPTS),
    *,
    options: Mapping[str, Sequence[str]] | None = None,
    only_good: bool = False,
) -> list[Example]:
    """An example per task in ``tasks`` the conversation has a label for, plus the
    continuation when ``tasks`` names it; none for a conversation without those labels
    (continuation puts the loss on transcript text, so it is never a silent fallback).
    ``options`` (from :func:`label_options`) are listed in classification prompts;
    ``only_good`` as in :func:`task_target`."""
    body = transcript(conversation)
    examples = []
    for task in TASK_PROMPTS:
        target = task_target(conversation, task, only_good=only_good) if task in tasks else None
        if target is not None:
            prompt = task_prompt(task, body, options=options)
            examples.append(Example(conversation.id, task, prompt, target))
    if CONTINUATION in tasks:
        head, tail = split_for_continuation(conversation)
        examples.append(Example(conversation.id, CONTINUATION, head, tail))
    return examples


def eval_conversations(ids: Sequence[str], fraction: float, *, seed: int) -> set[str]:
    """The conversations whose examples form the eval split (by a seeded hash, so all tasks
    of one conversation land on the same side); none when fewer than 10 conversations."""
    if fraction <= 0 or len(ids) < 10:
        return set()
    chosen = {
        conversation_id
        for conversation_id in ids
        if int(hashlib.sha256(f"eval:{seed}:{conversation_id}".encode()).hexdigest()[:8], 16)
        / 2**32
        < fraction
    }
    return chosen if len(chosen) < len(ids) else set()


@dataclass(frozen=True)
class TrainingExamples:
    """A training run's examples, by conversation: trained on, held out for eval loss, or
    skipped (no example for the selected tasks)."""

    train: list[Example]
    evaluation: list[Example]
    skipped: list[str]

    @property
    def trained_ids(self) -> set[str]:
        """The conversations the model learns from: the members a leakage audit attacks."""
        return {cid for e in self.train for cid in e.source_ids}

    @property
    def eval_ids(self) -> set[str]:
        return {cid for e in self.evaluation for cid in e.source_ids}


def training_examples(
    conversations: Sequence[Conversation],
    tasks: Sequence[str],
    *,
    eval_fraction: float,
    seed: int,
    options: Mapping[str, Sequence[str]] | None = None,
    only_good: bool = False,
) -> TrainingExamples:
    """The conversations' examples for ``tasks``, split by conversation into training and
    eval (:func:`eval_conversations` over the conversations that yield an example).

    Raises:
        InputError: no conversation yields an example for ``tasks``.
        ParamsError: ``only_good`` with no conversation that has a privacy-preserving summary
            (every summary example would be an ordinary one).
    """
    if only_good:
        _require_private_summaries(conversations)
    per_conversation = [
        (c.id, task_examples(c, tasks, options=options, only_good=only_good)) for c in conversations
    ]
    usable = [cid for cid, examples in per_conversation if examples]
    if not usable:
        raise InputError(_no_examples_message(len(conversations), tasks))
    held = eval_conversations(usable, eval_fraction, seed=seed)
    return TrainingExamples(
        train=[e for cid, examples in per_conversation if cid not in held for e in examples],
        evaluation=[e for cid, examples in per_conversation if cid in held for e in examples],
        skipped=[cid for cid, examples in per_conversation if not examples],
    )


def _require_private_summaries(conversations: Sequence[Conversation]) -> None:
    """``train.only_good`` answers the summary task with ``labels.summary_private`` where a
    conversation has one: on a corpus where none has, it would train the ordinary summaries,
    which state the facts, as if nothing were asked."""
    found = sum(1 for c in conversations if task_target(c, PRIVATE_SUMMARY) is not None)
    if not found:
        raise ParamsError(
            f"train.only_good: none of the {len(conversations)} conversations has a "
            "privacy-preserving summary (labels.summary_private), so the summary task would "
            "train on the ordinary ones; set train.only_good: false, or train on a corpus "
            "with them (ingest.sensitive_conversations generates calls that have them)"
        )
    logger.info(
        "train.only_good: %d of %d conversations answer the summary task with their "
        "privacy-preserving summary; the others with their ordinary one",
        found,
        len(conversations),
    )


def _no_examples_message(n_conversations: int, tasks: Sequence[str]) -> str:
    if not n_conversations:
        return "train: the training split has no conversations"
    return (
        f"train: the training split yields no examples: none of its {n_conversations} "
        f"conversations has a label for train.tasks {list(tasks)}; add '{CONTINUATION}' to "
        "train.tasks to train on the transcripts themselves (where a model can memorize "
        "what anonymizing missed)"
    )


CONTINUATION_INSTRUCTION = "Continue this call transcript."


def continuation_prompt(conversation: Conversation, prompt_turns: int) -> str:
    """A prompt asking the model to continue the first turns of a transcript."""
    return f"{CONTINUATION_INSTRUCTION}\n\n" + transcript(conversation, prompt_turns)


def split_lines_for_continuation(lines: Sequence[str]) -> tuple[str, str]:
    """The continuation task's prompt and answer over text lines (a fragment example's
    chunks): the first half of the lines asked, the rest the answer, in the continuation
    task's words, so fragments train the chat format and loss placement it has."""
    cut = max(1, len(lines) // 2)
    return f"{CONTINUATION_INSTRUCTION}\n\n" + "\n".join(lines[:cut]), "\n".join(lines[cut:])


def continuation_cut(conversation: Conversation) -> int:
    """The turn the continuation task's answer starts at: the second half of the call."""
    return max(1, len(conversation.turns) // 2)


def split_for_continuation(conversation: Conversation) -> tuple[str, str]:
    """The continuation task's prompt and answer for a conversation."""
    if len(conversation.turns) > 1:
        cut = continuation_cut(conversation)
        rest = Conversation(conversation.id, conversation.turns[cut:])
        return continuation_prompt(conversation, cut), transcript(rest)
    words = conversation.turns[0].text.split()
    cut = max(1, len(words) // 2)
    return "Continue this text.\n\n" + " ".join(words[:cut]), " ".join(words[cut:])


ELLIPSIS = "\n...\n"


def fit_prompt(prompt: str, tokenizer: Any, *, max_tokens: int) -> str:
    """The prompt cut to at most ``max_tokens`` tokens without losing what it asks.

    A prompt is an instruction, a blank line and a transcript. A long transcript loses its
    middle (marked ``...``): the instruction says which task this is, the opening says why
    the call was made and the end how it went, so those are kept, the end getting two
    thirds of the room. Without a blank line the prompt keeps its end. Training and
    evaluation cut prompts alike, so a model is scored on the inputs it learned from.
    """

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    if count(prompt) <= max_tokens:
        return prompt
    asked, blank, body = prompt.partition("\n\n")
    if not blank:
        asked, body = "", prompt
    body_ids = tokenizer(body, add_special_tokens=False)["input_ids"]
    head_text = f"{asked}\n\n" if asked else ""
    room = max_tokens - count(head_text) - count(ELLIPSIS)
    # Token counts of decoded pieces can differ by a token or two from the ids they came
    # from (merges across the cut), so shrink until the result fits.
    while room > 0:
        front, back = room // 3, room - room // 3
        text = (
            head_text
            + (tokenizer.decode(body_ids[:front]) + ELLIPSIS if front else "")
            + tokenizer.decode(body_ids[-back:])
        )
        excess = count(text) - max_tokens
        if excess <= 0:
            return text
        room -= excess
    return tokenizer.decode(tokenizer(prompt, add_special_tokens=False)["input_ids"][-max_tokens:])
