"""Differentially private LoRA (``train.privacy.enabled``): DP-SGD (Abadi et al., 2016) with
Opacus on the adapter's weights, the privacy unit one conversation.

- **The unit.** All of a conversation's task examples are packed into one row (positions
  restart at each example, so attention stays within it, as ``packing`` does), and that
  row's gradient is clipped to ``max_grad_norm`` as one: whatever a conversation holds, it
  moves the adapter by at most that much. An example longer than ``max_seq_length`` is cut as
  SFT cuts it, so a row is at most ``len(tasks) × max_seq_length`` tokens. Each of the
  one-run audit's inserted canaries is a unit of its own.
- **Sampling and noise.** Every step draws each unit with probability
  ``q = B / n`` (Poisson sampling; ``B = batch_size × gradient_accumulation_steps``, the
  expected conversations per step), runs the drawn rows ``batch_size`` at a time, sums their
  clipped gradients and adds Gaussian noise once (Opacus's ``DPOptimizer`` with skipped
  steps, as its ``BatchMemoryManager`` does). The noise multiplier is solved for the target
  ε at δ over ``max_steps`` steps by the configured accountant, which then counts the ε
  each step spent.
- **Secret randomness.** The sampling and the noise come from the operating system's
  randomness (``train.seed`` is public: in params.yaml and the bundle), so a DP run is not
  reproducible bit for bit.
- **What it leaves out.** No checkpoints (a killed DP run starts again: resuming would need
  the accountant's and the sampler's state too); no early stopping or best-checkpoint
  choice (the final weights; the eval loss is measured once, at the end).
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.core.errors import ParamsError
from components.core.progress import counted
from components.train.chat_tokens import tokenize_example
from components.train.engine import world_rank
from components.train.packing import PackedCollator, pack_examples
from components.train.privacy_budget import (
    PrivacyBudget,
    privacy_budget,
    privacy_figures,
    quiet_accountant,
)
from components.train.result import TrainResult
from components.train.session import (
    base_model,
    check_inputs,
    lora_config,
    save_beside_adapter,
    seeded_tokenizer,
)
from components.train.tasks import Example, label_options, training_examples
from components.train.training_method import TrainingJob

logger = logging.getLogger(__name__)

Row = dict[str, list[int]]


def conversation_rows(
    examples: Sequence[Example], tokenizer: Any, *, max_length: int, mask_loss_weight: float
) -> list[Row]:
    """One row per conversation (in first-seen order): its examples tokenized as SFT
    tokenizes them and packed side by side, positions restarting at each."""
    by_unit: dict[str, list[Row]] = defaultdict(list)
    for example in examples:
        by_unit[example.conversation_id].append(
            tokenize_example(
                example, tokenizer, max_length=max_length, mask_loss_weight=mask_loss_weight
            )
        )
    rows = []
    for tokenized in by_unit.values():
        (row,) = pack_examples(tokenized, sum(len(t["input_ids"]) for t in tokenized))
        rows.append(row)
    return rows


def unit_mean_loss(model: Any, batch: dict[str, Any]) -> Any:
    """The mean over the batch's rows of each row's mean token loss: each row's gradient is
    its own loss's alone (the Trainer's token mean over the whole batch would weigh a row
    by the other rows' lengths, and clipping bounds a row only if nothing else moves it)."""
    import torch

    logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"]).logits
    labels = batch["labels"][:, 1:]
    nll = torch.nn.functional.cross_entropy(
        logits[:, :-1].float().transpose(1, 2), labels, ignore_index=-100, reduction="none"
    )
    counted = (labels != -100).sum(dim=1).clamp(min=1)
    return ((nll * (labels != -100)).sum(dim=1) / counted).mean()


@dataclass(frozen=True)
class DpRun:
    """A finished DP-SGD run: each step's mean loss over the units it drew, and the ε the
    accountant counts spent (infinite without noise)."""

    loss_history: list[tuple[int, float]]
    epsilon: float
    units_drawn: int


