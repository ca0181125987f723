"""docs/extending/recognizers.md, run as the page writes it: its YAML file and its module
with their registry line, in one detector with a recognizer left out; and each mistake the
page promises one clear error for."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import pytest

from components.anonymize.config import AnonymizeConfig, DlpConfig
from components.anonymize.recognizers import registry
from components.anonymize.recognizers.from_file import recognizers_from_file
from components.anonymize.recognizers.registry import RECOGNIZERS, Recognizers
from components.core.errors import InputError, ParamsError

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "extending" / "recognizers.md"
INFO_TYPES = AnonymizeConfig().info_types


def page_block(language: str, index: int = 0) -> str:
    blocks = re.findall(
        rf"^```{language}\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.M | re.S
    )
    return str(blocks[index])


def example_module() -> types.ModuleType:
    module = types.ModuleType("components.anonymize.recognizers.ticket_number")
    exec(compile(page_block("python"), str(PAGE), "exec"), module.__dict__)  # the docs' own code
    return module


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The default detector with the page's file, its module registered by its registry
    line, and the age recognizer left out."""
    from components.anonymize.calibration import Thresholds
    from components.anonymize.presidio_backend import PresidioDetector

    own = tmp_path_factory.mktemp("policy") / "recognizers.yaml"
    own.write_text(page_block("yaml"), encoding="utf-8")
    line = eval(
        page_block("python", 1).strip().rstrip(","),
        vars(example_module()) | {"Recognizers": Recognizers},
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "RECOGNIZERS", (*RECOGNIZERS, line))
        return PresidioDetector(
            AnonymizeConfig().spacy_model,
            INFO_TYPES,
            thresholds=Thresholds(0.35, origin="test"),
            own=recognizers_from_file(own, INFO_TYPES),
            disabled=["AgeRecognizer"],
        )


def found(detector: Any, text: str) -> set[tuple[str, str, str]]:
    return {(text[s.start : s.end], s.entity_type, s.source) for s in detector.detect([text])[0]}


def test_the_pages_file_and_module_find_what_they_promise(detector: Any) -> None:
    text = "my customer number is CU-123456 and ticket number four four two one, for Nightjar"
    spans = found(detector, text)
    assert ("CU-123456", "FINANCIAL_ACCOUNT_NUMBER", "CustomerNumberRecognizer") in spans
    assert ("four four two one", "GENERIC_ID", "TicketNumberRecognizer") in spans
    assert ("Nightjar", "ORGANIZATION_NAME", "ProjectNameRecognizer") in spans


def test_a_left_out_recognizer_finds_nothing(detector: Any, tmp_path: Path) -> None:
    assert not any(source == "AgeRecognizer" for *_, source in found(detector, "I am 42 years old"))
    assert "AgeRecognizer" in detector.recognizer_names  # still known: calibration may name it


def test_left_out_names_must_exist_and_the_name_gazetteer_stays() -> None:
    from components.anonymize.presidio_backend import _disable

    kept: list[str] = []
    known = {"AgeRecognizer", "NameGazetteerRecognizer"}
    fake = types.SimpleNamespace(remove_recognizer=kept.append)
    with pytest.raises(
        ParamsError, match=r"disabled_recognizers: 'AgeRecogniser': no such .*AgeRecognizer"
    ):
        _disable(fake, ["AgeRecogniser"], known=known)
    with pytest.raises(ParamsError, match="NameGazetteerRecognizer' cannot be left out"):
        _disable(fake, ["NameGazetteerRecognizer"], known=known)
    _disable(fake, ["AgeRecognizer"], known=known)
    assert kept == ["AgeRecognizer"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("recognizers: []", "a non-empty list under `recognizers:`"),
        ("recognizers: [{supported_entity: PERSON_NAME}]", r"recognizers\[0\]: expected a mapping with a `name`"),
        ("recognizers: [{name: X, supported_entity: SHOE_SIZE, deny_list: [a]}]", r"\(X\): supported_entity 'SHOE_SIZE' is not an info type"),
        ("recognizers: [{name: X, supported_entity: PERSON_NAME}]", r"\(X\): needs `patterns` or a `deny_list`"),
        ("recognizers: [{name: X, supported_entity: PERSON, patterns: [{name: p, score: 1}]}]", r"\(X\): "),
        ("recognizers: [unclosed", "not a YAML file"),
    ],
)  # fmt: skip
def test_each_mistake_in_the_file_is_one_error_naming_it(
    tmp_path: Path, text: str, *, error: str
) -> None:
    path = tmp_path / "recognizers.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(
        InputError, match=rf"{re.escape(str(path))} \(anonymize.recognizers_file\).*{error}"
    ):
        recognizers_from_file(path, INFO_TYPES)


def test_a_missing_file_is_named() -> None:
    with pytest.raises(InputError, match="nowhere.yaml .*no such file"):
        recognizers_from_file(Path("nowhere.yaml"), INFO_TYPES)


def test_google_dlp_alone_refuses_presidio_recognizer_settings() -> None:
    with pytest.raises(ParamsError, match="anonymize.recognizers_file"):
        AnonymizeConfig(backend="google_dlp", dlp=DlpConfig(project="p"), recognizers_file="x.yaml")
