"""Anonymize or detect on a Dask cluster (``anonymize.cluster``): the corpus in byte ranges,
each worker process building its detector once and working through the ranges it is given
into part files, merged in input order. Placeholders and surrogates are numbered within a
conversation and detection propagates names within one, so nothing crosses parts and the
outputs are byte for byte those of one process.

The policy files (calibration, exclusions, dictionaries, allow list) are read on the client
and travel in the task's arguments, so a worker needs the package and the models, not the
project's files; model folders (``lm_probability``, ``surrogate.method: lm``) are named from
``base_dir`` and must be on storage the workers read (infra/dask/README.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.anonymize.config import AnonymizeConfig
from components.anonymize.evaluation.run import detected_turns
from components.anonymize.factory import (
    anonymization_policy,
    build_detector,
    check_policy_files,
    detection_records,
)
from components.anonymize.stream import AnonymizationTally, run_batch
from components.core.atomic import PRIVATE, atomic_path
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
from components.core.jsonio import iter_jsonl

if TYPE_CHECKING:
    from components.anonymize.engine import Detector
    from components.anonymize.evaluation.datasets import LabelledText
    from components.anonymize.policy import AnonymizationPolicy
    from components.anonymize.surrogates import SurrogateKey

CORPUS, SPANS, DETECTED = ".corpus.jsonl", ".spans.jsonl", ".detected.jsonl"


@dataclass(frozen=True)
class Engine:
    """What a worker builds its detector and policy from, sent to every worker once. Its
    repr, which a failed task's log may print, shows neither the run's secret nor the
    policy files' contents (dictionaries may list names)."""

    config: AnonymizeConfig
    base_dir: Path  # model folders are named from it
    key: SurrogateKey | None = field(repr=False)
    files: tuple[tuple[str, bytes], ...] = field(repr=False)  # (name in params, contents)
    base_model: Path | None = None  # the base_model stage's folder (factory.build_detector)

    @property
    def token(self) -> str:
        """The same for equal engines, here and after a trip through pickle: from their
        values' reprs, not pickle's bytes (which changed with a round trip once surrogates
        were configured, so each task would have rebuilt its worker's detector)."""
        key = None if self.key is None else (self.key.salt, sorted(self.key.digests))
        described = repr((self.config, str(self.base_dir), key, self.files, self.base_model))
        return hashlib.sha256(described.encode()).hexdigest()


def engine_for(
    config: AnonymizeConfig,
    base_dir: Path,
    *,
    key: SurrogateKey | None,
    base_model: Path | None = None,
) -> Engine:
    """The engine of ``config``, its policy files read here on the client.

    Raises:
        InputError: a policy file is missing or malformed, named before any cluster starts.
    """
    base_dir = base_dir.resolve()
    check_policy_files(config, base_dir, base_model=base_model)
    if config.ner.threads is None:  # a Dask worker is a process a core: the NER takes one
        config = replace(config, ner=replace(config.ner, threads=1))
    files = tuple((name, (base_dir / name).read_bytes()) for name in config.policy_files())
    base_model = base_model.resolve() if base_model is not None else None
    return Engine(config, base_dir, key, files, base_model)


def anonymize_on_cluster(
    config: AnonymizeConfig,
    base_dir: Path,
    *,
    input_path: Path,
    output_path: Path,
    spans_path: Path | None,
    key: SurrogateKey | None,
    total: int | None,
    base_model: Path | None = None,
) -> AnonymizationTally:
    """Anonymize ``input_path`` on ``config.cluster``; both outputs appear only if every
    part succeeds."""
    engine = engine_for(config, base_dir, key=key, base_model=base_model)
    outputs = {CORPUS: output_path, SPANS: spans_path}
    results = _run_on_cluster(
        config,
        engine,
        task=anonymize_part,
        input_path=input_path,
        outputs=outputs,
        total=total,
        mode=PRIVATE,
    )
    tally = AnonymizationTally()
    for result in results:
        tally.merge(result["tally"])
    return tally


def detect_on_cluster(
    config: AnonymizeConfig, base_dir: Path, *, input_path: Path, output_path: Path
) -> int:
    """``detect`` on ``config.cluster``: the spans of each record, in input order."""
    engine = engine_for(config, base_dir, key=None)
    outputs: dict[str, Path | None] = {DETECTED: output_path}
    results = _run_on_cluster(
        config, engine, task=detect_part, input_path=input_path, outputs=outputs, total=None
    )
    return sum(int(result["n_records"]) for result in results)


def detect_groups_on_cluster(
    config: AnonymizeConfig, base_dir: Path, *, groups: Sequence[Sequence[LabelledText]]
) -> Iterator[dict[int, list[Any]]]:
    """``evaluate-detection`` on ``config.cluster``: for each group of labelled texts (a
    conversation), the spans found in each text by turn, in order; lazily, so the caller's
    clock counts the cluster's time.

    Unlike a corpus, labelled data is read whole by its loader (JSON, CoNLL), so the texts
    go to the workers in the tasks: evaluation data, in a few shares per worker.
    """
    assert config.cluster is not None
    engine = engine_for(config, base_dir, key=None)
    arguments = [engine, engine.token]
    tls = config.cluster_tls.files_for(config.cluster, base_dir)
    results = run_shares(
        config.cluster,
        config.workers,
        timeout_s=config.cluster_timeout_s,
        task=detect_groups_part,
        items=groups,
        arguments=arguments,
        description="detect",
        tls=tls,
    )
    for result in results:
        yield from result["turns"]


