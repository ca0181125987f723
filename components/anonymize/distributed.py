"""Anonymize or detect on a Dask cluster (``anonymize.cluster``): the corpus in byte ranges,
each worker process building its detector once and working through the ranges it is given
into part files, merged in input order. Placeholders and surrogates are numbered within a
conversation and detection propagates names within one, so nothing crosses parts and the
outputs are byte for byte those of one process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.anonymize.config import AnonymizeConfig
from components.anonymize.stream import AnonymizationTally, run_batch
from components.core.cluster import (
    Part,
    check_unique_ids,
    dask_client,
    merge_parts,
    part_writer,
    partition,
    parts_folder,
    run_parts,
    run_shares,
)
from components.core.corpus import Conversation, conversation_from_record
from components.core.errors import InputError
from components.core.jsonio import atomic_path, iter_jsonl

if TYPE_CHECKING:
    from components.anonymize.engine import AnonymizationPolicy, Detector
    from components.anonymize.evaluation.datasets import LabelledText
    from components.anonymize.surrogates import SurrogateKey

CORPUS, SPANS, DETECTED = ".corpus.jsonl", ".spans.jsonl", ".detected.jsonl"
Engine = tuple[AnonymizeConfig, Path, "SurrogateKey | None"]


def anonymize_on_cluster(
    config: AnonymizeConfig,
    base_dir: Path,
    input_path: Path,
    output_path: Path,
    spans_path: Path | None,
    key: SurrogateKey | None,
    total: int | None,
) -> AnonymizationTally:
    """Anonymize ``input_path`` on ``config.cluster``; both outputs appear only if every
    part succeeds."""
    engine = (config, base_dir.resolve(), key)
    outputs = {CORPUS: output_path, SPANS: spans_path}
    results = _run_on_cluster(config, engine, anonymize_part, input_path, outputs, total)
    tally = AnonymizationTally()
    for result in results:
        tally.merge(result["tally"])
    return tally


def detect_on_cluster(
    config: AnonymizeConfig, base_dir: Path, input_path: Path, output_path: Path
) -> int:
    """``detect`` on ``config.cluster``: the spans of each record, in input order."""
    engine = (config, base_dir.resolve(), None)
    outputs: dict[str, Path | None] = {DETECTED: output_path}
    results = _run_on_cluster(config, engine, detect_part, input_path, outputs, None)
    return sum(int(result["n_records"]) for result in results)


def detect_groups_on_cluster(
    config: AnonymizeConfig, base_dir: Path, groups: Sequence[Sequence[LabelledText]]
) -> Iterator[dict[int, list[Any]]]:
    """``evaluate-detection`` on ``config.cluster``: for each group of labelled texts (a
    conversation), the spans found in each text by turn, in order; lazily, so the caller's
    clock counts the cluster's time.

    Unlike a corpus, labelled data is read whole by its loader (JSON, CoNLL), so the texts
    go to the workers in the tasks: evaluation data, in a few shares per worker.
    """
    assert config.cluster is not None
    engine: Engine = (config, base_dir.resolve(), None)
    arguments = [engine, _token(engine)]
    timeout_s = config.cluster_timeout_s
    results = run_shares(
        config.cluster, config.workers, timeout_s, detect_groups_part, groups, arguments, "detect"
    )
    for result in results:
        yield from result["turns"]


def _run_on_cluster(
    config: AnonymizeConfig,
    engine: Engine,
    task: Callable[..., dict[str, Any]],
    input_path: Path,
    outputs: Mapping[str, Path | None],
    total: int | None,
) -> list[dict[str, Any]]:
    """``task`` over the parts of ``input_path`` on the cluster, its results checked as
    reading the file whole would (ids unique, not empty), each part file of a suffix in
    ``outputs`` merged into that output; all outputs appear, or none."""
    assert config.cluster is not None
    token = _token(engine)
    first = next(path for path in outputs.values() if path is not None)
    with (
        dask_client(config.cluster, config.workers, config.cluster_timeout_s) as client,
        parts_folder(first) as folder,
    ):
        parts = partition(input_path, max(len(client.nthreads()), 1), folder)
        description = task.__name__.removesuffix("_part")  # "anonymize", "detect"
        results = run_parts(client, task, parts, [engine, token], description, total)
        check_unique_ids(results, input_path)
        with contextlib.ExitStack() as stack:
            for suffix, path in outputs.items():
                if path is not None:
                    merge_parts(parts, suffix, stack.enter_context(atomic_path(path)))
    return results


def _token(engine: Engine) -> str:
    return hashlib.sha256(pickle.dumps(engine)).hexdigest()


# This worker process's detector and policy, by the token of what built them: built once per
# process, not per part.
_ENGINE: dict[str, tuple[Detector, AnonymizationPolicy]] = {}


def _engine(engine: Engine, token: str) -> tuple[Detector, AnonymizationPolicy]:
    if token not in _ENGINE:
        from components.anonymize.factory import anonymization_policy, build_detector

        config, base_dir, key = engine
        _ENGINE.clear()  # a new run's engine replaces the last one
        _ENGINE[token] = (
            build_detector(config, base_dir),
            anonymization_policy(config, base_dir, key),
        )
    return _ENGINE[token]


def _read_part(part: Part, batch_size: int) -> Iterator[tuple[list[Conversation], list[Any]]]:
    """The part's conversations ``batch_size`` at a time, with the (id, line) of each."""
    batch: list[Conversation] = []
    ids: list[tuple[str, int]] = []
    try:
        for line, record in iter_jsonl(part.source, part.byte_range):
            conversation = conversation_from_record(record, f"{part.source}:{line}")
            batch.append(conversation)
            ids.append((conversation.id, line))
            if len(batch) >= batch_size:
                yield batch, ids
                batch, ids = [], []
    except InputError as error:
        raise part.renamed(error) from None
    if batch:
        yield batch, ids


