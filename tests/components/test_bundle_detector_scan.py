"""The bundle's detector scan on the real detector: findings confirmed in the raw corpus."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from components.anonymize.term_lists import term_lists
from components.bundle_detector_scan import (
    DetectorScanPolicy,
    corpus_values,
    html_text,
    mask_records,
)

RAW = [
    {"id": "c1", "turns": [{"speaker": "Agent", "text": "Who am I speaking with?"},
                           {"speaker": "Caller", "text": "Maria Gonzalez, call 555-867-5309."}],
     "labels": {"crm": {"caller_name": "Maria Gonzalez", "login": "jsmith_1984"}}},
]  # fmt: skip


@pytest.fixture
def policy(detector, tmp_path: Path) -> DetectorScanPolicy:  # type: ignore[no-untyped-def]
    raw = tmp_path / "corpus.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in RAW))
    return DetectorScanPolicy(detector, term_lists({"PERSON_NAME": ["Hermione"]}, {}), raw, 4)


def test_a_corpus_value_in_any_text_file_is_a_leak(policy: DetectorScanPolicy) -> None:
    files = [
        ("report.html", b"<html><body><p>Reviewed by <b>Maria Gonzalez</b>.</p></body></html>"),
        ("metrics/x.json", json.dumps({"note": "callback 555-867-5309"}).encode()),
        ("review/s.jsonl", json.dumps({"labels": {"login": "jsmith_1984"}}).encode() + b"\n"),
        ("clean.md", b"The adapter was reviewed by Zorbulan Quixtrel, who is no caller."),
    ]
    scan = policy.scan(files)
    assert not scan.passed
    assert set(scan.leaks) == {"report.html", "metrics/x.json", "review/s.jsonl"}
    assert scan.leaks["report.html"] == {"PERSON_NAME": 1}
    # a name the detector finds but the corpus never held is veiltune's own text, not a leak
    assert "clean.md" not in scan.leaks and scan.n_candidates >= 4
    record = json.dumps(scan.to_record())
    assert "Maria" not in record and "5309" not in record and "jsmith" not in record


def test_placeholders_exclusions_and_common_words_are_not_findings(
    policy: DetectorScanPolicy,
) -> None:
    files = [
        ("a.md", b"[PERSON_NAME_1] called [ORGANIZATION_NAME_2] about [USER_NAME_1]."),
        ("b.md", b"Hermione asked about the refund."),  # excluded by the policy
        ("c.md", b"Maria asked about the refund."),  # a lone common first name proves nothing
    ]
    assert policy.scan(files).passed


def test_corpus_values_match_whole_word_sequences(tmp_path: Path) -> None:
    raw = tmp_path / "corpus.jsonl"
    raw.write_text(json.dumps(RAW[0]) + "\n")
    assert corpus_values(raw, {"maria gonzalez", "gonzalez maria", "jsmith 1984", "smith"}) == {
        "maria gonzalez", "jsmith 1984",
    }  # fmt: skip


def test_html_text_is_what_a_reader_sees() -> None:
    page = "<html><head><style>p{x:1}</style></head><body><p>A &amp; B</p><p> </p>C</body></html>"
    assert html_text(page).splitlines() == ["p{x:1}", "A & B", "C"]


def test_review_records_have_detector_findings_masked_but_keep_their_id(
    policy: DetectorScanPolicy,
) -> None:
    records = [{"id": "jsmith_1984", "turns": [{"speaker": "[PERSON_NAME_1]",
                                               "text": "My login is jsmith_1984, I'm Maria Gonzalez"}],
                "labels": {"crm": {"callback": "555-867-5309"}}}]  # fmt: skip
    counts: Counter[str] = Counter()
    (masked,) = mask_records(records, policy, counts)
    text = json.dumps(masked)
    assert "Gonzalez" not in text and "5309" not in text and "login is jsmith" not in text
    assert masked["id"] == "jsmith_1984" and masked["turns"][0]["speaker"] == "[PERSON_NAME_1]"
    assert "[RESIDUAL_PERSON_NAME]" in masked["turns"][0]["text"]
    assert counts["PERSON_NAME"] == 1 and sum(counts.values()) >= 3
