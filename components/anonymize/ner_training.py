"""Fine-tune a token classifier on labelled texts, for ``anonymize.ner.model``.

The labelled sets are the ones detection is evaluated on (``evaluation/datasets.py``): each
gold span becomes BIO labels of the tokens it covers, a ``NEUTRAL`` span (a title, a date, a
product in WNUT) is left out of the loss, and every other token is ``O``. Only the info types
a model of this kind should learn are its entities (``ENTITY_LABELS``: names, places,
organizations, street addresses); phone numbers, e-mail addresses and the other patterns stay
with the pattern recognizers, so their tokens are ``O``.

The encoder is fine-tuned through a LoRA adapter (``lora_rank``; 0 fine-tunes every
weight): its few weights, with the new classification head, are all that differs from the
base, so a model is shipped as its adapter beside a base that an installed package holds
(``ner/shipped.py``: veiltune's own NER). The result is a Hugging Face folder (the merged
weights, and the adapter in ``adapter/``) and ``onnx/model.onnx``, which
``anonymize.ner.model`` loads by path. Training is deterministic for a seed on one machine.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.anonymize.evaluation.datasets import NEUTRAL, LabelledText
from components.anonymize.ner.export import export_onnx
from components.anonymize.ner.labels import BEGIN, INSIDE, OUTSIDE
from components.core.errors import InputError

logger = logging.getLogger(__name__)

# Info type -> the model's entity label (the names ner_labels.yaml maps back)
ENTITY_LABELS = {
    "PERSON_NAME": "PER",
    "LOCATION": "LOC",
    "ORGANIZATION_NAME": "ORG",
    "STREET_ADDRESS": "ADDRESS",
}
IGNORED = -100  # a token the loss leaves out (PyTorch's cross-entropy ignore_index)
ONNX_FILE = Path("onnx/model.onnx")
ADAPTER_DIR = Path("adapter")
# LoRA on every linear layer of a BERT encoder (attention and feed-forward); the new head
# is trained whole
LORA_TARGETS = ("query", "key", "value", "dense")
# The generated conversations training reads (evaluation reads EMBEDDED_SEED's)
TRAIN_EMBEDDED_SEED = 7


@dataclass(frozen=True)
class TrainSettings:
    """How the classifier is fine-tuned (``veiltune train-ner``'s options)."""

    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 5e-4  # LoRA's; full fine-tuning wants about 1e-4
    max_tokens: int = 128
    warmup_share: float = 0.1
    seed: int = 13
    threads: int | None = None  # torch threads; None: torch's default
    lora_rank: int = 16  # 0: every weight is fine-tuned, no adapter


def bio_labels() -> tuple[str, ...]:
    """``O``, then ``B-`` and ``I-`` of each entity, in ``ENTITY_LABELS``'s order."""
    entities = dict.fromkeys(ENTITY_LABELS.values())
    return (OUTSIDE, *(f"{prefix}{e}" for e in entities for prefix in (BEGIN, INSIDE)))


def token_labels(
    item: LabelledText, offsets: Sequence[tuple[int, int]], *, labels: Sequence[str]
) -> list[int]:
    """The label index of each token (its character ``offsets``; special tokens are (0, 0)):
    ``B-`` for the first token of a gold span of a learned type, ``I-`` for the rest, ``O``
    outside, ``IGNORED`` for special tokens and tokens over a ``NEUTRAL`` span."""
    index = {label: i for i, label in enumerate(labels)}
    result = []
    for start, end in offsets:
        if start == end:
            result.append(IGNORED)
            continue
        span = next((s for s in item.gold if s.start < end and start < s.end), None)
        if span is None:
            result.append(index[OUTSIDE])
        elif span.entity_type == NEUTRAL:
            result.append(IGNORED)
        elif span.entity_type not in ENTITY_LABELS:
            result.append(index[OUTSIDE])
        else:
            prefix = BEGIN if start <= span.start else INSIDE
            result.append(index[prefix + ENTITY_LABELS[span.entity_type]])
    return result


def encode(
    texts: Sequence[LabelledText], tokenizer: Any, *, labels: Sequence[str], max_tokens: int
) -> list[dict[str, list[int]]]:
    """Each text tokenized (cut at ``max_tokens``) with its tokens' labels; empty texts and
    texts with nothing to learn (every token ignored) are left out."""
    examples = []
    for item in texts:
        if not item.text.strip():
            continue
        encoding = tokenizer(
            item.text, truncation=True, max_length=max_tokens, return_offsets_mapping=True
        )
        targets = token_labels(item, encoding["offset_mapping"], labels=labels)
        if all(t == IGNORED for t in targets):
            continue
        examples.append(
            {
                "input_ids": encoding["input_ids"],
                "attention_mask": encoding["attention_mask"],
                "labels": targets,
            }
        )
    return examples


def fine_tune(
    base: Path,
    texts: Sequence[LabelledText],
    *,
    output: Path,
    settings: TrainSettings,
) -> dict[str, float]:
    """Fine-tune the encoder in the Hugging Face folder ``base`` on ``texts`` into a token
    classifier saved at ``output``, with its ONNX beside it; returns the training
    figures (examples, steps, the last epoch's mean loss, seconds)."""
    import time

    import torch

    if settings.threads:
        torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    labels = bio_labels()
    tokenizer, model = _load(base, labels)
    examples = encode(texts, tokenizer, labels=labels, max_tokens=settings.max_tokens)
    if not examples:
        raise InputError("no labelled text to train on")
    if settings.lora_rank:
        model = with_lora(model, settings.lora_rank)
    began = time.monotonic()
    steps, last_loss = _train(
        model, examples, pad_id=tokenizer.pad_token_id or 0, settings=settings
    )
    output.mkdir(parents=True, exist_ok=True)
    if settings.lora_rank:
        model.save_pretrained(output / ADAPTER_DIR)
        model = model.merge_and_unload()
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    export_onnx(model, output / ONNX_FILE)
    return {
        "examples": len(examples),
        "steps": steps,
        "last_epoch_loss": round(last_loss, 4),
        "seconds": round(time.monotonic() - began, 1),
    }


def _load(base: Path, labels: Sequence[str]) -> tuple[Any, Any]:
    """The tokenizer of ``base`` and its encoder with a new head of ``labels``."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
        model = AutoModelForTokenClassification.from_pretrained(
            base,
            local_files_only=True,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
            # a token classifier of other labels gets a new head
            ignore_mismatched_sizes=True,
        )
    except (OSError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"--base {base}: not a model folder to fine-tune: {reason}") from exc
    return tokenizer, model


def _train(
    model: Any, examples: Sequence[dict[str, list[int]]], *, pad_id: int, settings: TrainSettings
) -> tuple[int, float]:
    """AdamW with a linear warm-up and decay over every epoch; returns the steps taken and
    the last epoch's mean loss. The model is left in eval mode."""
    import torch

    total = math.ceil(len(examples) / settings.batch_size) * settings.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    warmup = max(1, int(total * settings.warmup_share))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: min((step + 1) / warmup, max(0.0, (total - step) / (total - warmup))),
    )
    rng = random.Random(settings.seed)
    model.train()
    epoch_loss = 0.0
    for epoch in range(settings.epochs):
        batches = _batches(examples, settings.batch_size, rng=rng)
        epoch_loss = 0.0
        for step, batch in enumerate(batches):
            inputs = _pad([examples[i] for i in batch], pad_id)
            loss = model(**{k: torch.tensor(v) for k, v in inputs.items()}).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            epoch_loss += loss.item()
            if step % 100 == 0:
                logger.info(
                    "epoch %d step %d/%d loss %.4f", epoch + 1, step, len(batches), loss.item()
                )
        epoch_loss /= len(batches)
        logger.info("epoch %d: mean loss %.4f", epoch + 1, epoch_loss)
    model.eval()
    return total, epoch_loss


def _batches(
    examples: Sequence[dict[str, list[int]]], size: int, *, rng: random.Random
) -> list[list[int]]:
    """One epoch's batches of example indices: of like length (they pad little), in a
    shuffled order."""
    order = sorted(
        range(len(examples)), key=lambda i: (len(examples[i]["input_ids"]), rng.random())
    )
    batches = [order[i : i + size] for i in range(0, len(order), size)]
    rng.shuffle(batches)
    return batches


def with_lora(model: Any, rank: int) -> Any:
    """``model`` with a LoRA adapter of ``rank`` on its linear layers; its classification
    head (new) trains whole."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(
        task_type=TaskType.TOKEN_CLS,
        r=rank,
        lora_alpha=2 * rank,
        lora_dropout=0.1,
        target_modules=list(LORA_TARGETS),
    )
    return get_peft_model(model, config)


def _pad(batch: Sequence[dict[str, list[int]]], pad_id: int) -> dict[str, list[list[int]]]:
    width = max(len(example["input_ids"]) for example in batch)
    fill = {"input_ids": pad_id, "attention_mask": 0, "labels": IGNORED}
    return {
        key: [example[key] + [value] * (width - len(example[key])) for example in batch]
        for key, value in fill.items()
    }
