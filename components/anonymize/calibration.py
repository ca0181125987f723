"""Score thresholds per recognizer and per info type: the operating point of detection.

A span is kept when its score reaches the threshold of the recognizer that found it, else
that of its info type, else the engine's ``anonymize.score_threshold``. ``veiltune
calibrate`` chooses the thresholds of each operating point from labelled data and writes
them to a policy file (``veiltune/policy/calibration.yaml``); ``anonymize.operating_point``
picks one.

The file::

    operating_points:
      balanced:
        recognizers: {UnfamiliarWordRecognizer: 0.4}   # recognizer name -> threshold
        info_types: {GENERIC_ID: 0.5}                  # DLP info type -> threshold
      recall: ...
      precision: ...

Everything else in it (how it was calibrated, its measured points) is information only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.anonymize.spans import Span
from components.core.config import read_policy_yaml
from components.core.errors import InputError
from components.core.jsonio import write_text_atomic

OPERATING_POINTS = ("recall", "balanced", "precision")
THRESHOLD_KINDS = ("recognizers", "info_types")
INFORMATION_KEYS = ("beta", "measured")  # written by calibrate, read by people only


@dataclass(frozen=True)
class Thresholds:
    """The score a span needs to be kept, by recognizer, then info type, then default."""

    default: float
    recognizers: Mapping[str, float] = field(default_factory=dict)
    info_types: Mapping[str, float] = field(default_factory=dict)
    origin: str = ""  # the file they came from, for messages

    def threshold(self, span: Span) -> float:
        if span.source in self.recognizers:
            return self.recognizers[span.source]
        return self.info_types.get(span.entity_type, self.default)

    def keep(self, span: Span) -> bool:
        return span.score >= self.threshold(span)

    @property
    def floor(self) -> float:
        """The lowest threshold: what the backend must report for ``keep`` to decide."""
        return min([self.default, *self.recognizers.values(), *self.info_types.values()])

    def check_recognizers(self, known: Collection[str]) -> None:
        """Refuse a recognizer name the backend does not have (a typo would keep every span
        of the real one at the default threshold)."""
        for name in sorted(set(self.recognizers) - set(known)):
            raise InputError(
                f"{self.origin}: recognizers.{name}: no such recognizer; known: "
                f"{', '.join(sorted(known))}"
            )


def read_thresholds(
    path: Path, operating_point: str, *, default: float, known_info_types: Collection[str]
) -> Thresholds:
    """The thresholds of ``operating_point`` in the calibration file at ``path``."""
    document = read_policy_yaml(
        path,
        f"{path}: no such calibration file (anonymize.calibration)",
        malformed=f"{path}: not a YAML calibration file",
    )
    points = document.get("operating_points") if isinstance(document, dict) else None
    if not isinstance(points, dict):
        raise InputError(f"{path}: operating_points: a mapping of operating points is needed")
    for name in points:
        if name not in OPERATING_POINTS:
            raise InputError(
                f"{path}: operating_points.{name}: unknown; one of {', '.join(OPERATING_POINTS)}"
            )
    if operating_point not in points:
        raise InputError(
            f"{path}: operating_points.{operating_point}: missing (anonymize.operating_point)"
        )
    key = f"operating_points.{operating_point}"
    point = _mapping(points[operating_point], path, key=key)
    for kind in point:
        if kind not in (*THRESHOLD_KINDS, *INFORMATION_KEYS):
            allowed = ", ".join((*THRESHOLD_KINDS, *INFORMATION_KEYS))
            raise InputError(f"{path}: {key}.{kind}: unknown; one of {allowed}")
    recognizers = _threshold_table(point.get("recognizers"), path, key=f"{key}.recognizers")
    info_types = _threshold_table(point.get("info_types"), path, key=f"{key}.info_types")
    for name in sorted(set(info_types) - set(known_info_types)):
        raise InputError(f"{path}: {key}.info_types.{name}: not an info type veiltune knows")
    return Thresholds(default, recognizers, info_types, f"{path}: {key}")


def _mapping(value: Any, path: Path, *, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{path}: {key}: a mapping is needed")
    return value


def _threshold_table(value: Any, path: Path, *, key: str) -> dict[str, float]:
    table = {}
    for name, threshold in _mapping(value, path, key=key).items():
        number = isinstance(threshold, int | float) and not isinstance(threshold, bool)
        if not number or not 0.0 <= threshold <= 1.0:
            raise InputError(f"{path}: {key}.{name}: {threshold!r} is not a threshold in [0, 1]")
        table[str(name)] = float(threshold)
    return table


def write_calibration(path: Path, document: dict[str, Any]) -> None:
    """Write a calibration document (``operating_points`` and its provenance) atomically."""
    header = (
        "# Score thresholds per operating point, written by `veiltune calibrate`\n"
        "# (docs/detection.md). anonymize.operating_point picks one; edit by hand if you\n"
        "# like: values in [0, 1], recognizer names as `veiltune evaluate-detection` shows.\n"
    )
    body = yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=100)
    write_text_atomic(path, header + body)
