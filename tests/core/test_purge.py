"""`veiltune purge-raw` erases the raw copies and nothing that is not veiltune's to erase: the
producer's signing key, and the user's own corpus, even where they lie inside data/raw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core import paths
from components.core.purge import purge_command
from components.core.signing import checkout_public_key, fingerprint, signing_key

KEY = str(paths.SIGNING_KEY)


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("VEILTUNE_SIGNING_KEY", raising=False)
    raw = tmp_path / "data" / "raw"
    raw.mkdir(parents=True)
    (raw / "corpus.jsonl").write_text(json.dumps({"id": "1", "text": "Hi Jo"}) + "\n")
    (raw / "salt").write_text("00" * 16 + "\n")
    (tmp_path / "data" / "anonymized").mkdir()
    (tmp_path / "data" / "anonymized" / "corpus.jsonl").write_text('{"id": "1", "text": "x"}\n')
    return tmp_path


def test_the_signing_key_outlives_an_erasure(checkout: Path) -> None:
    key = signing_key(KEY, checkout)
    listed = purge_command(checkout, False, source_corpus=None, signing_key=checkout / KEY)
    assert KEY not in json.dumps(listed)  # neither erased nor in data/raw to keep
    purge_command(checkout, True, source_corpus=None, signing_key=checkout / KEY)
    assert not (checkout / "data" / "raw").exists()
    kept = checkout_public_key(KEY, checkout)
    assert kept is not None and fingerprint(kept) == fingerprint(key.public_key())


def test_a_key_an_earlier_release_left_in_data_raw_is_moved_out_not_erased(
    checkout: Path,
) -> None:
    earlier = signing_key(KEY, checkout / "earlier")
    (checkout / "earlier" / KEY).rename(checkout / paths.LEGACY_SIGNING_KEY)
    report = purge_command(checkout, True, source_corpus=None, signing_key=checkout / KEY)
    assert "data/raw" in report["removed"]
    kept = checkout_public_key(KEY, checkout)
    assert kept is not None and fingerprint(kept) == fingerprint(earlier.public_key())


def test_what_veiltune_did_not_make_is_kept_inside_the_erased_folders(checkout: Path) -> None:
    raw = checkout / "data" / "raw"
    (raw / "mine.jsonl").write_text('{"id": "a", "text": "my own corpus"}\n')
    (raw / "keys").mkdir()
    (raw / "keys" / "other.pem").write_text("-----BEGIN PRIVATE KEY-----\nabc\n")
    listed = purge_command(checkout, False, source_corpus="data/raw/mine.jsonl")
    assert listed["would_keep"] == ["data/raw/mine.jsonl", "data/raw/keys/other.pem"]
    assert "data/raw/corpus.jsonl" in listed["would_remove"]
    assert "data/raw" not in listed["would_remove"]
    report = purge_command(checkout, True, source_corpus="data/raw/mine.jsonl")
    assert sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*")) == [
        "keys",
        "keys/other.pem",
        "mine.jsonl",
    ]
    assert "data/anonymized" in report["removed"]
    assert not (checkout / "data" / "anonymized").exists()
