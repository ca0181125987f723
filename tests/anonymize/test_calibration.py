"""Operating points: the calibration file, its errors, and the search that writes it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from components.anonymize.calibration import Thresholds, read_thresholds, write_calibration
from components.anonymize.config import DEFAULT_INFO_TYPES, AnonymizeConfig, NerConfig
from components.anonymize.evaluation.calibrate import Calibration, ascend, calibrate
from components.anonymize.evaluation.datasets import GoldSpan, LabelledText
from components.anonymize.factory import build_detector
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.spans import Span, resolve_overlaps
from components.core.errors import InputError, ParamsError

REPO = Path(__file__).resolve().parents[2]


def write(path: Path, points: object) -> Path:
    path.write_text(yaml.safe_dump({"operating_points": points}))
    return path


def test_thresholds_by_recognizer_then_type_then_default(tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.yaml",
        {
            "balanced": {
                "recognizers": {"UnfamiliarWordRecognizer": 0.4},
                "info_types": {"GENERIC_ID": 0.5},
                "beta": 2.0,
                "measured": {"wnut17": {"char_precision": 0.5}},
            },
            "recall": {},
        },
    )
    thresholds = read_thresholds(
        path, "balanced", default=0.35, known_info_types=DEFAULT_INFO_TYPES
    )
    assert thresholds.keep(Span(0, 3, "PERSON_NAME", 0.4, "UnfamiliarWordRecognizer"))
    assert not thresholds.keep(Span(0, 3, "PERSON_NAME", 0.39, "UnfamiliarWordRecognizer"))
    assert not thresholds.keep(Span(0, 3, "GENERIC_ID", 0.45, "SpokenCharactersRecognizer"))
    assert thresholds.keep(Span(0, 3, "PERSON_NAME", 0.35, "SpacyRecognizer"))
    assert thresholds.floor == 0.35
    recall = read_thresholds(path, "recall", default=0.35, known_info_types=DEFAULT_INFO_TYPES)
    assert recall.recognizers == {} and recall.keep(Span(0, 3, "X", 0.35, "Y"))


@pytest.mark.parametrize(
    ("points", "message"),
    [
        (
            {"balanced": {"recognizers": {"X": 1.5}}},
            r"c.yaml: .*recognizers.X: 1.5 is not a threshold in \[0, 1\]",
        ),
        ({"balanced": {"recognizers": {"X": -0.1}}}, r"recognizers.X: -0.1 is not a threshold"),
        ({"balanced": {"recognizers": {"X": True}}}, r"recognizers.X: True is not a threshold"),
        (
            {"balanced": {"info_types": {"SHOE_SIZE": 0.5}}},
            r"info_types.SHOE_SIZE: not an info type",
        ),
        ({"balanced": {"scores": {}}}, r"operating_points.balanced.scores: unknown"),
        ({"balanced": {}, "sloppy": {}}, r"operating_points.sloppy: unknown"),
        ({"recall": {}}, r"operating_points.balanced: missing"),
        ({"balanced": {"recognizers": ["X"]}}, r"recognizers: a mapping is needed"),
        ("balanced", r"operating_points: a mapping"),
    ],
)
def test_bad_calibration_files_name_the_file_and_key(
    tmp_path: Path, points: object, *, message: str
) -> None:
    path = write(tmp_path / "c.yaml", points)
    with pytest.raises(InputError, match=message):
        read_thresholds(path, "balanced", default=0.35, known_info_types=DEFAULT_INFO_TYPES)


def test_missing_or_unreadable_calibration_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such calibration file"):
        read_thresholds(
            tmp_path / "none.yaml", "balanced", default=0.35, known_info_types=DEFAULT_INFO_TYPES
        )
    (tmp_path / "bad.yaml").write_text("operating_points: [unclosed")
    with pytest.raises(InputError, match="bad.yaml: not a YAML calibration file"):
        read_thresholds(
            tmp_path / "bad.yaml", "balanced", default=0.35, known_info_types=DEFAULT_INFO_TYPES
        )


def test_unknown_recognizer_is_refused_by_the_backend_that_lacks_it(
    tmp_path: Path, detector: object
) -> None:
    write(tmp_path / "c.yaml", {"balanced": {"recognizers": {"UnfamilarWordRecognizer": 0.4}}})
    config = AnonymizeConfig(calibration="c.yaml", ner=NerConfig(model=None))
    with pytest.raises(InputError, match=r"c.yaml: .*recognizers.UnfamilarWordRecognizer: no such"):
        build_detector(config, tmp_path)
    names = detector.recognizer_names  # type: ignore[attr-defined]
    assert {"UnfamiliarWordRecognizer", "SpacyRecognizer", "AgeRecognizer"} <= names


def test_operating_point_is_checked_by_the_config() -> None:
    with pytest.raises(ParamsError, match="anonymize.operating_point"):
        AnonymizeConfig(operating_point="paranoid")


def test_shipped_calibration_is_valid_and_its_points_order_by_strictness(detector: object) -> None:
    config = AnonymizeConfig()
    assert config.calibration is not None
    points = {
        point: read_thresholds(
            REPO / config.calibration, point, default=0.35, known_info_types=DEFAULT_INFO_TYPES
        )
        for point in ("recall", "balanced", "precision")
    }
    for thresholds in points.values():
        thresholds.check_recognizers(detector.recognizer_names)  # type: ignore[attr-defined]
    # a stricter point never keeps a span a looser one drops
    for name in {n for t in points.values() for n in t.recognizers}:
        span = Span(0, 1, "PERSON_NAME", 0.0, name)
        levels = [points[p].threshold(span) for p in ("recall", "balanced", "precision")]
        assert levels == sorted(levels), name


class _Backend:
    """Candidates by rule: "Noisy" finds every capitalized word at 0.4 and real names at
    0.8, "Good" finds names at 0.5, "Rare" finds one short name, too little evidence;
    "Cued" needs context, so its 0.3 matches stay under the engine's threshold."""

    context_recognizer_names = frozenset({"Cued"})

    def candidates(
        self, texts: Sequence[str], score_floor: float, *, batch_size: int = 64
    ) -> list[list[Span]]:
        found = []
        for text in texts:
            spans = []
            for word_start, word in _words(text):
                end = word_start + len(word)
                if word.startswith("Name"):
                    spans += [Span(word_start, end, "PERSON_NAME", 0.8, "Noisy")]
                    spans += [Span(word_start, end, "PERSON_NAME", 0.5, "Good")]
                elif word[0].isupper():
                    spans += [Span(word_start, end, "PERSON_NAME", 0.4, "Noisy")]
                if word == "Zed":
                    spans += [Span(word_start, end, "PERSON_NAME", 0.2, "Rare")]
                    spans += [Span(word_start, end, "PERSON_NAME", 0.3, "Cued")]
            found.append(spans)
        return found

    def finish(self, text: str, candidates: list[Span], *, thresholds: Thresholds) -> list[Span]:
        return resolve_overlaps([s for s in candidates if thresholds.keep(s)])


