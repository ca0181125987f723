"""A user corpus's record ids become keyed pseudonyms at ingest: nothing it writes outside the
owner-only mapping holds an original id, and the split and canaries are those of the
original ids."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from components.core.errors import InputError
from components.ingest.pseudonyms import IdPseudonyms, pseudonym
from components.ingest.sources import split_ids
from tests.conftest import DIALOGSUM_SAMPLE
from veiltune.cli import main

# Ids a CRM export may carry: an e-mail address, a phone number, a customer number.
IDS = ["jane.doe@examplemail.com", "4155550123", "CUST-88412", "maria.g@examplemail.org"]


def user_record(conversation_id: str) -> dict[str, object]:
    return {
        "id": conversation_id,
        "turns": [
            {"speaker": "Agent", "text": "Thanks for calling, how can I help?"},
            {"speaker": "Caller", "text": "I would like to change my address."},
            {"speaker": "Agent", "text": "Done, anything else?"},
        ],
        "labels": {"summary": "The caller changed their address."},
    }


def files_holding(root: Path, values: list[str]) -> set[str]:
    return {
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file() and any(v.lower().encode() in path.read_bytes().lower() for v in values)
    }


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``veiltune ingest`` of a user corpus with PI ids, DialogSum (5 records) and canaries."""
    folder = tmp_path_factory.mktemp("ingest")
    (folder / "mine.jsonl").write_text("".join(json.dumps(user_record(i)) + "\n" for i in IDS))
    params = {
        "ingest": {
            "corpus_path": "mine.jsonl",
            "heldout_fraction": 0.3,
            "canary_types": ["PHONE_NUMBER"],
            "canary_repetitions": [2],
            "dialogsum": {"path": str(DIALOGSUM_SAMPLE), "max_dialogues": 5, "append": "always"},
        }
    }
    (folder / "params.yaml").write_text(json.dumps(params))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["ingest", "--params", "params.yaml"]) == 0
    return folder


def test_no_output_of_ingest_holds_an_original_id(ingested: Path) -> None:
    # not the corpus, splits, canaries, inventory, metrics, nor MLflow's store
    assert files_holding(ingested, IDS) == {"mine.jsonl", "data/raw/id_pseudonyms.jsonl"}
    mapping = ingested / "data/raw/id_pseudonyms.jsonl"
    assert stat.S_IMODE(mapping.stat().st_mode) == 0o600


def test_each_id_has_its_keyed_pseudonym_everywhere_and_veiltunes_own_ids_stay(
    ingested: Path,
) -> None:
    salt = (ingested / "data/raw/salt").read_text().strip()
    lines = (ingested / "data/raw/id_pseudonyms.jsonl").read_text().splitlines()
    mapping = {m["id"]: m["pseudonym"] for m in map(json.loads, lines)}
    assert list(mapping) == IDS
    assert all(mapping[i] == pseudonym(i, salt) for i in IDS)  # same corpus and salt, same ids
    assert all(re.fullmatch(r"c-[0-9a-f]{16}", p) for p in mapping.values())
    corpus = (ingested / "data/raw/corpus.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in corpus]
    assert ids[:4] == [mapping[i] for i in IDS]
    assert all(i.startswith("dialogsum-") for i in ids[4:]) and len(ids) == 9
    # the split is the original ids' (the same whatever the salt), under their pseudonyms
    splits = json.loads((ingested / "data/splits.json").read_text())
    expected = split_ids([*IDS, *ids[4:]], 0.3, seed=13)
    assert splits == {k: [mapping.get(i, i) for i in v] for k, v in expected.items()}
    (canary,) = map(json.loads, (ingested / "data/raw/canaries.jsonl").read_text().splitlines())
    assert set(canary["conversation_ids"]) <= set(splits["train"])
    inventory = (ingested / "data/pi_inventory/gold.jsonl").read_text().splitlines()
    assert {json.loads(line)["conversation_id"] for line in inventory} <= set(ids)


def test_the_ingest_metrics_record_dialogsum_asked_for_with_its_licence(ingested: Path) -> None:
    """A user corpus with ``ingest.dialogsum.append: always``: what was mixed in, and under
    which licence, is in ``metrics/ingest.json`` for the model card."""
    metrics = json.loads((ingested / "metrics/ingest.json").read_text())
    assert metrics["by_dataset"] == {"dialogsum": 5, "main": 4}
    assert metrics["public_datasets"] == {"dialogsum": "CC BY-NC-SA 4.0, non-commercial use only"}


def test_two_ids_that_share_a_pseudonym_are_refused_by_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("components.ingest.pseudonyms.pseudonym", lambda i, s: "c-same")
    with pytest.raises(InputError, match=r"^mine.jsonl: records 1 and 2 got the same id") as err:
        IdPseudonyms.of(IDS, "salt", corpus_name="mine.jsonl")
    assert not any(i in str(err.value) for i in IDS)  # positions, never the ids


def test_a_pseudonym_is_keyed_and_stable() -> None:
    assert pseudonym(IDS[0], "a" * 32) == pseudonym(IDS[0], "a" * 32)
    assert pseudonym(IDS[0], "a" * 32) != pseudonym(IDS[0], "b" * 32)
    assert pseudonym(IDS[0], "a" * 32) != pseudonym(IDS[1], "a" * 32)
