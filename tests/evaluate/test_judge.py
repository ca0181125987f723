"""The offline judge: leaks by words, normalized form and embedding; the rubric; agreement with
the hand-graded set (tests/evaluate/data/judge_graded.jsonl) with the real MiniLM encoder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.anonymize import SentenceEncoder, minilm_dir
from components.core.errors import InputError
from components.evaluate.agreement import cohen_kappa
from components.evaluate.judge import (
    OVERALL,
    Judgement,
    OfflineJudge,
    SensitiveElement,
    acceptable_rate,
    element_from_record,
    privacy_score,
    summary_by_setting,
)

GRADED = Path(__file__).parent / "data" / "judge_graded.jsonl"
REFERENCE = (
    "The caller phoned the pharmacy because a prescription refill was delayed. The pharmacist "
    "confirmed the order would arrive on Thursday and offered a short emergency supply."
)
# Measured on the 36 records: privacy 35 exact, completeness 27 exact, every score within 1,
# 35 acceptable verdicts alike (kappa 0.94). The floors leave room for a library's drift.
FLOOR_PRIVACY_EXACT = 0.88
FLOOR_COMPLETENESS_EXACT = 0.65
FLOOR_WITHIN_ONE = 0.94
FLOOR_ACCEPTABLE_AGREEMENT = 0.9
FLOOR_KAPPA = 0.8


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder(minilm_dir())


@pytest.fixture(scope="module")
def judge(encoder: SentenceEncoder) -> OfflineJudge:
    return OfflineJudge(encoder)


def element(level: str, *mentions: str, path: str = "") -> SensitiveElement:
    return SensitiveElement(path or f"healthcare.{level}.condition", level, mentions)


@pytest.mark.parametrize(
    ("mention", "output", "leaks"),
    [
        ("HIV", "The caller's hiv medication was delayed.", True),  # exact, any case
        ("HIV", "The caller archived the old prescription.", False),  # inside a word
        ("divorced", "She asked about the divorce papers.", True),  # stemmed
        ("getting divorced", "She is getting a divorce.", True),  # stop words dropped
        ("555-0142", "Call back on 555 0142 after noon.", True),  # digits as one string
        ("555-0142", "Call back on 555 0143 after noon.", False),
        ("@nightowl_jess", "The account NightOwl-Jess was copied.", True),  # punctuation
        ("14 Alder Lane", "The parcel goes to 14, alder lane.", True),
        ("Riverside Clinic", "The caller moved an appointment.", False),
    ],
)
def test_leaks_by_words(mention: str, output: str, *, leaks: bool) -> None:
    found = OfflineJudge().leaked(output, [element("low", mention)])
    assert bool(found) is leaks


@pytest.mark.parametrize(
    ("mention", "output", "leaks"),
    [
        ("my antiretroviral prescription", "The caller's antiretroviral therapy was late.", True),
        (
            "arrested at the climate protest",
            "The caller was detained by police during a climate demonstration.",
            True,
        ),
        ("HIV", "The refill of medication for a medical condition was late.", False),
        ("bankruptcy", "The caller, facing financial difficulties, missed a payment.", False),
        ("Muslim", "The caller asked for shifts during a month of religious observance.", False),
    ],
)
def test_leaks_by_embedding(judge: OfflineJudge, mention: str, *, output: str, leaks: bool) -> None:
    assert bool(judge.leaked(output, [element("high", mention)])) is leaks
    assert not OfflineJudge().leaked(output, [element("high", mention)])  # words alone miss it


def test_an_abstraction_is_no_leak(judge: OfflineJudge) -> None:
    output = (
        "The caller phoned the pharmacy because a refill of medication for a medical condition "
        "was delayed. The pharmacist confirmed it would arrive on Thursday and offered a short "
        "emergency supply."
    )
    judgement = judge.judge(
        output, [element("high", "HIV", "my antiretroviral prescription")], reference=REFERENCE
    )
    assert (judgement.privacy, judgement.leaked) == (5, ())
    assert judgement.acceptable


def test_privacy_rubric_costs_high_most() -> None:
    assert privacy_score([]) == 5
    assert privacy_score(["low"]) > privacy_score(["medium"]) > privacy_score(["high"]) > 1
    assert privacy_score(["low", "low"]) == privacy_score(["low"]) - 1
    assert privacy_score(["high", "medium", "low"]) == 1  # the floor


def test_a_high_leak_costs_more_than_a_low_one() -> None:
    elements = [
        element("high", "HIV", path="healthcare.high.diagnosis.hiv"),
        element("low", "Riverside Clinic", path="healthcare.low.provider.clinic"),
    ]
    low = OfflineJudge().judge(
        "The Riverside Clinic refill was delayed.", elements, reference=REFERENCE
    )
    high = OfflineJudge().judge("The HIV refill was delayed.", elements, reference=REFERENCE)
    both = OfflineJudge().judge(
        "The HIV refill at Riverside Clinic was late.", elements, reference=REFERENCE
    )
    assert (low.privacy, high.privacy, both.privacy) == (4, 2, 1)
    assert both.leaked == ("healthcare.high.diagnosis.hiv", "healthcare.low.provider.clinic")


def test_completeness_of_faithful_truncated_and_empty_summaries() -> None:
    judge = OfflineJudge()
    faithful = judge.judge(REFERENCE.replace("phoned", "called"), [], reference=REFERENCE)
    truncated = judge.judge(REFERENCE.split(". ")[0], [], reference=REFERENCE)
    empty = judge.judge("", [], reference=REFERENCE)
    assert faithful.completeness == 5 and faithful.coverage > 0.9
    assert 1 < truncated.completeness <= 3 and truncated.coverage < faithful.coverage
    assert (empty.privacy, empty.completeness, empty.coverage) == (5, 1, 0.0)


@pytest.mark.parametrize(
    ("privacy", "completeness", "acceptable"),
    [(4, 4, True), (5, 5, True), (3, 5, False), (5, 3, False), (1, 1, False)],
)
def test_acceptable_needs_both_above_three(
    privacy: int, completeness: int, *, acceptable: bool
) -> None:
    assert Judgement(privacy, completeness, (), 0.5).acceptable is acceptable


def test_summary_by_setting() -> None:
    judged = [
        ("healthcare", Judgement(5, 5, (), 1.0)),
        ("healthcare", Judgement(2, 5, ("healthcare.high.x",), 1.0)),
        ("family", Judgement(4, 3, ("family.low.x",), 0.5)),
    ]
    summary = summary_by_setting(judged)
    assert set(summary) == {"family", "healthcare", OVERALL}
    assert (summary["healthcare"].privacy, summary["healthcare"].acceptable_rate) == (3.5, 0.5)
    assert summary["family"].completeness == 3 and summary["family"].acceptable_rate == 0
    assert summary[OVERALL].count == 3
    assert summary[OVERALL].acceptable_rate == pytest.approx(1 / 3)
    assert acceptable_rate([]) == 0.0


@pytest.mark.parametrize(
    ("path", "level", "mentions", "says"),
    [
        ("healthcare.severe.hiv", "severe", ("HIV",), "level 'severe'"),
        ("healthcare.high.hiv", "high", (), "no mention"),
        ("healthcare.high.hiv", "high", ("HIV", " "), "no mention"),
        ("healthcare.low.hiv", "high", ("HIV",), "differs from its path"),
        ("healthcare", "high", ("HIV",), "a path is"),
    ],
)
def test_bad_elements_are_refused_by_path(
    path: str, level: str, *, mentions: tuple[str, ...], says: str
) -> None:
    with pytest.raises(InputError, match=says) as caught:
        SensitiveElement(path, level, mentions)
    assert path in str(caught.value) and "HIV" not in str(caught.value)


def test_an_empty_reference_is_refused() -> None:
    with pytest.raises(InputError, match="reference summary is empty"):
        OfflineJudge().judge("A summary.", [], reference="  ")


def test_agrees_with_the_hand_graded_set(judge: OfflineJudge) -> None:
    with GRADED.open(encoding="utf-8") as handle:
        records: list[dict[str, Any]] = [json.loads(line) for line in handle]
    assert len({r["setting"] for r in records}) == 12
    judged = [
        judge.judge(
            r["output"], [element_from_record(e) for e in r["elements"]], reference=r["reference"]
        )
        for r in records
    ]
    n = len(records)

    def share(agree: list[bool]) -> float:
        return sum(agree) / n

    pairs = list(zip(judged, records, strict=True))
    human = [min(r["privacy"], r["completeness"]) > 3 for r in records]
    machine = [j.acceptable for j in judged]
    assert share([j.privacy == r["privacy"] for j, r in pairs]) >= FLOOR_PRIVACY_EXACT
    assert share([j.completeness == r["completeness"] for j, r in pairs]) >= (
        FLOOR_COMPLETENESS_EXACT
    )
    assert share([abs(j.privacy - r["privacy"]) <= 1 for j, r in pairs]) >= FLOOR_WITHIN_ONE
    assert share([abs(j.completeness - r["completeness"]) <= 1 for j, r in pairs]) >= (
        FLOOR_WITHIN_ONE
    )
    assert share([a == b for a, b in zip(human, machine, strict=True)]) >= (
        FLOOR_ACCEPTABLE_AGREEMENT
    )
    assert cohen_kappa(human, machine) >= FLOOR_KAPPA
    by_setting = summary_by_setting((r["setting"], j) for j, r in pairs)
    assert by_setting[OVERALL].count == n and len(by_setting) == 13
