"""A precision–recall curve over one detector setting (``veiltune evaluate-detection
--sweep lm_probability.p=1e-4,1e-3,...``): the labelled texts are detected once, and each
value only re-thresholds (the LM's word probabilities, the entity engine's spans are kept)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.anonymize.config import AnonymizeConfig
from components.anonymize.engine import Detector
from components.anonymize.evaluation.datasets import LabelledText
from components.anonymize.evaluation.run import evaluate_detection
from components.anonymize.factory import WORD_LEVEL_BUILDERS, build_detector, entity_detector
from components.anonymize.lm_probability import LmProbabilityDetector
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.spans import Span
from components.core.errors import ParamsError

# What a sweep may vary (a dotted key of anonymize's params) and the detector it changes.
SWEEPABLE = {"lm_probability.p": "lm_probability", "vocab_threshold": "vocab_threshold"}


def parse_sweep(spec: str) -> tuple[str, list[float]]:
    """``KEY=V1,V2,...`` as the key and its values, in the order given.

    Raises:
        ParamsError: an unknown key, or a value that is not a number.
    """
    key, _, listed = spec.partition("=")
    if key not in SWEEPABLE:
        raise ParamsError(
            f"--sweep {spec}: the key is one of {', '.join(SWEEPABLE)} (anonymize.<key>)"
        )
    try:
        values = [float(v) for v in listed.split(",") if v.strip()]
    except ValueError as exc:
        raise ParamsError(f"--sweep {spec}: values are numbers, comma-separated") from exc
    if not values:
        raise ParamsError(f"--sweep {spec}: no values (e.g. {key}=0.0001,0.001,0.01)")
    return key, values


def with_value(config: AnonymizeConfig, key: str, *, value: float) -> AnonymizeConfig:
    """``config`` with ``anonymize.<key>`` set (validated: a bad value names the key)."""
    if key == "vocab_threshold":
        if not float(value).is_integer():
            raise ParamsError(f"anonymize.vocab_threshold: an integer, not {value}")
        return dataclasses.replace(config, vocab_threshold=int(value))
    settings = dataclasses.replace(config.lm_probability, p=value)
    return dataclasses.replace(config, lm_probability=settings)


def sweep_detection(
    items: Sequence[LabelledText],
    config: AnonymizeConfig,
    *,
    base_dir: Path,
    policy: AnonymizationPolicy,
    key: str,
    values: Sequence[float],
) -> list[dict[str, Any]]:
    """One row of scores per value of ``key``, the other detectors of
    ``anonymize.detectors`` beside it as configured.

    Raises:
        ParamsError: ``key``'s detector is not among ``anonymize.detectors``.
    """
    varied = SWEEPABLE[key]
    if varied not in config.detectors:
        raise ParamsError(
            f"--sweep {key}: {varied} is not among anonymize.detectors "
            f"({', '.join(config.detectors)}); add it, e.g. --detectors entities,{varied}"
        )
    fixed: dict[str, Detector] = {
        name: Memo(
            entity_detector(config, base_dir)
            if name == "entities"
            else WORD_LEVEL_BUILDERS[name](config, base_dir)
        )
        for name in config.detectors
        if name != varied
    }
    scorer = None
    if varied == "lm_probability":
        lm = WORD_LEVEL_BUILDERS["lm_probability"](config, base_dir)
        assert isinstance(lm, LmProbabilityDetector)
        scorer = Memo(lm.scorer)
    rows = []
    for value in values:
        setting = with_value(config, key, value=value)
        built = dict(fixed)
        if scorer is not None:
            built[varied] = LmProbabilityDetector(
                scorer, setting.lm_probability.p, setting.lm_probability.batch_size
            )
        detector = build_detector(setting, base_dir, built=built)
        started = time.perf_counter()
        metrics, _ = evaluate_detection(
            items, detector, policy=policy, batch_size=config.batch_size
        )
        seconds = round(time.perf_counter() - started, 2)
        rows.append({key: value, **_row(metrics), "seconds": seconds})
    return rows


def _row(metrics: dict[str, Any]) -> dict[str, Any]:
    """The sweep's columns of one value's scores, with the character F1."""
    precision, recall = metrics["char_precision"], metrics["char_recall"]
    f1 = round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0
    return {
        "char_precision": precision,
        "char_recall": recall,
        "char_f1": f1,
        "entity_recall": metrics["entity_recall"],
        "masked_word_share": metrics["masked_word_share"],
    }


class Memo:
    """A detector's (or word scorer's) answers kept by text and context: asked again for a
    text it has seen, it answers from memory. Counts the characters it asked the detector
    about and the seconds that took (its throughput, memory left out)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._known: dict[tuple[str, str], Any] = {}
        self.chars = 0
        self.seconds = 0.0

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        return self._answers(texts, None, ask=lambda todo, _: self.inner.detect(todo, batch_size))

    def detect_in_context(
        self, texts: Sequence[str], contexts: Sequence[str], *, batch_size: int = 64
    ) -> list[list[Span]]:
        if not hasattr(self.inner, "detect_in_context"):
            return self.detect(texts, batch_size)
        return self._answers(
            texts,
            contexts,
            ask=lambda todo, ctx: self.inner.detect_in_context(todo, ctx, batch_size=batch_size),
        )

    def score(
        self, texts: Sequence[str], batch_size: int = 8, *, contexts: Sequence[str] | None = None
    ) -> list[Any]:
        return self._answers(
            texts,
            contexts,
            ask=lambda todo, ctx: (
                self.inner.score(todo, batch_size, contexts=ctx)
                if ctx is not None
                else self.inner.score(todo, batch_size)
            ),
        )

    def usage_metrics(self) -> dict[str, Any]:
        report = getattr(self.inner, "usage_metrics", None)
        return dict(report()) if callable(report) else {}

    def _answers(
        self, texts: Sequence[str], contexts: Sequence[str] | None, *, ask: Any
    ) -> list[Any]:
        keys = [(t, contexts[i] if contexts is not None else "") for i, t in enumerate(texts)]
        todo = list(dict.fromkeys(k for k in keys if k not in self._known))
        if todo:
            started = time.perf_counter()
            answers = ask(
                [t for t, _ in todo], [c for _, c in todo] if contexts is not None else None
            )
            self.seconds += time.perf_counter() - started
            self.chars += sum(len(t) for t, _ in todo)
            self._known.update(zip(todo, answers, strict=True))
        return [self._known[k] for k in keys]