def dp_sgd(
    model: Any,
    rows: Sequence[Row],
    *,
    budget: PrivacyBudget,
    learning_rate: float,
    physical_batch: int,
    pad_token_id: int,
    seed: int | None = None,
) -> DpRun:
    """Train ``model``'s trainable weights on ``rows`` (one per unit) by DP-SGD: ``steps``
    Poisson-sampled batches, each unit's gradient clipped, noise of
    ``noise_multiplier × max_grad_norm`` added once per step. A ``noise_multiplier`` of 0
    (the audit's control) clips without noise: no guarantee, ε infinite.

    The sampling and the noise are drawn from a seed of the operating system's randomness,
    never logged, unless ``seed`` is given (tests only): the guarantee assumes an adversary
    cannot replay them, and ``train.seed`` is in params.yaml and the bundle for anyone to
    read."""
    import torch
    from opacus import GradSampleModule
    from opacus.accountants import create_accountant
    from opacus.optimizers import DPOptimizer

    module = GradSampleModule(model, loss_reduction="mean")
    params = [p for p in model.parameters() if p.requires_grad]
    secret = secrets.randbits(62) if seed is None else seed
    noise = torch.Generator().manual_seed(secret + 1)
    optimizer = DPOptimizer(
        torch.optim.AdamW(params, lr=learning_rate),
        noise_multiplier=budget.noise_multiplier,
        max_grad_norm=budget.max_grad_norm,
        expected_batch_size=budget.expected_batch,
        generator=noise,
    )
    accountant = create_accountant(budget.accountant)
    draws = torch.Generator().manual_seed(secret)
    collate = PackedCollator(pad_token_id)
    history, drawn = [], 0
    module.train()
    for step in counted(range(1, budget.steps + 1), "DP-SGD", unit="steps"):
        chosen = torch.nonzero(torch.rand(len(rows), generator=draws) < budget.sample_rate)
        batch = [rows[int(i)] for i in chosen.flatten()]
        loss = _noisy_step(
            module, optimizer, rows=batch, physical_batch=physical_batch, collate=collate
        )
        accountant.step(noise_multiplier=budget.noise_multiplier, sample_rate=budget.sample_rate)
        drawn += len(batch)
        if loss is not None:
            history.append((step, loss))
    module._close()  # its hooks and per-sample gradients off the model, before it is saved
    with quiet_accountant():
        epsilon = (
            accountant.get_epsilon(delta=budget.delta) if budget.noise_multiplier > 0 else math.inf
        )
    return DpRun(history, float(epsilon), drawn)


def _noisy_step(
    module: Any, optimizer: Any, *, rows: Sequence[Row], physical_batch: int, collate: Any
) -> float | None:
    """One DP-SGD step over the drawn rows, ``physical_batch`` at a time; their mean loss
    (None when Poisson sampling drew none: the step is noise alone, as the analysis says)."""
    import torch

    if not rows:
        for p in optimizer.params:
            p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype)
        optimizer.step()
        optimizer.zero_grad()
        return None
    chunks = [rows[i : i + physical_batch] for i in range(0, len(rows), physical_batch)]
    total = 0.0
    for index, chunk in enumerate(chunks):
        loss = unit_mean_loss(module, collate(chunk))
        with warnings.catch_warnings():
            # Opacus's hooks on a model whose input embeddings are frozen (LoRA): torch
            # warns on every step that no input requires a gradient, as none need one.
            warnings.filterwarnings("ignore", "Full backward hook is firing", UserWarning)
            loss.backward()
        total += float(loss.detach()) * len(chunk)
        optimizer.signal_skip_step(do_skip=index < len(chunks) - 1)
        optimizer.step()
        optimizer.zero_grad()
    return total / len(rows)


