from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.anonymize.engine import Detector
from components.core.corpus import Conversation, PiSpan, Turn
from components.core.errors import InputError
from components.export.sources import (
    policy_contents,
    registry_status,
    review_contents,
    utility_contents,
)
from components.ingest.pi_inventory import inventory_entries
from tests.export.fixtures import SALT, inventory

ANONYMIZE = {
    "replacement": "placeholder",
    "exclusions": {"PERSON_NAME": "policy/exclusions/person_name.txt"},
    "dictionaries": {"PERSON_NAME": "policy/dictionaries/person_name.txt"},
}


def policy_folder(root: Path) -> None:
    (root / "policy" / "exclusions").mkdir(parents=True)
    (root / "policy" / "dictionaries").mkdir(parents=True)
    (root / "policy" / "exclusions" / "person_name.txt").write_text("# fillers\nhey\ndude\n")
    (root / "policy" / "dictionaries" / "person_name.txt").write_text(
        "# customers\nMarta Kowalczyk\nJon Arbuckle\n"
    )


def test_policy_bundles_exclusions_verbatim_and_dictionaries_by_hash_only(tmp_path: Path) -> None:
    policy_folder(tmp_path)
    contents, summary = policy_contents(ANONYMIZE, tmp_path)
    assert contents["policy/exclusions/PERSON_NAME.txt"] == (
        tmp_path / "policy" / "exclusions" / "person_name.txt"
    )
    assert json.loads(contents["policy/anonymize.json"]) == ANONYMIZE  # type: ignore[arg-type]
    listed = json.loads(contents["policy/dictionaries.json"])  # type: ignore[arg-type]
    assert listed["lists"]["PERSON_NAME"]["n_terms"] == 2
    assert len(listed["lists"]["PERSON_NAME"]["sha256"]) == 64
    bundled = b"".join(
        c if isinstance(c, bytes) else c.read_bytes() for c in contents.values()
    ).lower()
    assert b"kowalczyk" not in bundled and b"arbuckle" not in bundled
    assert summary["exclusions"] == {"PERSON_NAME": 2}


def test_a_missing_policy_list_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"anonymize\.dictionaries\.PERSON_NAME"):
        policy_contents({"dictionaries": {"PERSON_NAME": "policy/absent.txt"}}, tmp_path)


def test_review_sample_is_bundled_with_residual_values_masked(tmp_path: Path) -> None:
    review = tmp_path / "review"
    review.mkdir()
    record = {
        "id": "c1",
        "context": "sales",
        "risk_band": "high",
        "turns": [
            {
                "speaker": "[PERSON_NAME_1]",
                "text": "this is Marta Kowalczyk at [ORGANIZATION_NAME_1]",
            }
        ],
    }
    (review / "review_sample.jsonl").write_text(json.dumps(record) + "\n")
    (review / "review.html").write_text("<p>Marta Kowalczyk</p>")
    (review / "annotated_risk.json").write_text('{"rows": []}')
    contents, summary = review_contents(review, inventory(), salt=SALT, min_chars=4)
    assert set(contents) == {
        "review/review_sample.jsonl",
        "review/review.html",
        "review/annotated_risk.json",
    }
    sample = json.loads(contents["review/review_sample.jsonl"])  # type: ignore[arg-type]
    assert sample["turns"][0]["text"] == ("this is [RESIDUAL_PERSON_NAME] at [ORGANIZATION_NAME_1]")
    page = contents["review/review.html"]
    assert isinstance(page, bytes)
    assert b"Kowalczyk" not in page and b"[RESIDUAL_PERSON_NAME]" in page
    assert summary == {
        "n_records": 1,
        "residual_masked": {"PERSON_NAME": 1},
        "detector_masked": {},
    }


