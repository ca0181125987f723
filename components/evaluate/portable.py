"""The utility profile away from the pipeline: a pack of what its runs read, and the runs
themselves on a machine that has only torch, transformers, peft, rouge-score and
scikit-learn (a rented GPU node).

``veiltune utility-profile`` trains each run as a DVC experiment, which needs the whole
installation and, on a CPU, takes half an hour a run. A pack holds what the train and
evaluate stages read for every variant (the training split of each variant's corpus, the
held-out raw conversations, the label options, the train and evaluate params), so the runs
can go where the accelerators are:

    veiltune utility-pack data/raw/utility-pack --anonymized placeholder=DIR ...   # here
    python -m veiltune.utility_runner data/raw/utility-pack --base-model models/base \\
        --store reports/utility/runs --seeds 13 14                               # there
    veiltune utility-report                                                      # here

A run calls the stages' own functions (``train_lora``, ``load_adapter``,
``evaluate_datasets``) with the pack's params, and writes the run store folder the
profile would (``evaluate.json``, ``per_conversation.jsonl``), so the report cannot tell
them apart but by the ``runner`` and ``device`` keys of evaluate.json. What it leaves out is
the pipeline around them: no gate (the pack is for baselines and anonymized corpora alike),
no MLflow run, no DVC lock.

A pack holds raw text (the oracle's training split, the held-out conversations): it is
private like ``data/raw`` (its folder is made owner-only) and belongs there. What comes back
holds scores only.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.atomic import atomic_folder
from components.core.corpus import Conversation, load_corpus
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl, jsonl_by_key, write_json_atomic, write_jsonl_atomic
from components.evaluate.config import EvaluateConfig
from components.evaluate.runs import EVALUATE_FILE, PER_CONVERSATION_FILE, RUN_KIND, run_folder
from components.evaluate.utility import evaluate_models
from components.evaluate.variants import (
    FRAGMENTED,
    FRAGMENTED_RAW,
    MASKED,
    MASKED_NO_LOSS,
    ORACLE,
    PLACEHOLDER,
    TRAINED_VARIANTS,
    variant_overrides,
)
from components.ingest import DATASET, MAIN, split_by_dataset
from components.train import (
    Chunk,
    FragmentsConfig,
    TrainConfig,
    TrainingExamples,
    build_fragments,
    chunk_conversations,
    label_options,
    load_adapter,
    load_base,
    load_chunker,
    mask_replaced,
    read_generation_settings,
    read_label_options,
    train_lora,
)

logger = logging.getLogger(__name__)

PACK_FILE = "pack.json"
PACK_KIND = "utility-pack"  # its marker (components.core.atomic): only a pack replaces a pack
HELDOUT_FILE = "heldout.jsonl"
TRAIN_DIR = "train"
CHUNKS_DIR = "chunks"  # the fragmented variants' chunks, found here: no spaCy on the node
PORTABLE = "portable"  # evaluate.json's "runner" for a run made from a pack
# Variants a pack derives from the raw corpus or the placeholder folder, never given.
DERIVED = (ORACLE, MASKED, MASKED_NO_LOSS, FRAGMENTED, FRAGMENTED_RAW)


@dataclass(frozen=True)
class Pack:
    """A pack as read back: its folder and what ``pack.json`` says."""

    folder: Path
    train: dict[str, Any]  # TrainConfig fields; each run sets its own seed
    evaluate: dict[str, Any]  # max_new_tokens, max_prompt_tokens, max_conversations, ...
    variants: dict[str, str]  # variant → training file, relative to the folder
    label_sets: dict[str, list[str]]
    digest: str  # sha256 of pack.json: which pack a run came from
    # variant → its own train params (masked-no-loss's weight, fragments' corpus and tasks)
    variant_train: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    chunks: dict[str, str] = dataclasses.field(default_factory=dict)  # variant → chunks file

    def train_config(self, seed: int, variant: str | None = None) -> TrainConfig:
        """The train params of ``variant``'s runs (the pack's, with the variant's own)."""
        fields = copy.deepcopy(self.train)
        for dotted, value in self.variant_train.get(variant or "", {}).items():
            *parents, key = dotted.split(".")  # fragments.source sets a nested field
            section = fields
            for parent in parents:
                section = section.setdefault(parent, {})
            section[key] = value
        return TrainConfig(**{**fields, "seed": seed, "deepspeed": None})

    def training_conversations(self, variant: str) -> list[Conversation]:
        if variant not in self.variants:
            raise InputError(
                f"{self.folder / PACK_FILE}: no variant {variant!r} in this pack "
                f"(it has {', '.join(self.variants)})"
            )
        return load_corpus(self.folder / self.variants[variant])

    def training_examples(self, variant: str, config: TrainConfig) -> TrainingExamples | None:
        """The fragmented variants' examples, mixed from the chunks the pack carries (None
        for the other variants: their examples are the conversations' tasks)."""
        if variant not in self.chunks:
            return None
        fragments = build_fragments(
            self.training_conversations(variant),
            config.fragments,
            eval_fraction=config.eval_fraction,
            seed=config.seed,
            chunks=_read_chunks(self.folder / self.chunks[variant]),
        )
        return fragments.training_examples()

    def heldout(self) -> dict[str, list[Conversation]]:
        return split_by_dataset(
            load_corpus(self.folder / HELDOUT_FILE), self.evaluate["max_conversations"]
        )


