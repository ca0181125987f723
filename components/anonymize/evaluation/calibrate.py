"""Choose each recognizer's score threshold from labelled data, per operating point.

The backend runs once over every labelled text and keeps every candidate span with its
recognizer and score. The ``recall`` point keeps every candidate (each recognizer at its
lowest score level). The others maximize the mean over the data sets of the character
F-beta (``beta`` > 1 weighs recall more: privacy comes first), by coordinate ascent: each
recognizer in turn takes the threshold among its own score levels that does best with the
others fixed, for ``ROUNDS`` passes. A change to one recognizer's threshold
changes only the texts where it has candidates, so only those are scored again.

A recognizer with fewer than ``MIN_EVIDENCE_CHARS`` true-positive characters in the data is
left at the engine's threshold: data that does not label what it finds (medical record
numbers, say) is no evidence that it finds nothing. A recognizer that needs a context word
(its base score sits under the engine's threshold until a word like "username" raises it)
is never given a threshold under the engine's: that would drop the context requirement.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from components.anonymize.calibration import Thresholds
from components.anonymize.engine import detect_batch
from components.anonymize.evaluation.datasets import LabelledText
from components.anonymize.evaluation.scoring import DetectionScore, score_text
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.spans import Span
from components.core.corpus import Conversation, Turn

# beta of each operating point's F-beta: recall counts 2x or as much as precision; the
# recall point (infinite beta) keeps every candidate.
BETAS = {"recall": math.inf, "balanced": 2.0, "precision": 1.0}
ROUNDS = 2
MIN_EVIDENCE_CHARS = 100
# Thresholds are tried on a grid of this step, each score floored onto it (so a level keeps
# every span it stands for). The rule recognizers score on it already (0.3, 0.4, 0.85); a
# model's scores are continuous (the NER's mean token probability), and one level per
# distinct score made an ascent of thousands of levels, each rescoring every text.
LEVEL_STEP = 0.05


class CandidateDetector(Protocol):
    """A backend that reports raw candidates and keeps those thresholds allow."""

    def candidates(
        self, texts: Sequence[str], score_floor: float, *, batch_size: int = ...
    ) -> list[list[Span]]: ...

    def finish(
        self, text: str, candidates: list[Span], *, thresholds: Thresholds
    ) -> list[Span]: ...

    @property
    def context_recognizer_names(self) -> frozenset[str]: ...


@dataclass
class _Text:
    item: LabelledText
    candidates: list[Span]


class _Replay:
    """A Detector over precomputed candidates: the engine's passes run on what it keeps."""

    def __init__(self, backend: CandidateDetector, text: _Text, *, thresholds: Thresholds):
        self._backend, self._text, self._thresholds = backend, text, thresholds

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        """The labelled text's kept candidates; nothing in the record's other fields (its
        context: a labelled text has none of its own)."""
        own = self._text.item.text
        return [
            self._backend.finish(text, self._text.candidates, thresholds=self._thresholds)
            if i == 0 and text == own
            else []
            for i, text in enumerate(texts)
        ]


class Calibration:
    """Candidates of every labelled text, and their scores under any thresholds."""

    def __init__(
        self,
        sets: Mapping[str, Sequence[LabelledText]],
        backend: CandidateDetector,
        *,
        policy: AnonymizationPolicy,
        default: float,
    ) -> None:
        self.backend, self.policy, self.default = backend, policy, default
        self.sets: dict[str, list[_Text]] = {}
        for name, items in sets.items():
            found = backend.candidates([i.text for i in items], 0.0)
            self.sets[name] = [_Text(i, c) for i, c in zip(items, found, strict=True)]
        # recognizer -> its score levels, and the texts where it has candidates
        self.levels: dict[str, list[float]] = defaultdict(list)
        self.where: dict[str, set[tuple[str, int]]] = defaultdict(set)
        for name, texts in self.sets.items():
            for i, text in enumerate(texts):
                for span in text.candidates:
                    self.where[span.source].add((name, i))
                    self.levels[span.source].append(score_level(span.score))
        self.levels = {k: sorted(set(v)) for k, v in self.levels.items()}

    def score_one(self, name: str, i: int, *, thresholds: Thresholds) -> DetectionScore:
        text = self.sets[name][i]
        conversation = Conversation(text.item.id, (Turn(None, text.item.text),), plain=True)
        replay = _Replay(self.backend, text, thresholds=thresholds)
        [(_, spans)] = detect_batch([conversation], replay, policy=self.policy)
        score = DetectionScore()
        score_text(text.item, spans[0], score=score)  # the turn's; the context field is empty
        return score

    def score_all(self, thresholds: Thresholds) -> dict[tuple[str, int], DetectionScore]:
        return {
            (name, i): self.score_one(name, i, thresholds=thresholds)
            for name, texts in self.sets.items()
            for i in range(len(texts))
        }

    def evidence(self, scores: Mapping[tuple[str, int], DetectionScore]) -> dict[str, int]:
        """True-positive characters per recognizer under ``scores``' thresholds."""
        found: dict[str, int] = defaultdict(int)
        for score in scores.values():
            for source, (hits, _) in score.by_source.items():
                found[source] += hits
        return dict(found)