def test_review_sample_values_no_inventory_knows_are_masked_by_the_detector(
    tmp_path: Path,
    detector: Detector,
) -> None:
    from components.anonymize.factory import DEFAULT_SPEAKER_ROLES
    from components.anonymize.policy import AnonymizationPolicy
    from components.export.detector_scan import DetectorScanPolicy

    review = tmp_path / "review"
    review.mkdir()
    record = {
        "id": "c1",
        "context": "sales",
        "risk_band": "high",
        "turns": [{"speaker": "Agent", "text": "Thanks, I have your number."}],
        "labels": {"crm": {"caller_name": "Dariusz Wojciechowski", "callback": "(555) 867-5309"}},
    }
    (review / "review_sample.jsonl").write_text(json.dumps(record) + "\n")
    (review / "review.html").write_text("<p>old page</p>")
    roles = AnonymizationPolicy(speaker_roles=DEFAULT_SPEAKER_ROLES)
    policy = DetectorScanPolicy(detector, roles, tmp_path / "unused.jsonl", 4)
    contents, summary = review_contents(review, [], salt=SALT, min_chars=4, detector=policy)
    bundled = b"".join(c for c in contents.values() if isinstance(c, bytes))
    assert b"Wojciechowski" not in bundled and b"5309" not in bundled
    assert summary["residual_masked"] == {} and sum(summary["detector_masked"].values()) == 2


def test_the_utility_report_is_optional(tmp_path: Path) -> None:
    assert utility_contents(tmp_path / "absent") == ({}, None, None)
    folder = tmp_path / "utility"
    folder.mkdir()
    (folder / "utility.json").write_text('{"variants": {}}')
    (folder / "utility.png").write_bytes(b"\x89PNG")
    contents, report, png = utility_contents(folder)
    assert set(contents) == {"utility/utility.json", "utility/utility.png"}
    assert report == {"variants": {}} and png == b"\x89PNG"
    (folder / "utility.json").write_text("{")
    with pytest.raises(InputError, match="utility.json: malformed JSON"):
        utility_contents(folder)


def test_aliases_are_read_live_from_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    client = MlflowClient()
    client.create_registered_model("m")
    for _ in range(2):
        client.create_model_version("m", source=(tmp_path / "model").as_uri())
    client.set_registered_model_alias("m", "candidate", "1")
    client.set_registered_model_alias("m", "champion", "2")  # moved on since register ran
    register = {"model_name": "m", "model_version": "1", "aliases": ["candidate", "champion"]}
    live = registry_status(register)
    assert live["aliases"] == ["candidate"] and live["champion_version"] == "2"
    assert live["aliases_source"] == "MLflow model registry at export time"
    fallback = registry_status({**register, "model_name": "never-registered"})
    assert fallback["aliases"] == ["candidate", "champion"]
    assert fallback["aliases_source"].startswith("metrics/register.json")


def test_a_common_word_is_masked_only_in_its_own_conversation(tmp_path: Path) -> None:
    shelby = Conversation(
        "c2", (Turn(None, "This is Shelby."),), pi=(PiSpan(0, 8, 14, "PERSON_NAME", "p1"),)
    )
    entries = [*inventory(), *inventory_entries([shelby], SALT)]
    assert not entries[-1].specific  # a lone common first name
    review = tmp_path / "review"
    review.mkdir()
    records = [
        {"id": "c2", "turns": [{"speaker": None, "text": "shelby here, hi"}]},
        {"id": "c9", "turns": [{"speaker": None, "text": "the shelby file"}]},
    ]
    (review / "review_sample.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    contents, summary = review_contents(review, entries, salt=SALT, min_chars=4)
    sample = contents["review/review_sample.jsonl"]
    assert isinstance(sample, bytes)
    own, other = (json.loads(line) for line in sample.decode().splitlines())
    assert own["turns"][0]["text"] == "[RESIDUAL_PERSON_NAME] here, hi"
    assert other["turns"][0]["text"] == "the shelby file"
    assert summary["residual_masked"] == {"PERSON_NAME": 1}
