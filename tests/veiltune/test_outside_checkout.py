"""The detection commands outside a checkout: with no params.yaml they use the built-in
defaults and the policy files shipped in the package; the pipeline stages still need one."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from components.anonymize import factory
from components.anonymize.config import AnonymizeConfig
from components.anonymize.engine import Detector
from components.core import paths
from components.core.corpus import conversation_from_record, load_corpus
from tests.conftest import REPO_ROOT
from veiltune.cli import main

# "bro" is in the shipped PERSON_NAME exclusion list; the detector alone takes it for a name.
CALL = "Hey bro, Maria Gonzalez here, my number is (212) 736-5000."


@pytest.fixture
def packaged_detector(detector: Detector, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The session's detector in place of a fresh one (spaCy loads in ~12 s), once the
    thresholds the command asks for are read; returns the base folders it was asked for."""
    asked: list[Path] = []

    def build(
        config: AnonymizeConfig, base_dir: Path = Path(), *, base_model: Path | None = None
    ) -> Detector:
        factory.detection_thresholds(config, base_dir)  # the calibration file resolves
        asked.append(base_dir)
        return detector

    monkeypatch.setattr(factory, "build_detector", build)
    return asked


def test_anonymize_in_an_empty_folder_uses_the_defaults_and_the_shipped_policy(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    caplog: pytest.LogCaptureFixture,
    packaged_detector: list[Path],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("x.jsonl").write_text(json.dumps({"id": "c1", "text": CALL}) + "\n", encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="components.stages"):
        assert main(["anonymize", "--input", "x.jsonl", "--output", "y.jsonl"]) == 0
    (record,) = load_corpus(Path("y.jsonl"))
    # the default replacement: surrogates, the excluded "bro" kept
    said = re.fullmatch(
        r"Hey bro, (\w+) (\w+) here, my number is (.+)\.", record.to_record()["text"]
    )
    assert said and said[1] != "Maria" and said[3] != "(212) 736-5000"
    assert packaged_detector == [paths.INSTALL_ROOT]
    assert f"the policy files in {paths.PACKAGED_POLICY}" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl", "y.jsonl"]


def test_the_kept_word_is_the_shipped_exclusion_lists_doing() -> None:
    # the NER's corroboration alone drops the gazetteer's "bro" too: without it, the
    # exclusion list is all that keeps the word in clear
    shipped = (paths.PACKAGED_POLICY / "exclusions" / "person_name.txt").read_text()
    assert "bro" in shipped.splitlines()
    default = AnonymizeConfig()
    uncorroborated = dataclasses.replace(
        default, ner=dataclasses.replace(default.ner, corroborate=[])
    )
    detector = factory.build_detector(uncorroborated, paths.INSTALL_ROOT)
    without = dataclasses.replace(AnonymizeConfig(), exclusions={})
    found = detected(without, detector)
    assert ("bro", "PERSON_NAME") in found  # what the exclusion list keeps in clear
    assert ("bro", "PERSON_NAME") not in detected(AnonymizeConfig(), detector)


def detected(config: AnonymizeConfig, detector: Detector) -> set[tuple[str, str]]:
    conversation = conversation_from_record({"id": "c1", "text": CALL}, "c1")
    policy = factory.anonymization_policy(config, paths.INSTALL_ROOT)
    (record,) = factory.detection_records([conversation], detector, policy=policy, batch_size=1)
    spans: list[dict[str, Any]] = record["spans"]
    return {(CALL[s["start"] : s["end"]], s["entity_type"]) for s in spans}


def test_detect_in_an_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, packaged_detector: list[Path]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("x.jsonl").write_text(json.dumps({"id": "c1", "text": CALL}) + "\n", encoding="utf-8")
    assert main(["detect", "--input", "x.jsonl", "--output", "spans.jsonl"]) == 0
    (record,) = [json.loads(line) for line in Path("spans.jsonl").read_text().splitlines()]
    found = {CALL[s["start"] : s["end"]]: s["entity_type"] for s in record["spans"]}
    assert found == {"Maria Gonzalez": "PERSON_NAME", "(212) 736-5000": "PHONE_NUMBER"}


@pytest.mark.parametrize("command", ["anonymize", "detect", "evaluate-detection"])
def test_a_params_file_named_but_missing_is_an_error_naming_it(
    command: str,
    tmp_path: Path,
    *,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("x.jsonl").write_text(json.dumps({"id": "c1", "text": CALL}) + "\n", encoding="utf-8")
    inputs = (
        ["--dataset", "embedded"] if command == "evaluate-detection" else ["--input", "x.jsonl"]
    )
    argv = [command, "--params", "mine.yaml", *inputs, "--output", "y.json"]
    assert main(argv) == 1
    assert "mine.yaml: no such params file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl"]


@pytest.mark.parametrize("argv", [["anonymize"], ["ingest"], ["review", "export"]])
def test_the_pipeline_stages_still_need_params_yaml(
    argv: list[str],
    tmp_path: Path,
    *,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    assert "params.yaml: no such params file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_every_policy_file_ships_as_package_data() -> None:
    """Each file of the one policy folder matches pyproject's package-data for veiltune, so
    a plain ``pip install`` carries it."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["veiltune"]
    package = REPO_ROOT / "veiltune"
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    present = {p for p in (package / "policy").rglob("*") if p.is_file()}
    assert present and present == {p for p in shipped if package / "policy" in p.parents}
    assert package / "policy" == paths.PACKAGED_POLICY
    # and the shipped NER's adapter (its ONNX build, onnx-*/, is made where it is installed)
    adapter = {p for p in (package / "models").rglob("*") if p.is_file() and "onnx-" not in str(p)}
    assert adapter and adapter == {p for p in shipped if package / "models" in p.parents}
    assert not (REPO_ROOT / "policy").exists()  # one copy only


def test_the_generators_dialogue_scripts_ship_as_package_data() -> None:
    """The embedded corpus's scripts are data files beside their reader: pyproject's
    package-data for their package matches each one, so an installed veiltune generates."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["components.ingest.generate"]
    package = REPO_ROOT / "components" / "ingest" / "generate"
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    data = {p for p in package.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")}
    assert data and data == shipped
