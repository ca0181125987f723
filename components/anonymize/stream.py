"""Anonymize a corpus as a stream, in one process or several, in bounded memory.

Conversations are taken ``batch_size`` at a time; with ``workers > 1`` each worker process
builds its own detector once and at most ``2 × workers`` batches are in flight, so memory
stays flat however large the corpus. Output order is input order.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.anonymize import factory
from components.anonymize.config import AnonymizeConfig
from components.anonymize.engine import Detector, anonymize_corpus
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.replace import Replacement
from components.anonymize.replacers import FALLBACK_METHOD
from components.core.corpus import Conversation

if TYPE_CHECKING:
    from components.anonymize.surrogates import SurrogateKey

Result = tuple[Conversation, list[Replacement]]


@dataclass
class AnonymizationTally:
    """Running counts for the stage's metrics (no text kept)."""

    n_conversations: int = 0
    n_chars: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    by_method: Counter[str] = field(default_factory=Counter)
    fallbacks: Counter[str] = field(default_factory=Counter)

    def add(self, original: Conversation, replacements: list[Replacement]) -> None:
        self.n_conversations += 1
        self.n_chars += sum(len(t.text) + len(t.speaker or "") for t in original.turns)
        self.by_type.update(r.span.entity_type for r in replacements)
        self.by_method.update(
            f"{r.method}/{r.surrogate_source}" if r.surrogate_source else r.method
            for r in replacements
        )
        self.fallbacks.update(
            r.span.entity_type for r in replacements if r.method == FALLBACK_METHOD
        )

    def merge(self, other: AnonymizationTally) -> None:
        """Add another part's counts (a cluster run's parts)."""
        self.n_conversations += other.n_conversations
        self.n_chars += other.n_chars
        self.by_type.update(other.by_type)
        self.by_method.update(other.by_method)
        self.fallbacks.update(other.fallbacks)

    def to_metrics(self, seconds: float, workers: int) -> dict[str, Any]:
        return {
            "n_conversations": self.n_conversations,
            "n_replacements": sum(self.by_type.values()),
            "replacements_by_type": dict(sorted(self.by_type.items())),
            "replacements_by_method": dict(sorted(self.by_method.items())),
            # surrogate mode: spans of a type without a generator kept their placeholder
            "surrogate_fallbacks_by_type": dict(sorted(self.fallbacks.items())),
            "seconds": round(seconds, 3),
            "chars_per_second": round(self.n_chars / seconds, 1) if seconds else 0.0,
            "workers": workers,
        }


def anonymize_stream(
    conversations: Iterable[Conversation],
    config: AnonymizeConfig,
    *,
    base_dir: Path,
    workers: int = 1,
    key: SurrogateKey | None = None,
    usage: dict[str, Any] | None = None,
    base_model: Path | None = None,
) -> Iterator[tuple[Conversation, Result]]:
    """Yield (original, (anonymized, replacements)) in input order.

    The detector and policy are built here, before the first conversation is read (with
    ``workers``, each worker builds its own: their policy files and the NER's model are
    checked here), so a bad one is named before any input is read or output opened.

    Args:
        usage: filled, once the stream is exhausted, with what the detector asked of a
            remote service (DLP's requests, bytes, cost); a service backend runs in one process.
        base_model: the base_model stage's folder (``factory.build_detector``).
    """
    if workers <= 1:
        detector = factory.build_detector(config, base_dir, base_model=base_model)
        policy = factory.anonymization_policy(config, base_dir, key=key, base_model=base_model)
        return _in_process(
            conversations, config.batch_size, detector=detector, policy=policy, usage=usage
        )
    factory.check_policy_files(config, base_dir, base_model=base_model)
    return _in_pool(
        conversations, config, base_dir=base_dir, workers=workers, key=key, base_model=base_model
    )


def _in_process(
    conversations: Iterable[Conversation],
    batch_size: int,
    *,
    detector: Detector,
    policy: AnonymizationPolicy,
    usage: dict[str, Any] | None,
) -> Iterator[tuple[Conversation, Result]]:
    for batch in _batches(conversations, batch_size):
        yield from zip(batch, run_batch(batch, detector, policy=policy), strict=True)
    report = getattr(detector, "usage_metrics", None)
    if usage is not None and callable(report):
        usage.update(report())


def _in_pool(
    conversations: Iterable[Conversation],
    config: AnonymizeConfig,
    *,
    base_dir: Path,
    workers: int,
    key: SurrogateKey | None,
    base_model: Path | None,
) -> Iterator[tuple[Conversation, Result]]:
    context = multiprocessing.get_context("fork")
    built = (config, base_dir, key, base_model)
    with context.Pool(workers, initializer=_init_worker, initargs=built) as pool:
        pending: deque[tuple[list[Conversation], Any]] = deque()
        for batch in _batches(conversations, config.batch_size):
            pending.append((batch, pool.apply_async(_worker_batch, (batch,))))
            if len(pending) >= 2 * workers:
                done, job = pending.popleft()
                yield from zip(done, job.get(), strict=True)
        while pending:
            done, job = pending.popleft()
            yield from zip(done, job.get(), strict=True)


def _batches(conversations: Iterable[Conversation], size: int) -> Iterator[list[Conversation]]:
    iterator = iter(conversations)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def run_batch(
    batch: list[Conversation], detector: Detector, *, policy: AnonymizationPolicy
) -> list[Result]:
    return list(anonymize_corpus(batch, detector, policy=policy, batch_size=len(batch)))


_WORKER: dict[str, Any] = {}  # this worker process's detector and policy, built once


def _init_worker(  # noqa: PLR0917 (the pool's initializer takes initargs positionally)
    config: AnonymizeConfig, base_dir: Path, key: SurrogateKey | None, base_model: Path | None
) -> None:
    try:
        _WORKER["detector"] = factory.build_detector(config, base_dir, base_model=base_model)
        _WORKER["policy"] = factory.anonymization_policy(
            config, base_dir, key=key, base_model=base_model
        )
    except Exception as error:
        # A worker whose initializer raises dies, and the pool starts another in its place,
        # which fails the same way: the stream would wait forever. Its batches fail instead.
        _WORKER["error"] = error


def _worker_batch(batch: list[Conversation]) -> list[Result]:
    if "error" in _WORKER:
        raise _WORKER["error"]
    return run_batch(batch, _WORKER["detector"], policy=_WORKER["policy"])
