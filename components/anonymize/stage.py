"""The anonymize stage: the raw corpus through the detector and replacement, streamed, into
``data/anonymized`` (corpus and one record per replaced span); nothing else reads raw text
after it but the attacker's side of the audit and the bundle's PI scan."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from components.anonymize.config import AnonymizeConfig
from components.anonymize.distributed import anonymize_on_cluster
from components.anonymize.stream import AnonymizationTally, Result, anonymize_stream
from components.anonymize.surrogates import SurrogateKey
from components.core import paths
from components.core.atomic import PRIVATE, atomic_path, private_folder
from components.core.corpus import Conversation, read_corpus
from components.core.salt import read_salt
from components.core.stage import Metrics, StageContext, check_paths
from components.ingest import read_inventory


def run(config: AnonymizeConfig, context: StageContext) -> Metrics:
    raw, corpus = context.input(paths.RAW_CORPUS), context.output(paths.ANON_CORPUS)
    spans, metrics_path = (
        context.output(paths.ANON_SPANS),
        context.output(paths.metrics_file("anonymize")),
    )
    check_paths([raw], [corpus, spans, metrics_path], root=context.workspace)
    # Anonymized text may still hold what the detector missed: owner-only, as data/raw.
    private_folder(corpus.parent)
    with context.mlflow_run():
        key = None
        if config.replacement == "surrogate":
            key = surrogate_key(context.input(paths.SALT), context.input(paths.INVENTORY))
        metrics = anonymize_file(
            config,
            context.base_dir,
            input_path=raw,
            output_path=corpus,
            spans_path=spans,
            key=key,
            base_model=context.input(paths.BASE_MODEL),
        )
        context.record(metrics)
    return metrics


def surrogate_key(salt: Path, inventory: Path) -> SurrogateKey:
    """The run's secret (ingest's salt) and the digests of every PI value the inventory
    knows (if there is one): surrogates are drawn from the one and may be none of the
    other."""
    entries = read_inventory(inventory) if inventory.is_file() else []
    return SurrogateKey(read_salt(salt), frozenset(e.digest for e in entries))


def anonymize_file(
    config: AnonymizeConfig,
    base_dir: Path,
    *,
    input_path: Path,
    output_path: Path,
    spans_path: Path | None,
    key: SurrogateKey | None = None,
    base_model: Path | None = None,
) -> Metrics:
    """Stream a corpus through the anonymizer (the policy files of ``config`` named from
    ``base_dir``; the base model read from ``base_model``, the stage's workspace folder,
    else ``models/base`` under ``base_dir``); both outputs appear only if all succeeds,
    readable by their owner only (anonymized text may hold what the detector missed)."""
    started = time.perf_counter()
    if config.cluster is not None:
        total = count_records(input_path)
        tally = anonymize_on_cluster(
            config,
            base_dir,
            input_path=input_path,
            output_path=output_path,
            spans_path=spans_path,
            key=key,
            total=total,
            base_model=base_model,
        )
        return tally.to_metrics(time.perf_counter() - started, config.workers)
    tally = AnonymizationTally()
    usage: dict[str, Any] = {}  # a remote backend's requests, bytes and cost
    stream = anonymize_stream(
        read_corpus(input_path),
        config,
        base_dir=base_dir,
        workers=config.workers,
        key=key,
        usage=usage,
        base_model=base_model,
    )
    _write(stream, output_path, spans_path=spans_path, total=count_records(input_path), tally=tally)
    return {**tally.to_metrics(time.perf_counter() - started, config.workers), **usage}


def _write(
    stream: Iterable[tuple[Conversation, Result]],
    output_path: Path,
    *,
    spans_path: Path | None,
    total: int | None,
    tally: AnonymizationTally,
) -> None:
    """The anonymized corpus and its spans, each written whole or not at all, counted on
    ``tally`` and on a progress bar."""
    from tqdm import tqdm

    with contextlib.ExitStack() as stack:
        out = stack.enter_context(
            stack.enter_context(atomic_path(output_path, mode=PRIVATE)).open("w")
        )
        spans = (
            stack.enter_context(
                stack.enter_context(atomic_path(spans_path, mode=PRIVATE)).open("w")
            )
            if spans_path
            else None
        )
        progress = stack.enter_context(
            tqdm(
                desc="anonymize",
                total=total,
                unit=" conversations",
                mininterval=2,
                file=sys.stderr,
            )
        )
        for original, (anonymized, replacements) in stream:
            out.write(json.dumps(anonymized.to_record(), ensure_ascii=False) + "\n")
            if spans is not None:
                spans.writelines(json.dumps(r.to_record()) + "\n" for r in replacements)
            tally.add(original, replacements)
            progress.update()


def count_records(path: Path) -> int | None:
    """The non-blank lines of a JSONL file (one conversation each): the progress bar's total,
    at the cost of one read of the file, seconds against the minutes of detection on it."""
    if not path.is_file():
        return None  # read_corpus reports the missing file
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def summary(metrics: Metrics) -> str:
    """The line ``veiltune anonymize`` prints: what it replaced, and how fast."""
    return (
        f"{metrics['n_replacements']} spans replaced in {metrics['n_conversations']} "
        f"conversations ({metrics['chars_per_second']:.0f} characters/s)"
    )
