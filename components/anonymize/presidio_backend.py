"""The embedded detection backend: Presidio's analyzer on a spaCy pipeline, NLP in batches."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

import spacy
from presidio_analyzer import RecognizerRegistry, RecognizerResult
from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine
from spacy.language import Language
from spacy.tokens import Doc

from components.anonymize.calibration import Thresholds
from components.anonymize.ner import ClassifiedSpan, NerEvidence
from components.anonymize.ner.aggregation import Reading, WordSupport
from components.anonymize.recognizers import transcript_recognizers
from components.anonymize.recognizers.name_gazetteer import NameGazetteerRecognizer
from components.anonymize.recognizers.registry import REQUIRED
from components.anonymize.recognizers.transformer_ner import (
    NerArtifacts,
    TransformerNerRecognizer,
)
from components.anonymize.recognizers.unfamiliar_words import lemma_vocabulary
from components.anonymize.spacy_models import spacy_model_source
from components.anonymize.spans import Span, resolve_overlaps, text_windows, trim_edges
from components.anonymize.taxonomy import presidio_entities_for, to_dlp
from components.core.errors import BackendError, ParamsError

logger = logging.getLogger(__name__)

RECOGNIZER_NAME_KEY = RecognizerResult.RECOGNIZER_NAME_KEY

LANGUAGE = "en"
# Presidio's context step is quadratic in a text's length: long texts go in windows.
WINDOW_CHARS = 5_000
WINDOW_OVERLAP = 200  # an entity cut by one window's edge is whole in the next

# spaCy labels mapped to Presidio entities. Unlike Presidio's default we keep ORG:
# the organisation a speaker belongs to identifies them.
_NER_MAPPING = {
    "PERSON": "PERSON",
    "PER": "PERSON",
    "NORP": "NRP",
    "FAC": "LOCATION",
    "LOC": "LOCATION",
    "GPE": "LOCATION",
    "ORG": "ORGANIZATION",
    "DATE": "DATE_TIME",
    "TIME": "DATE_TIME",
}
_NER_IGNORED = [
    "CARDINAL",
    "EVENT",
    "LANGUAGE",
    "LAW",
    "MONEY",
    "ORDINAL",
    "PERCENT",
    "PRODUCT",
    "QUANTITY",
    "WORK_OF_ART",
]


def use_offline_public_suffix_list() -> None:
    """Make tldextract (used by Presidio's email and URL checks) read its bundled snapshot
    instead of downloading the public suffix list."""
    import tldextract.tldextract as tld

    tld.TLD_EXTRACTOR = tld.TLDExtract(
        suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True
    )


class PresidioDetector:
    """Finds personal information with Presidio; reports DLP info types.

    Args:
        ner: the transformer NER, one more recognizer of the analyzer (None: none).
        corroborate: recognizers whose spans of the info types the NER finds are scored by
            the NER's support (``anonymize.ner.corroborate``; none without a NER).
        own: a user's recognizers beside the registered ones (``anonymize.recognizers_file``).
        disabled: recognizers left out by name (``anonymize.disabled_recognizers``).
    """

    def __init__(
        self,
        spacy_model: str,
        info_types: Sequence[str],
        *,
        thresholds: Thresholds,
        ner: TransformerNerRecognizer | None = None,
        own: Sequence[Any] = (),
        disabled: Sequence[str] = (),
        corroborate: Sequence[str] = (),
    ):
        use_offline_public_suffix_list()
        self._info_types = set(info_types)
        self.thresholds = thresholds
        self._ner = ner
        self._analyzer = _build_analyzer(spacy_model, [*own, *([ner] if ner else [])])
        # A calibration file may set a threshold for a recognizer this run leaves out.
        self.recognizer_names = frozenset(r.name for r in self._analyzer.registry.recognizers)
        _disable(self._analyzer.registry, disabled, known=self.recognizer_names)
        # Recognizers whose base score sits under the threshold so that only a context word
        # raises a match over it: calibration never lowers their threshold below the engine's.
        self.context_recognizer_names = frozenset(
            r.name for r in self._analyzer.registry.recognizers if getattr(r, "context", None)
        )
        thresholds.check_recognizers(self.recognizer_names)
        _check_names("anonymize.ner.corroborate", corroborate, known=self.recognizer_names)
        self._corroborated = frozenset(corroborate) if ner else frozenset()
        self._ner_types = (
            frozenset(to_dlp(e) for e in ner.supported_entities) if ner else frozenset()
        )
        self._names = next(
            r.completer
            for r in self._analyzer.registry.recognizers
            if isinstance(r, NameGazetteerRecognizer)
        )
        supported = set(self._analyzer.get_supported_entities(LANGUAGE))
        self._entities = [e for e in presidio_entities_for(list(info_types)) if e in supported]

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        """Spans of the selected info types in each text, in input order, kept by the
        operating point's thresholds."""
        candidates = self.candidates(texts, self.thresholds.floor, batch_size=batch_size)
        return [
            self.finish(text, found, thresholds=self.thresholds)
            for text, found in zip(texts, candidates, strict=True)
        ]

    def candidates(
        self, texts: Sequence[str], score_floor: float, *, batch_size: int = 64
    ) -> list[list[Span]]:
        """Every span the recognizers report with a score of ``score_floor`` or more, each
        with its recognizer, overlaps unresolved (what calibration weighs).

        Long texts are cut into overlapping windows (Presidio's context step is quadratic
        in a text's length); spans found in two windows are merged by ``finish``.
        """
        return self.candidates_and_evidence(texts, score_floor, batch_size=batch_size)[0]

    def candidates_and_evidence(
        self, texts: Sequence[str], score_floor: float, *, batch_size: int = 64
    ) -> tuple[list[list[Span]], list[NerEvidence]]:
        """``candidates``, and what the transformer NER saw in each text: its spans of every
        label and score, offsets into the text (none when the NER is off)."""
        windows = [
            (i, start, end)
            for i, text in enumerate(texts)
            for start, end in text_windows(text, WINDOW_CHARS, overlap=WINDOW_OVERLAP)
        ]
        pieces = [texts[i][start:end] for i, start, end in windows]
        nlp = self._analyzer.nlp_engine
        results: list[list[Span]] = [[] for _ in texts]
        # The NER reads every window of the batch at once; each window's spans reach its
        # recognizer with spaCy's artifacts.
        readings = self._ner.classifier.read(pieces) if self._ner else [Reading() for _ in pieces]
        seen: list[set[ClassifiedSpan]] = [set() for _ in texts]
        words: list[set[WordSupport]] = [set() for _ in texts]
        # spaCy keeps every new word's lexeme, string and tokenization for good; a memory
        # zone frees the batch's at its end (about 3.8 MB per 10,000 calls grown in one
        # process instead of 9.7: CHANGELOG.md, 2026-11-25). Nothing of spaCy's outlives the zone:
        # spans are offsets and plain strings.
        with nlp.nlp[LANGUAGE].memory_zone():
            analyzed = nlp.process_batch(pieces, LANGUAGE, batch_size=batch_size)
            for (i, offset, _), (piece, artifacts), reading in zip(
                windows, analyzed, readings, strict=True
            ):
                found = self._analyzer.analyze(
                    text=piece,
                    language=LANGUAGE,
                    entities=self._entities,
                    nlp_artifacts=(
                        NerArtifacts(artifacts, reading.spans) if self._ner else artifacts
                    ),
                    score_threshold=score_floor,
                )
                results[i] += [
                    replace(s, start=s.start + offset, end=s.end + offset)
                    for s in self._to_spans(piece, found)
                ]
                seen[i].update(
                    replace(s, start=s.start + offset, end=s.end + offset) for s in reading.spans
                )
                words[i].update(
                    replace(w, start=w.start + offset, end=w.end + offset) for w in reading.words
                )
        evidence = [
            NerEvidence(tuple(sorted(spans, key=_by_place)), tuple(sorted(read, key=_by_start)))
            for spans, read in zip(seen, words, strict=True)
        ]
        if self._corroborated:
            results = [
                [self._corroborate(span, found) for span in spans]
                for spans, found in zip(results, evidence, strict=True)
            ]
        return results, evidence

    def _corroborate(self, span: Span, evidence: NerEvidence) -> Span:
        """A span of a recognizer the NER corroborates, of an info type the NER finds, scored
        its score times the NER's support of its words (``anonymize.ner.corroborate``)."""
        if span.source not in self._corroborated or span.entity_type not in self._ner_types:
            return span
        return replace(span, score=span.score * evidence.support(span.start, span.end))

    def finish(self, text: str, candidates: list[Span], *, thresholds: Thresholds) -> list[Span]:
        """The candidates ``thresholds`` keep, overlaps resolved, names grown over their
        surnames."""
        kept = [s for s in candidates if thresholds.keep(s)]
        return self._names.complete(text, resolve_overlaps(kept)) if kept else kept

    def _to_spans(self, text: str, found: list[Any]) -> list[Span]:
        spans = []
        for result in found:
            info_type = to_dlp(result.entity_type)
            if info_type not in self._info_types:
                continue
            source = result.recognition_metadata.get(RECOGNIZER_NAME_KEY, "")
            start, end = result.start, result.end
            if source == NER_SOURCE:
                start, end = trim_ner_span(text, start, end=end)
            if end > start:
                spans.append(Span(start, end, info_type, result.score, source))
        return spans


def _by_place(span: ClassifiedSpan) -> tuple[int, int, str]:
    return span.start, span.end, span.label


def _by_start(word: WordSupport) -> tuple[int, int]:
    return word.start, word.end


NER_SOURCE = "SpacyRecognizer"
# What spaCy's small model takes into an entity on chat text that names nobody: a retweet
# mark, @handles and #hashtags (handles are USER_NAME by their own pattern), links, and the
# punctuation around them ("RT @_iiViolet :", "Robert ...."), and a leading article; then
# the edges every span has (``trim_edges``: an abbreviation keeps its period).
_NER_EDGE_BEFORE = re.compile(r"^(?:\s|RT\b|(?i:the|an?)\s|[@#][\w.]+|https?://\S+|[^\w\s])+")
_NER_EDGE_AFTER = re.compile(r"(?:\s|\s[@#][\w.]+|https?://\S+|[^\w\s.])+$")


def trim_ner_span(text: str, start: int, *, end: int) -> tuple[int, int]:
    """The NER entity without the chat debris at its edges (an empty range when nothing
    else is left)."""
    surface = text[start:end]
    head = _NER_EDGE_BEFORE.match(surface)
    cut_start = head.end() if head else 0
    tail = _NER_EDGE_AFTER.search(surface, cut_start)
    cut_end = tail.start() if tail else len(surface)
    if cut_end <= cut_start:
        return start, start
    return trim_edges(text, start + cut_start, end=start + cut_end)


# Only NER is needed from spaCy: its tagger, parser and lemmatizer would cost half the time.
# Presidio's context enhancer reads lemmas; lowercase forms stand in for them.
_SPACY_DISABLED = ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter"]


@Language.component("veiltune_lowercase_lemmas")
def _lowercase_lemmas(doc: Doc) -> Doc:
    for token in doc:
        token.lemma_ = token.lower_
    return doc


class _NerOnlySpacyEngine(SpacyNlpEngine):
    """Presidio's spaCy engine loading only what detection needs, and never downloading."""

    def load(self) -> None:
        pipelines: dict[str, Language] = {}
        for model in self.models:
            nlp = spacy.load(spacy_model_source(model["model_name"]), disable=_SPACY_DISABLED)
            nlp.add_pipe("veiltune_lowercase_lemmas", last=True)
            pipelines[model["lang_code"]] = nlp
        self.nlp = pipelines  # type: ignore[assignment]  # Presidio annotates it as None

    def pipeline(self, lang_code: str) -> Language:
        return self.nlp[lang_code]  # type: ignore[index]  # Presidio annotates it as None


class _NameOrderedRegistry(RecognizerRegistry):
    """Presidio's registry, its recognizers returned in name order.

    Presidio's own returns them from a set of recognizer objects, hashed by address, so
    their order changed from process to process. That order decides which of two
    recognizers finding the same span is credited with it (Presidio keeps the first of equal
    results): the same texts credited 33 characters to one recognizer or another from run to
    run, and two Dask workers disagreed with one process.
    """

    def get_recognizers(self, *args: Any, **kwargs: Any) -> list[Any]:
        found = super().get_recognizers(*args, **kwargs)
        return sorted(found, key=lambda r: (r.name, tuple(r.supported_entities)))


def _disable(registry: Any, names: Sequence[str], *, known: Collection[str]) -> None:
    """Remove the recognizers ``names`` names from ``registry``: an unknown name, or one the
    detector needs, is a params error naming them."""
    key = "anonymize.disabled_recognizers"
    _check_names(key, names, known=known)
    for name in names:
        if name in REQUIRED:
            raise ParamsError(f"{key}: {name!r} cannot be left out: it completes every name found")
        registry.remove_recognizer(name)


def _check_names(key: str, names: Sequence[str], *, known: Collection[str]) -> None:
    """A params error naming ``key`` and the first name that is no recognizer."""
    for name in names:
        if name not in known:
            known_names = ", ".join(sorted(known))
            raise ParamsError(f"{key}: {name!r}: no such recognizer; known: {known_names}")


def _build_analyzer(spacy_model: str, added: Sequence[Any]) -> Any:
    from presidio_analyzer import AnalyzerEngine

    ner_configuration = NerModelConfiguration(
        model_to_presidio_entity_mapping=_NER_MAPPING,
        labels_to_ignore=_NER_IGNORED,
        low_confidence_score_multiplier=0.4,
        low_score_entity_names=[],
    )
    nlp_engine = _NerOnlySpacyEngine(
        models=[{"lang_code": LANGUAGE, "model_name": spacy_model}],
        ner_model_configuration=ner_configuration,
    )
    try:
        nlp_engine.load()
    except (OSError, ValueError) as exc:
        raise BackendError(
            f"cannot load spaCy model {spacy_model!r} (anonymize.spacy_model): {exc}"
        ) from exc
    # Presidio warns once per recognizer of every other language it ships; only English runs.
    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)
    analyzer = AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=[LANGUAGE])
    default = analyzer.registry
    analyzer.registry = _NameOrderedRegistry(
        default.recognizers, default.global_regex_flags, default.supported_languages
    )
    vocabulary = lemma_vocabulary(nlp_engine.pipeline(LANGUAGE))
    if not vocabulary:
        logger.warning(
            "spaCy model %s has no lemma index: words outside the dictionary are not flagged",
            spacy_model,
        )
    for recognizer in [*transcript_recognizers(vocabulary), *added]:
        analyzer.registry.add_recognizer(recognizer)
    logger.info("Presidio analyzer ready with spaCy model %s", spacy_model)
    return analyzer
