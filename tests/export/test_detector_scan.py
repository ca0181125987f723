"""The bundle's detector scan on the real detector: findings confirmed in the raw corpus."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from components.anonymize.factory import DEFAULT_SPEAKER_ROLES, known_class_labels
from components.anonymize.policy import AnonymizationPolicy
from components.anonymize.term_lists import term_lists
from components.export.detector_scan import (
    DetectorScanPolicy,
    corpus_values,
    html_text,
    mask_records,
)

RAW = [
    {
        "id": "c1",
        "turns": [
            {"speaker": "Agent", "text": "Who am I speaking with?"},
            {"speaker": "Caller", "text": "Maria Gonzalez, call 555-867-5309."},
            {"speaker": "Agent", "text": "Hermione Granger, your phone number."},
            {"speaker": "Caller", "text": "1,000 calls, 2 000 turns, jsmith_1984"},
        ],
        "labels": {"crm": {"caller_name": "Maria Gonzalez", "login": "jsmith_1984"}},
    },
]


@pytest.fixture
def policy(detector, tmp_path: Path) -> DetectorScanPolicy:  # type: ignore[no-untyped-def]
    raw = tmp_path / "corpus.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in RAW))
    terms = term_lists({"PERSON_NAME": ["Hermione Granger"]}, {})
    anonymization = AnonymizationPolicy(
        speaker_roles=DEFAULT_SPEAKER_ROLES, terms=terms, class_labels=known_class_labels({})
    )
    return DetectorScanPolicy(detector, anonymization, raw, 4)


def test_a_corpus_value_in_any_text_file_is_a_leak(policy: DetectorScanPolicy) -> None:
    files = [
        ("report.html", b"<html><body><p>Reviewed by <b>Maria Gonzalez</b>.</p></body></html>"),
        ("metrics/x.json", json.dumps({"note": "callback 555-867-5309"}).encode()),
        ("model_card.md", b"Trained for Maria Gonzalez."),
        ("review/s.jsonl", json.dumps({"text": "Maria Gonzalez"}).encode() + b"\n"),
        ("clean.md", b"The adapter was reviewed by Zorbulan Quixtrel, who is no caller."),
    ]
    scan = policy.scan(files, masked=("review/",))
    assert not scan.passed
    assert set(scan.leaks) == {"report.html", "metrics/x.json", "model_card.md"}
    assert scan.leaks["report.html"] == {"PERSON_NAME": 1}
    # a name the detector finds but the corpus never held is veiltune's own text, not a leak;
    # the review sample was masked by the detector already and is not read again
    assert "clean.md" not in scan.leaks and scan.n_files == 4
    record = json.dumps(scan.to_record())
    assert "Maria" not in record and "5309" not in record


def test_a_value_only_the_detector_finds_stops_the_bundle_before_it_is_written(
    policy: DetectorScanPolicy, tmp_path: Path
) -> None:
    # A corpus without labels has no inventory: the detector still finds the value, and the
    # raw corpus confirms it (the end-to-end test plants one through `veiltune export`).
    from components.core.errors import LeakageDetected
    from components.export.compliance import PiScanPolicy, write_scanned_bundle

    contents: dict[str, Any] = {
        "metrics/planted.json": json.dumps({"note": "Maria Gonzalez"}).encode(),
        "metrics/clean.json": json.dumps({"rouge1": 0.3}).encode(),
    }
    no_inventory = PiScanPolicy([], "salt", 4, policy)
    bundle = tmp_path / "exports" / "bundle"
    refused = r"detector found values of the raw corpus in the bundle \(metrics/planted.json: "
    with pytest.raises(LeakageDetected, match=refused) as raised:
        write_scanned_bundle(contents, {}, bundle_dir=bundle, make_zip=True, pi=no_inventory)
    assert "Maria" not in str(raised.value) and "nothing was written" in str(raised.value)
    assert not (tmp_path / "exports").exists()


def test_veiltunes_own_vocabulary_is_not_a_finding(policy: DetectorScanPolicy) -> None:
    files = [
        ("a.md", b"[PERSON_NAME_1] called [ORGANIZATION_NAME_2] about [USER_NAME_1]."),
        ("b.md", b"Hermione Granger asked about the refund."),  # excluded by the policy
        ("c.md", b"Maria asked about the refund."),  # a lone common first name proves nothing
        # info types, category codes and keys: identifiers, even where the corpus has the words
        ("params.yaml", b"info_types: [PERSON_NAME, USER_NAME]\nlogin: jsmith_1984\n"),
        ("d.md", b"maria gonzalez, in lowercase, is the vocabulary of a config"),
        ("e.json", json.dumps({"count": "1,000 calls, 2 000 turns"}).encode()),
    ]
    scan = policy.scan(files)
    assert scan.passed, scan.describe_leaks()


@pytest.mark.parametrize(
    ("surface", "identifying"),
    [
        ("Maria Gonzalez", True),
        ("555-867-5309", True),
        ("m.g@example.org", True),
        ("Wojciechowski", True),
        ("Maria", False),
        ("phone number", False),
        ("PHONE", False),
        ("1,000", False),
        ("Customer Support", True),
    ],
)
def test_what_counts_as_a_data_subjects_value(surface: str, identifying: bool) -> None:
    from components.export.detector_scan import identifying as shaped_like_pi

    assert shaped_like_pi(surface) is identifying


def test_corpus_values_match_whole_word_sequences(tmp_path: Path) -> None:
    raw = tmp_path / "corpus.jsonl"
    raw.write_text(json.dumps(RAW[0]) + "\n")
    assert corpus_values(raw, {"maria gonzalez", "gonzalez maria", "jsmith 1984", "smith"}) == {
        "maria gonzalez",
        "jsmith 1984",
    }


def test_html_text_is_what_a_reader_sees() -> None:
    page = "<html><head><style>p{x:1}</style></head><body><p>A &amp; B</p><p> </p>C</body></html>"
    assert html_text(page).splitlines() == ["p{x:1}", "A & B", "C"]


def test_review_records_mask_what_anonymize_would_still_replace(
    policy: DetectorScanPolicy,
) -> None:
    records = [
        {
            "id": "jsmith_1984",
            "context": "customer_support",
            "risk_band": "high",
            "turns": [
                {
                    "speaker": "[PERSON_NAME_1]",
                    "text": "My login is jsmith_1984, I'm Maria Gonzalez",
                },
                {"speaker": "Person2", "text": "Thanks Person2 here, Maria."},
            ],
            "labels": {
                "purpose": "account_access",
                "summary": "Person2 helps the caller.",
                "crm": {"callback": "555-867-5309"},
            },
        }
    ]
    counts: Counter[str] = Counter()
    (masked,) = mask_records(records, policy, counts=counts)
    text = json.dumps(masked)
    assert "Gonzalez" not in text and "5309" not in text and "login is jsmith" not in text
    assert "Maria" not in text  # the name propagates through the conversation, as in anonymize
    # its id, placeholders, roles, known categories and the record's other keys stay
    assert masked["id"] == "jsmith_1984" and masked["risk_band"] == "high"
    assert masked["turns"][0]["speaker"] == "[PERSON_NAME_1]"
    assert masked["turns"][1]["speaker"] == "Person2" and "Person2 helps" in text
    assert masked["labels"]["purpose"] == "account_access"
    assert masked["context"] == "customer_support"
    assert "[RESIDUAL_PERSON_NAME]" in masked["turns"][0]["text"]
    assert counts["PERSON_NAME"] >= 2 and sum(counts.values()) >= 4


ID_CORPUS = [
    {"id": "jane.doe@examplemail.com", "text": "Hello, I need a refund for my order."},
    {"id": "4155550123", "text": "Thanks, that is all."},
]
ID_ITEMS = (
    b'{"conversation_id": "jane.doe@examplemail.com", "score": 0}\n'
    b'{"conversation_id": "4155550123", "score": 4}\n'
)


def id_policy(
    detector: Any, raw: Path, *, original_ids: tuple[str, ...] = ()
) -> DetectorScanPolicy:
    anonymization = AnonymizationPolicy(
        speaker_roles=DEFAULT_SPEAKER_ROLES, class_labels=known_class_labels({})
    )
    return DetectorScanPolicy(detector, anonymization, raw, 4, original_ids=original_ids)


def test_an_original_record_id_is_scanned_like_any_other_value(
    detector: Any,
    tmp_path: Path,
) -> None:
    from components.export.scan import scan_files
    from components.ingest.pseudonyms import IdPseudonyms, id_inventory_entries

    salt = "0" * 32
    ids = IdPseudonyms.of([r["id"] for r in ID_CORPUS], salt, corpus_name="user.jsonl")
    dialogsum = {"id": "dialogsum-dev_1", "turns": [{"speaker": "Person1", "text": "Hi."}]}
    renamed = [*({**r, "id": ids.renamed(r["id"])} for r in ID_CORPUS), dialogsum]
    raw = tmp_path / "corpus.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in renamed))
    card = b"Trained on your corpus and the DialogSum sample (CC BY-NC-SA 4.0)."
    # the detector's findings are confirmed against the original ids the id mapping holds;
    # the raw corpus's own ids (pseudonyms, DialogSum's) confirm nothing
    scan = id_policy(detector, raw, original_ids=tuple(ids.mapping)).scan(
        [("risk/items.jsonl", ID_ITEMS), ("model_card.md", card)]
    )
    assert set(scan.leaks) == {"risk/items.jsonl"}
    assert sum(scan.leaks["risk/items.jsonl"].values()) == 2
    assert id_policy(detector, raw).scan([("risk/items.jsonl", ID_ITEMS)]).passed
    # and the inventory scan finds an original id no detector flags, by keyed hash only
    entries = id_inventory_entries({"CUST-88412": "c-0", **ids.mapping}, salt)
    files = [("a.csv", b"id\nCUST-88412\n"), ("b.jsonl", ID_ITEMS)]
    inventory = scan_files(files, entries, salt=salt, min_chars=4)
    assert inventory.leaks == {"a.csv": {"CONVERSATION_ID": 1}, "b.jsonl": {"CONVERSATION_ID": 2}}
    pseudonyms = "\n".join(ids.mapping.values()).encode()
    assert scan_files([("c.csv", pseudonyms)], entries, salt=salt, min_chars=4).passed
    # a short record number as an id is no finding: a metric's decimals write it by chance
    numbered = id_inventory_entries({"3456": "c-1", "4155550123": "c-2"}, salt)
    assert [e.specific for e in numbered] == [False, True]
    assert scan_files([("m.json", b'{"rouge1": 0.3456}')], numbered, salt=salt, min_chars=4).passed