def make_pack(
    destination: Path,
    raw: Sequence[Conversation],
    *,
    splits: Mapping[str, Sequence[str]],
    anonymized: Mapping[str, Path],
    train: TrainConfig,
    evaluate: EvaluateConfig,
) -> dict[str, Any]:
    """Write a pack to ``destination`` (replacing it whole, atomically) and return its
    pack.json.

    Args:
        raw: the raw corpus; ``splits`` its train/heldout ids (``data/splits.json``).
        anonymized: variant name → a folder the anonymize stage wrote (``corpus.jsonl``,
            ``spans.jsonl``) with that variant's detectors and replacement. The oracle and
            ``fragmented-raw`` come from ``raw``; ``masked``, ``masked-no-loss`` and
            ``fragmented`` from the ``placeholder`` folder when one is given.

    Raises:
        InputError: an unknown variant, a folder without its corpus or spans, or a corpus
            whose conversations are not those of the raw corpus's train split.
    """
    corpora, files = _training_corpora(raw, set(splits["train"]), anonymized=anonymized)
    heldout = [c for c in raw if c.id in set(splits["heldout"])]
    if not heldout:
        raise InputError("the held-out split is empty; nothing to evaluate")
    evaluation = {
        "max_conversations": evaluate.max_conversations,
        "max_new_tokens": evaluate.max_new_tokens,
        "max_prompt_tokens": evaluate.max_prompt_tokens,
        "include_base": evaluate.include_base,
        "tasks": evaluate.tasks,
    }
    manifest = {
        "train": {k: v for k, v in dataclasses.asdict(train).items() if k != "seed"},
        "evaluate": evaluation,
        "variants": {variant: f"{TRAIN_DIR}/{file}.jsonl" for variant, file in files.items()},
        "variant_train": {variant: _train_overrides(variant) for variant in files},
        "chunks": {
            v: f"{CHUNKS_DIR}/{files[v]}.jsonl" for v in (FRAGMENTED, FRAGMENTED_RAW) if v in files
        },
        "label_sets": label_options(corpora[ORACLE]),
        "n_train_conversations": {variant: len(c) for variant, c in corpora.items()},
        "n_heldout": {name: len(group) for name, group in split_by_dataset(heldout).items()},
    }
    with atomic_folder(destination, PACK_KIND, raw=True) as tmp:
        (tmp / TRAIN_DIR).mkdir()
        for variant, conversations in corpora.items():
            write_jsonl_atomic(tmp / TRAIN_DIR / f"{variant}.jsonl", _records(conversations))
        write_jsonl_atomic(tmp / HELDOUT_FILE, _records(heldout))
        _write_chunks(tmp, manifest["chunks"], corpora=corpora, files=files, config=train.fragments)
        write_json_atomic(tmp / PACK_FILE, manifest)
    return manifest


def _training_corpora(
    raw: Sequence[Conversation], train_ids: set[str], *, anonymized: Mapping[str, Path]
) -> tuple[dict[str, list[Conversation]], dict[str, str]]:
    """Each corpus the pack holds (the oracle's, each anonymized folder's train split, the
    masked one made from the placeholder folder), and each variant's corpus file."""
    corpora: dict[str, list[Conversation]] = {ORACLE: [c for c in raw if c.id in train_ids]}
    files = {ORACLE: ORACLE, FRAGMENTED_RAW: ORACLE}  # variant → the corpus file it trains on
    for variant, folder in anonymized.items():
        if variant not in TRAINED_VARIANTS or variant in DERIVED:
            allowed = ", ".join(v for v in TRAINED_VARIANTS if v not in DERIVED)
            raise InputError(f"--anonymized {variant}={folder}: the variant is one of {allowed}")
        corpora[variant] = _anonymized_train_split(folder, train_ids, expected=len(corpora[ORACLE]))
        files[variant] = variant
        if variant == PLACEHOLDER:
            spans = jsonl_by_key(folder / "spans.jsonl", "conversation_id")
            corpora[MASKED] = [mask_replaced(c, spans.get(c.id, [])) for c in corpora[variant]]
            files.update({MASKED: MASKED, MASKED_NO_LOSS: MASKED, FRAGMENTED: PLACEHOLDER})
    return corpora, files