def _run_on_cluster(
    config: AnonymizeConfig,
    engine: Engine,
    *,
    task: Callable[..., dict[str, Any]],
    input_path: Path,
    outputs: Mapping[str, Path | None],
    total: int | None,
    mode: int | None = None,
) -> list[dict[str, Any]]:
    """``task`` over the parts of ``input_path`` on the cluster, its results checked as
    reading the file whole would (ids unique, not empty), each part file of a suffix in
    ``outputs`` merged into that output (``mode``: its permissions); all outputs appear,
    or none."""
    assert config.cluster is not None
    token = engine.token
    first = next(path for path in outputs.values() if path is not None)
    tls = config.cluster_tls.files_for(config.cluster, engine.base_dir)
    with (
        dask_client(
            config.cluster, config.workers, timeout_s=config.cluster_timeout_s, tls=tls
        ) as client,
        parts_folder(first) as folder,
    ):
        parts = partition(input_path, max(len(client.nthreads()), 1), folder=folder)
        description = task.__name__.removesuffix("_part")  # "anonymize", "detect"
        results = run_parts(
            client,
            task,
            parts=parts,
            arguments=[engine, token],
            description=description,
            total=total,
        )
        check_unique_ids(results, input_path)
        with contextlib.ExitStack() as stack:
            for suffix, path in outputs.items():
                if path is not None:
                    merge_parts(
                        parts, suffix, output=stack.enter_context(atomic_path(path, mode=mode))
                    )
    return results


# This worker process's detector and policy, by the token of what built them: built once per
# process, not per part.
_BUILT: dict[str, tuple[Detector, AnonymizationPolicy]] = {}


def _built(engine: Engine, token: str) -> tuple[Detector, AnonymizationPolicy]:
    """The detector and policy of ``engine``, built on first use in this process from the
    policy files it carries (written to a private folder for the build, then removed: every
    builder reads its files whole)."""
    if token not in _BUILT:
        _BUILT.clear()  # a new run's engine replaces the last one
        with tempfile.TemporaryDirectory(prefix="veiltune-policy-") as folder:
            moved = {}
            for index, (name, contents) in enumerate(engine.files):
                path = Path(folder) / f"{index}-{Path(name).name}"
                path.write_bytes(contents)
                moved[name] = str(path)
            config = engine.config.with_policy_files(moved)
            _BUILT[token] = (
                build_detector(config, engine.base_dir, base_model=engine.base_model),
                anonymization_policy(
                    config, engine.base_dir, key=engine.key, base_model=engine.base_model
                ),
            )
    return _BUILT[token]


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


def anonymize_part(part: Part, engine: Engine, token: str) -> dict[str, Any]:  # noqa: PLR0917 (run_parts calls task(part, *arguments))
    """One part on a worker: its records anonymized into its part files; back come counts,
    and the ids with their lines (for the check across parts), never text."""
    detector, policy = _built(engine, token)
    tally = AnonymizationTally()
    ids: list[tuple[str, int]] = []
    with part_writer(part.output(CORPUS)) as corpus, part_writer(part.output(SPANS)) as spans:
        for batch, batch_ids in _read_part(part, engine.config.batch_size):
            for original, (anonymized, replacements) in zip(
                batch, run_batch(batch, detector, policy=policy), strict=True
            ):
                corpus.write(json.dumps(anonymized.to_record(), ensure_ascii=False) + "\n")
                spans.writelines(json.dumps(r.to_record()) + "\n" for r in replacements)
                tally.add(original, replacements)
            ids += batch_ids
    return {"n_records": len(ids), "ids": ids, "tally": tally}


def detect_part(part: Part, engine: Engine, token: str) -> dict[str, Any]:  # noqa: PLR0917 (run_parts calls task(part, *arguments))
    """One part of ``detect`` on a worker: its records' spans into its part file."""
    detector, policy = _built(engine, token)
    ids: list[tuple[str, int]] = []
    with part_writer(part.output(DETECTED)) as detected:
        for batch, batch_ids in _read_part(part, engine.config.batch_size):
            records = detection_records(batch, detector, policy=policy, batch_size=len(batch))
            detected.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            ids += batch_ids
    return {"n_records": len(ids), "ids": ids}


def detect_groups_part(  # noqa: PLR0917 (run_parts calls task(part, *arguments))
    groups: list[list[LabelledText]], engine: Engine, token: str
) -> dict[str, Any]:
    """A share of ``evaluate-detection`` on a worker: the spans of its texts, by turn."""
    detector, policy = _built(engine, token)
    turns = list(
        detected_turns(groups, detector, policy=policy, batch_size=engine.config.batch_size)
    )
    return {"n_records": len(groups), "turns": turns}
