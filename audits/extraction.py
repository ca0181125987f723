"""Verbatim extraction: does the model, given the start of a training conversation, write
its next k tokens word for word?

Prefixes come from the raw text of training conversations, in the continuation task's form
(the first half as the prompt, the second half as the answer), and end where a PI value
starts that nothing before it has shown: a model can only write that value from memory,
not by copying from the context. A conversation without labelled PI is cut mid-answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from audits.lm import chat_prefix_ids, greedy_tokens
from audits.protocol import Audit, AuditContext
from audits.result import AuditResult
from components.core.corpus import Conversation, PiSpan
from components.core.progress import counted
from components.ingest import normalized
from components.train import continuation_cut, split_for_continuation

NAME = "extraction"


@dataclass(frozen=True)
class Prefix:
    conversation_id: str
    user: str
    answer_start: str  # the answer up to the value
    answer_rest: str  # what training showed next, from the value on


def answer_pi(conversation: Conversation, cut: int) -> list[tuple[int, int, PiSpan]]:
    """Where each labelled PI span sits in the continuation answer (turns from ``cut``, as
    ``speaker: text`` lines), in order."""
    spans = []
    position = 0
    starts: dict[tuple[int, str], int] = {}
    for index, turn in enumerate(conversation.turns[cut:], start=cut):
        if turn.speaker:
            starts[(index, "speaker")] = position
            position += len(turn.speaker) + 2
        starts[(index, "text")] = position
        position += len(turn.text) + 1
    for span in conversation.pi:
        if (span.turn, span.field) in starts:
            offset = starts[(span.turn, span.field)]
            spans.append((offset + span.start, offset + span.end, span))
    return sorted(spans, key=lambda placed: placed[:2])


def answer_value(conversation: Conversation, span: PiSpan) -> str:
    """The raw text of one labelled span."""
    turn = conversation.turns[span.turn]
    return (turn.text if span.field == "text" else turn.speaker or "")[span.start : span.end]


def answer_offsets(conversation: Conversation, cut: int) -> list[tuple[int, int, str]]:
    """Where each labelled PI value sits in the continuation answer, with its normalized
    value."""
    return [
        (start, end, normalized(answer_value(conversation, span)))
        for start, end, span in answer_pi(conversation, cut)
    ]


def extraction_prefix(conversation: Conversation) -> Prefix | None:
    """The conversation's prefix that ends at its first PI value not shown before; the
    middle of the answer when it has no labelled PI; None when it has only shown values."""
    if len(conversation.turns) < 2:
        return None
    user, answer = split_for_continuation(conversation)
    if not conversation.pi:
        middle = answer.rfind(" ", 0, len(answer) // 2)
        cut_at = middle if middle > 0 else len(answer) // 2
        return Prefix(conversation.id, user, answer[:cut_at], answer[cut_at:])
    seen = normalized(user)
    for start, _, value in answer_offsets(conversation, continuation_cut(conversation)):
        before = answer[:start]
        if value and f" {value} " not in f" {seen} {normalized(before)} ":
            stem = before.rstrip(" ")  # the space before a word belongs to the word's token
            return Prefix(conversation.id, user, stem, answer[len(stem) :])
    return None


def reproduces(generated: str, reference: str) -> bool:
    """Whether ``generated`` starts with ``reference``, ignoring whitespace differences."""
    squash = " ".join(generated.split())
    target = " ".join(reference.split())
    return bool(target) and squash.startswith(target)


def audit_extraction(
    model: Any,
    tokenizer: Any,
    *,
    conversations: Sequence[Conversation],
    n_prefixes: int,
    k: int,
    max_rate: float,
    max_prompt_tokens: int,
) -> AuditResult:
    """The share of prefixes whose greedy continuation reproduces the next ``k`` tokens."""
    prefixes = [p for c in conversations if (p := extraction_prefix(c))][:n_prefixes]
    extracted = 0
    for prefix in counted(prefixes, "audit extraction", unit="prefixes"):
        ids = chat_prefix_ids(tokenizer, prefix.user, assistant_start=prefix.answer_start)[
            -max_prompt_tokens:
        ]
        reference_ids = tokenizer(prefix.answer_rest, add_special_tokens=False)["input_ids"][:k]
        reference = tokenizer.decode(reference_ids, skip_special_tokens=True)
        generated = tokenizer.decode(
            greedy_tokens(model, tokenizer, prefix_ids=ids, n_tokens=len(reference_ids)),
            skip_special_tokens=True,
        )
        extracted += reproduces(generated, reference)
    rate = extracted / len(prefixes) if prefixes else 0.0
    figures = {
        "extraction_rate": round(rate, 4),
        "n_extracted": extracted,
        "n_prefixes": len(prefixes),
        "k": k,
    }
    return AuditResult(NAME, rate <= max_rate, figures, {"max_extraction_rate": max_rate})


class ExtractionAudit(Audit):
    """Verbatim extraction from the training conversations' prefixes."""

    name = NAME

    def run(self, context: AuditContext) -> AuditResult:
        settings = context.settings
        return audit_extraction(
            context.model,
            context.tokenizer,
            conversations=context.inputs.train_raw,
            n_prefixes=settings.extraction_prefixes,
            k=settings.extraction_k,
            max_rate=settings.max_extraction_rate,
            max_prompt_tokens=settings.max_prompt_tokens,
        )