def train_private(job: TrainingJob) -> TrainResult:
    """DP LoRA on the job's conversations (and inserted canaries); the adapter saved to
    ``job.output_dir``.

    Raises:
        ParamsError: under a launcher's world (DP runs on one process), or a budget
            :func:`privacy_budget` refuses; before the model is loaded.
    """
    config = job.config
    if world_rank() or int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ParamsError(
            "params: train.privacy.enabled: DP training runs on one process; run the train "
            "stage without a launcher (its per-conversation clipping is not sharded)"
        )
    check_inputs(job.base_model_dir, config)
    tokenizer = seeded_tokenizer(job.base_model_dir, config.seed)
    options = label_options(job.conversations)
    split = training_examples(
        job.conversations,
        config.tasks,
        eval_fraction=config.eval_fraction,
        seed=config.seed,
        options=options,
        only_good=config.only_good,
    )
    rows = conversation_rows(
        [*split.train, *job.canaries],
        tokenizer,
        max_length=config.max_seq_length,
        mask_loss_weight=config.mask_loss_weight,
    )
    budget = privacy_budget(
        config.privacy,
        n_units=len(rows),
        expected_batch=config.batch_size * config.gradient_accumulation_steps,
        steps=config.max_steps,
    )
    logger.info(
        "DP-SGD: %d units, sampling rate %.4f, noise multiplier %.3f for ε %g at δ %.3g",
        budget.n_units,
        budget.sample_rate,
        budget.noise_multiplier,
        budget.target_epsilon,
        budget.delta,
    )
    return _train_and_save(job, tokenizer, rows=rows, budget=budget, split=split, options=options)


def _train_and_save(
    job: TrainingJob,
    tokenizer: Any,
    *,
    rows: Sequence[Row],
    budget: PrivacyBudget,
    split: Any,
    options: dict[str, list[str]],
) -> TrainResult:
    from peft import get_peft_model

    config = job.config
    model = get_peft_model(base_model(job.base_model_dir, config), lora_config(config))
    trainable, total = model.get_nb_trainable_parameters()
    started = time.perf_counter()
    run = dp_sgd(
        model,
        rows,
        budget=budget,
        learning_rate=config.learning_rate,
        physical_batch=config.batch_size,
        pad_token_id=int(tokenizer.pad_token_id),
    )
    runtime = time.perf_counter() - started
    evaluation = conversation_rows(
        split.evaluation,
        tokenizer,
        max_length=config.max_seq_length,
        mask_loss_weight=config.mask_loss_weight,
    )
    eval_loss = _eval_loss(model, evaluation, pad_token_id=int(tokenizer.pad_token_id))
    model.save_pretrained(job.output_dir)
    save_beside_adapter(
        tokenizer, options=options, output_dir=job.output_dir, generation=config.generation
    )
    losses = [loss for _, loss in run.loss_history]
    mean_rows = sum(len(r["input_ids"]) for r in rows) / len(rows)
    return TrainResult(
        n_examples=len(split.train) + len(split.evaluation),
        steps=budget.steps,
        train_loss=sum(losses) / len(losses) if losses else 0.0,
        trainable_parameters=int(trainable),
        total_parameters=int(total),
        runtime_s=runtime,
        loss_history=run.loss_history,
        n_sequences=len(rows),
        tokens_trained=int(run.units_drawn * mean_rows),
        engine="opacus-dp-sgd",
        eval_history=[(budget.steps, eval_loss)] if eval_loss is not None else [],
        n_eval_examples=len(split.evaluation),
        n_conversations=len(split.trained_ids),
        n_conversations_eval=len(split.eval_ids),
        n_conversations_skipped=len(split.skipped),
        n_audit_canaries=len(job.canaries),
        privacy=privacy_figures(budget, run.epsilon),
    )


def _eval_loss(model: Any, rows: Sequence[Row], *, pad_token_id: int) -> float | None:
    """The mean over held-out conversations of each one's mean token loss."""
    import torch

    if not rows:
        return None
    collate = PackedCollator(pad_token_id)
    model.eval()
    with torch.no_grad():
        losses = [float(unit_mean_loss(model, collate([row]))) for row in rows]
    return sum(losses) / len(losses)