def anonymize_part(part: Part, engine: Engine, token: str) -> dict[str, Any]:
    """One part on a worker: its records anonymized into its part files; back come counts,
    and the ids with their lines (for the check across parts), never text."""
    detector, policy = _engine(engine, token)
    tally = AnonymizationTally()
    ids: list[tuple[str, int]] = []
    with part_writer(part.output(CORPUS)) as corpus, part_writer(part.output(SPANS)) as spans:
        for batch, batch_ids in _read_part(part, engine[0].batch_size):
            for original, (anonymized, replacements) in zip(
                batch, run_batch(batch, detector, policy), strict=True
            ):
                corpus.write(json.dumps(anonymized.to_record(), ensure_ascii=False) + "\n")
                spans.writelines(json.dumps(r.to_record()) + "\n" for r in replacements)
                tally.add(original, replacements)
            ids += batch_ids
    return {"n_records": len(ids), "ids": ids, "tally": tally}


def detect_part(part: Part, engine: Engine, token: str) -> dict[str, Any]:
    """One part of ``detect`` on a worker: its records' spans into its part file."""
    from components.anonymize.factory import detection_records

    detector, policy = _engine(engine, token)
    ids: list[tuple[str, int]] = []
    with part_writer(part.output(DETECTED)) as detected:
        for batch, batch_ids in _read_part(part, engine[0].batch_size):
            records = detection_records(batch, detector, policy, len(batch))
            detected.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            ids += batch_ids
    return {"n_records": len(ids), "ids": ids}


def detect_groups_part(
    groups: list[list[LabelledText]], engine: Engine, token: str
) -> dict[str, Any]:
    """A share of ``evaluate-detection`` on a worker: the spans of its texts, by turn."""
    from components.anonymize.evaluation.run import detected_turns

    detector, policy = _engine(engine, token)
    turns = list(detected_turns(groups, detector, policy, engine[0].batch_size))
    return {"n_records": len(groups), "turns": turns}