def precision_recall(
    scores: Mapping[tuple[str, int], DetectionScore], names: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """(char precision, char recall) per data set."""
    totals = {name: [0, 0, 0] for name in names}
    for (name, _), score in scores.items():
        total = totals[name]
        total[0] += score.true_positive_chars
        total[1] += score.false_positive_chars
        total[2] += score.false_negative_chars
    return {
        name: (tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0)
        for name, (tp, fp, fn) in totals.items()
    }


def f_beta(precision: float, recall: float, *, beta: float) -> float:
    b2 = beta * beta
    denominator = b2 * precision + recall
    return (1 + b2) * precision * recall / denominator if denominator else 0.0


def objective(
    scores: Mapping[tuple[str, int], DetectionScore], names: Sequence[str], *, beta: float
) -> float:
    """The mean over data sets of the character F-beta."""
    pairs = precision_recall(scores, names).values()
    return sum(f_beta(p, r, beta=beta) for p, r in pairs) / len(names)


def score_level(score: float) -> float:
    """The threshold on the ``LEVEL_STEP`` grid at or just under ``score``."""
    return round(math.floor(score / LEVEL_STEP + 1e-9) * LEVEL_STEP, 4)


def allowed_levels(calibration: Calibration, recognizer: str) -> list[float]:
    """The thresholds a recognizer may take: its score levels, none under the engine's
    threshold when it needs a context word."""
    needs_context = recognizer in calibration.backend.context_recognizer_names
    return [
        level
        for level in calibration.levels[recognizer]
        if not needs_context or level >= calibration.default
    ]


def ascend(calibration: Calibration, beta: float) -> Thresholds:
    """Coordinate ascent on the recognizers' thresholds for one beta (infinite: every
    candidate, each recognizer at its lowest allowed level)."""
    names = list(calibration.sets)
    thresholds = Thresholds(calibration.default)
    evidence = calibration.evidence(calibration.score_all(Thresholds(0.0)))
    tunable = [r for r in sorted(calibration.levels) if evidence.get(r, 0) >= MIN_EVIDENCE_CHARS]
    if math.isinf(beta):
        lowest = {r: min(allowed_levels(calibration, r), default=1.0) for r in tunable}
        below = {r: level for r, level in lowest.items() if level < calibration.default}
        return replace(thresholds, recognizers=below)
    scores = calibration.score_all(thresholds)
    best = objective(scores, names, beta=beta)
    for _ in range(ROUNDS):
        for recognizer in tunable:
            for level in allowed_levels(calibration, recognizer):
                trial = replace(
                    thresholds, recognizers={**thresholds.recognizers, recognizer: level}
                )
                changed = {
                    key: calibration.score_one(*key, thresholds=trial)
                    for key in calibration.where[recognizer]
                }
                trial_scores = {**scores, **changed}
                value = objective(trial_scores, names, beta=beta)
                if value > best + 1e-9:
                    best, thresholds, scores = value, trial, trial_scores
    return thresholds


def calibrate(
    calibration: Calibration, betas: Mapping[str, float] = BETAS
) -> dict[str, dict[str, Any]]:
    """Each operating point's thresholds and what they measure on each data set."""
    names = list(calibration.sets)
    points: dict[str, dict[str, Any]] = {}
    for point, beta in betas.items():
        thresholds = ascend(calibration, beta)
        measured = precision_recall(calibration.score_all(thresholds), names)
        points[point] = {
            "beta": "inf" if math.isinf(beta) else beta,
            "recognizers": dict(sorted(thresholds.recognizers.items())),
            "info_types": {},
            "measured": {
                name: {"char_precision": round(p, 4), "char_recall": round(r, 4)}
                for name, (p, r) in measured.items()
            },
        }
    return points