def _write_chunks(
    folder: Path,
    chunk_files: Mapping[str, str],
    *,
    corpora: Mapping[str, Sequence[Conversation]],
    files: Mapping[str, str],
    config: FragmentsConfig,
) -> None:
    """The chunks of each fragmented variant's corpus (spaCy's parse, here once rather than
    in every run on the node, which need not have spaCy)."""
    if not chunk_files:
        return
    (folder / CHUNKS_DIR).mkdir()
    nlp = load_chunker(config.spacy_model)
    for path in sorted(set(chunk_files.values())):
        corpus = next(corpora[files[v]] for v, p in chunk_files.items() if p == path)
        chunks = chunk_conversations(
            corpus, nlp, max_words=config.max_chunk_words, min_words=config.min_chunk_words
        )
        write_jsonl_atomic(folder / path, [c.to_record() for c in chunks])


def _read_chunks(path: Path) -> list[Chunk]:
    chunks = []
    for line_no, record in iter_jsonl(path):
        try:
            chunks.append(Chunk.from_record(record))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path}:{line_no}: not a chunk ({exc!r})") from exc
    return chunks


def _train_overrides(variant: str) -> dict[str, Any]:
    """The train params a variant sets itself (``train.corpus``, the [MASK] loss weight,
    fragments' source and tasks), by field name."""
    return {
        key.removeprefix("train."): value
        for key, value in variant_overrides(variant).items()
        if key.startswith("train.")
    }


def _records(conversations: Sequence[Conversation]) -> list[dict[str, Any]]:
    return [c.to_record() for c in conversations]


def _anonymized_train_split(
    folder: Path, train_ids: set[str], *, expected: int
) -> list[Conversation]:
    for name in ("corpus.jsonl", "spans.jsonl"):
        if not (folder / name).is_file():
            raise InputError(f"{folder / name}: missing (an anonymize stage output folder)")
    conversations = [c for c in load_corpus(folder / "corpus.jsonl") if c.id in train_ids]
    if len(conversations) != expected:
        raise InputError(
            f"{folder / 'corpus.jsonl'}: {len(conversations)} of the raw corpus's {expected} "
            "training conversations: anonymized from another corpus or split"
        )
    return conversations


def read_pack(folder: Path) -> Pack:
    """The pack in ``folder``.

    Raises:
        InputError: no pack.json, or one that is not a pack's.
    """
    path = folder / PACK_FILE
    if not path.is_file():
        raise InputError(f"{path}: no such file (make one with `veiltune utility-pack`)")
    text = path.read_bytes()
    try:
        manifest = json.loads(text)
        return Pack(
            folder,
            dict(manifest["train"]),
            dict(manifest["evaluate"]),
            dict(manifest["variants"]),
            dict(manifest["label_sets"]),
            hashlib.sha256(text).hexdigest(),
            dict(manifest.get("variant_train", {})),  # older packs: one train config for all
            dict(manifest.get("chunks", {})),  # older packs: fragments parsed on the node
        )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: not a utility pack ({exc})") from exc


def run_from_pack(
    pack: Pack, variant: str, *, seed: int, base_model: Path, store: Path, work_dir: Path
) -> Path:
    """Train ``variant`` at ``seed`` and evaluate it as the train and evaluate stages would,
    into the run store folder of that run (written whole, atomically); returns the folder."""
    import torch

    config = pack.train_config(seed, variant)
    conversations = pack.training_conversations(variant)
    datasets = pack.heldout()
    adapter_dir = work_dir / "adapter"
    started = time.monotonic()
    examples = pack.training_examples(variant, config)
    result = train_lora(
        base_model,
        conversations,
        config=config,
        output_dir=adapter_dir,
        work_dir=work_dir / "checkpoints",
        examples=examples,
    )
    trained = time.monotonic()
    label_sets = read_label_options(adapter_dir) or pack.label_sets
    models = {"adapter": lambda: load_adapter(base_model, adapter_dir)}
    if pack.evaluate["include_base"] and variant == ORACLE:  # the report reads it from there
        settings = read_generation_settings(adapter_dir)  # the base answers as the adapter
        models["base"] = lambda: load_base(base_model, settings)
    evaluation: dict[str, Any] = {
        "variant": variant,
        "train_seed": seed,
        "train_steps": config.max_steps,
        "n_conversations": len(datasets[MAIN]),
        f"{DATASET}.n_conversations": len(datasets[DATASET]),
        "runner": PORTABLE,
        "pack_sha256": pack.digest,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "train": result.to_metrics(),
    }
    scores, records = evaluate_models(
        models,
        datasets,
        label_sets=label_sets,
        max_new_tokens=pack.evaluate["max_new_tokens"],
        max_prompt_tokens=pack.evaluate["max_prompt_tokens"],
        tasks=pack.evaluate.get("tasks"),  # packs before evaluate.tasks scored every task
    )
    evaluation.update(scores)
    evaluation["runtime_s"] = {
        "train": round(trained - started, 1),
        "evaluate": round(time.monotonic() - trained, 1),
    }
    folder = run_folder(store, variant, seed=seed)
    with atomic_folder(folder, RUN_KIND) as tmp:
        write_json_atomic(tmp / EVALUATE_FILE, evaluation)
        write_jsonl_atomic(tmp / PER_CONVERSATION_FILE, records)
    return folder