def _words(text: str) -> list[tuple[int, str]]:
    out, position = [], 0
    for word in text.split(" "):
        out.append((position, word))
        position += len(word) + 1
    return out


def _labelled(n: int) -> list[LabelledText]:
    items = []
    for i in range(n):
        text = f"Then Namealpha{i:03d} met Zed Over There"
        start = len("Then ")
        gold = [GoldSpan(start, start + len(f"Namealpha{i:03d}"), "PERSON_NAME")]
        zed = text.index("Zed")
        items.append(LabelledText(str(i), text, (*gold, GoldSpan(zed, zed + 3, "PERSON_NAME"))))
    return items


def test_ascent_raises_a_noisy_recognizer_and_leaves_one_without_evidence() -> None:
    calibration = Calibration(
        {"a": _labelled(20), "b": _labelled(10)},
        _Backend(),
        policy=AnonymizationPolicy(),
        default=0.35,
    )
    untuned = calibration.score_all(Thresholds(0.35))
    thresholds = ascend(calibration, beta=1.0)
    # Noisy's capitalized common words (0.4) go; its names (0.8) and Good's stay.
    assert thresholds.recognizers.get("Noisy") == 0.8
    assert "Rare" not in thresholds.recognizers  # 30 x 3 chars < MIN_EVIDENCE_CHARS
    assert thresholds.recognizers.get("Cued", 0.35) >= 0.35  # its context requirement holds
    from components.anonymize.evaluation.calibrate import objective

    assert objective(calibration.score_all(thresholds), ["a", "b"], beta=1.0) > objective(
        untuned, ["a", "b"], beta=1.0
    )
    points = calibrate(calibration, {"recall": 8.0, "precision": 1.0})
    assert points["precision"]["recognizers"] == {"Noisy": 0.8}
    # the recall point keeps every candidate: each recognizer at its lowest level, but a
    # context-needing one never under the engine's threshold
    loose = Calibration(
        {"a": _labelled(20)}, _Backend(), policy=AnonymizationPolicy(), default=0.45
    )
    recall = calibrate(loose, {"recall": math.inf})["recall"]
    assert recall["recognizers"] == {"Noisy": 0.4} and recall["beta"] == "inf"
    measured = points["precision"]["measured"]["a"]
    assert measured["char_precision"] > 0.9 and 0.0 < measured["char_recall"] < 1.0


def test_a_models_continuous_scores_are_tried_on_a_grid_that_keeps_them() -> None:
    from components.anonymize.evaluation.calibrate import LEVEL_STEP, score_level

    assert [score_level(s) for s in (0.3, 0.4, 0.85, 0.35)] == [0.3, 0.4, 0.85, 0.35]
    scores = [0.5 + i / 1000 for i in range(500)]  # a model's: 500 distinct scores
    levels = sorted({score_level(s) for s in scores})
    assert len(levels) <= 1 / LEVEL_STEP
    assert all(score_level(s) <= s for s in scores)  # a level keeps the spans it stands for


def test_written_calibration_reads_back(tmp_path: Path) -> None:
    document = {
        "calibrated_on": {"a": 3},
        "operating_points": {
            "recall": {"beta": 4.0, "recognizers": {"A": 0.3}, "info_types": {}},
            "balanced": {"beta": 2.0, "recognizers": {"A": 0.4}, "info_types": {}},
            "precision": {"beta": 1.0, "recognizers": {"A": 0.6}, "info_types": {}},
        },
    }
    path = tmp_path / "calibration.yaml"
    write_calibration(path, document)
    assert path.read_text().startswith("# Score thresholds per operating point")
    assert read_thresholds(
        path, "precision", default=0.35, known_info_types=DEFAULT_INFO_TYPES
    ).recognizers == {"A": 0.6}
